/* The tree-ensemble traversal (_ctrees.c) without Python, for AddressSanitizer + UBSan and
 * ThreadSanitizer: tests/test_sanitizers.py builds it with every C source of the package and
 * runs it. A forest of three trees (every comparison mode, a NaN rule, leaves of several
 * targets) over rows with NaNs, float32 and float64, each aggregation, the fast walk (LANES
 * rows at once) and the general one, against a plain walk written here.
 *
 *   forest_check [ROUNDS]   (default 20) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/mini_infer_ml_plugins/ops/_ctrees.h" /* the library's layouts, entry points */

enum { ROWS = 203, FEATURES = 3, TARGETS = 2, TREES = 3 };

static int failures;

/* mode, nan-goes-true, feature, threshold, true child (leaf: first weight), false child
 * (leaf: weights) */
static const struct {
    int mode, mt, feat;
    double thr;
    int tc, fc;
} tree[] = {
    /* tree 0: nodes 0-4 */
    {1, 0, 0, 0.0, 1, 2}, {0, 0, 0, 0, 0, 1}, {4, 1, 1, 0.1, 3, 4}, {0, 0, 0, 0, 1, 2},
    {0, 0, 0, 0, 3, 1},
    /* tree 1: nodes 5-9 (every mode but LEQ, for the general walk) */
    {2, 0, 2, -0.2, 6, 7}, {0, 0, 0, 0, 4, 1}, {3, 1, 0, 0.3, 8, 9}, {0, 0, 0, 0, 5, 2},
    {5, 0, 1, 0.0, 1, 1}, /* EQ: x == 0 rarely: both children the same leaf-ish chain */
    /* tree 2: nodes 10-12 */
    {6, 0, 2, 0.25, 11, 12}, {0, 0, 0, 0, 7, 1}, {0, 0, 0, 0, 8, 1},
};
static const int32_t roots[TREES] = {0, 5, 10};
static const int32_t wt_target[] = {0, 0, 1, 1, 0, 1, 0, 1, 0};
static const double wt_value[] = {0.5, -1.0, 2.0, 0.25, -0.75, 1.5, 3.0, -2.0, 0.125};

static int goes_true(int mode, int mt, double v, double t) {
    int go = mode == 1 ? v <= t : mode == 2 ? v < t : mode == 3 ? v >= t : mode == 4 ? v > t
           : mode == 5 ? v == t : v != t;
    return go || (mt && isnan(v));
}

/* the plain walk: scores and has of one row */
static void walk(const double *x, int agg, int fast, double *s, uint8_t *h) {
    memset(h, 0, TARGETS);
    for (int k = 0; k < TARGETS; k++) s[k] = 0;
    for (int t = 0; t < TREES; t++) {
        int n = roots[t];
        while (tree[n].mode) {
            int go = fast ? x[tree[n].feat] <= tree[n].thr
                          : goes_true(tree[n].mode, tree[n].mt, x[tree[n].feat], tree[n].thr);
            n = go ? tree[n].tc : tree[n].fc;
        }
        for (int w = tree[n].tc; w < tree[n].tc + tree[n].fc; w++) {
            int k = wt_target[w];
            double v = wt_value[w];
            if (agg == 0) s[k] += v;
            else if (!h[k] || (agg == 1 ? v < s[k] : v > s[k])) s[k] = v;
            h[k] = 1;
        }
    }
}

#define CHECK_FOREST(T, NODE, FN, TOL)                                                      \
    do {                                                                                     \
        enum { N = sizeof tree / sizeof tree[0] };                                           \
        NODE nodes[N];                                                                       \
        memset(nodes, 0, sizeof nodes);                                                      \
        for (int i = 0; i < N; i++)                                                          \
            nodes[i] = (NODE){(T)tree[i].thr, tree[i].feat, tree[i].tc, tree[i].fc,          \
                              (uint8_t)tree[i].mode, (uint8_t)tree[i].mt, {0, 0}};           \
        T *xs = malloc(sizeof(T) * ROWS * FEATURES), *wv = malloc(sizeof(T) * 9);           \
        T *scores = malloc(sizeof(T) * ROWS * TARGETS);                                      \
        uint8_t *has = malloc(ROWS * TARGETS);                                               \
        for (int i = 0; i < ROWS * FEATURES; i++) xs[i] = (T)x[i];                           \
        for (int i = 0; i < 9; i++) wv[i] = (T)wt_value[i];                                  \
        for (int agg = 0; agg <= 2; agg++)                                                   \
            for (int fast = 0; fast <= 1; fast++) {                                          \
                if (FN(xs, ROWS, FEATURES, nodes, roots, TREES, wt_target, wv, TARGETS, agg,  \
                       fast, scores, has) != 0) {                                            \
                    fprintf(stderr, #FN " refused\n");                                       \
                    failures++;                                                              \
                    continue;                                                                \
                }                                                                            \
                long wrong = 0;                                                              \
                for (int r = 0; r < ROWS; r++) {                                             \
                    double xr[FEATURES], s[TARGETS];                                         \
                    uint8_t h[TARGETS];                                                      \
                    for (int f = 0; f < FEATURES; f++) xr[f] = (double)xs[r * FEATURES + f];  \
                    walk(xr, agg, fast, s, h);                                               \
                    for (int k = 0; k < TARGETS; k++)                                        \
                        wrong += has[r * TARGETS + k] != h[k] ||                             \
                                 fabs((double)scores[r * TARGETS + k] - s[k]) > TOL;         \
                }                                                                            \
                if (wrong) {                                                                 \
                    fprintf(stderr, #FN " agg %d fast %d: %ld values wrong\n", agg, fast,    \
                            wrong);                                                          \
                    failures++;                                                              \
                }                                                                            \
            }                                                                                \
        free(xs), free(wv), free(scores), free(has);                                         \
    } while (0)

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    double *x = malloc(sizeof(double) * ROWS * FEATURES);
    unsigned seed = 1;
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < ROWS * FEATURES; i++) {
            seed = seed * 1103515245u + 12345u;
            x[i] = ((seed >> 8) & 0xFFFF) / 65536.0 - 0.5;
            if (i % 17 == 3) x[i] = NAN; /* the NaN rules (the fast walk: NaN <= t false) */
            if (i % 23 == 5) x[i] = 0.0; /* EQ's equal case */
        }
        CHECK_FOREST(float, node_f32, mi_forest_f32, 1e-5);
        CHECK_FOREST(double, node_f64, mi_forest_f64, 1e-12);
    }
    free(x);
    printf("%s: %d failures\n", failures ? "FAILED" : "ok", failures);
    return failures != 0;
}
