/*
 * The extension module mini_infer_ml_plugins.ops._ctrees: tree-ensemble traversal in plain C,
 * reached through ctypes (_trees.py). The module object exists only so that setuptools builds
 * and installs the library; it has no Python functions.
 *
 *   mi_forest_f32 / mi_forest_f64: for rows [0, n_rows) of X (row stride `stride` elements),
 *   walk every tree from its root to a leaf and fold the leaf's weights into that row's
 *   scores (n_targets per row): SUM adds, MIN/MAX keep the extreme; `has` marks each target
 *   that received a weight. Rows are taken in blocks of 64, every tree over the block, so that
 *   a tree's upper nodes stay in cache; in the fast case (every branch x <= t, no NaN rule)
 *   LANES rows of a block walk a tree together, so that their node loads overlap.
 *
 * A node is a branch (mode 1..6: x <= t, x < t, x >= t, x > t, x == t, x != t; a NaN x takes
 * the true branch where `mt` says so) whose children are node indices `tc` (true) and `fc`
 * (false), or a leaf (mode 0) whose weights are wt_target[tc .. tc + fc) / wt_value[...].
 * The caller (_trees.py) has checked every index: children, features below `stride`, weights
 * and targets in range, and no cycles, so the loops here trust them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_ctrees.h"

enum { LEAF = 0, LEQ = 1, LT = 2, GTE = 3, GT = 4, EQ = 5, NEQ = 6 };
enum { AGG_SUM = 0, AGG_MIN = 1, AGG_MAX = 2 };

#define BLOCK 64
#define LANES 8

#define DEFINE_FOREST(SUFFIX, T, NODE)                                                        \
    static inline const NODE *walk_##SUFFIX(const NODE *nodes, const NODE *n, const T *x,   \
                                            int fast) {                                     \
        if (fast) {                                                                         \
            while (n->mode) n = nodes + (x[n->feat] <= n->thr ? n->tc : n->fc);            \
            return n;                                                                       \
        }                                                                                   \
        while (n->mode) {                                                                   \
            T v = x[n->feat];                                                               \
            int go;                                                                         \
            switch (n->mode) {                                                              \
                case LEQ: go = v <= n->thr; break;                                          \
                case LT: go = v < n->thr; break;                                            \
                case GTE: go = v >= n->thr; break;                                          \
                case GT: go = v > n->thr; break;                                            \
                case EQ: go = v == n->thr; break;                                           \
                default: go = v != n->thr; break;                                           \
            }                                                                               \
            if (!go && n->mt && isnan(v)) go = 1;                                           \
            n = nodes + (go ? n->tc : n->fc);                                               \
        }                                                                                   \
        return n;                                                                           \
    }                                                                                       \
                                                                                            \
    /* the fast loop for LANES rows at once: their walks are independent, so the loads of  \
     * one row's next node overlap with the others' instead of waiting in a chain */        \
    static inline void walk_lanes_##SUFFIX(const NODE *nodes, const NODE *root, const T *x, \
                                           int64_t stride, const NODE **out) {             \
        const NODE *n[LANES];                                                               \
        for (int i = 0; i < LANES; ++i) n[i] = root;                                        \
        for (;;) {                                                                          \
            int moving = 0;                                                                 \
            for (int i = 0; i < LANES; ++i) {                                               \
                const NODE *c = n[i];                                                       \
                const int32_t next = x[i * stride + c->feat] <= c->thr ? c->tc : c->fc;   \
                n[i] = c->mode ? nodes + next : c;                                          \
                moving |= c->mode;                                                          \
            }                                                                               \
            if (!moving) break;                                                             \
        }                                                                                   \
        for (int i = 0; i < LANES; ++i) out[i] = n[i];                                      \
    }                                                                                       \
                                                                                            \
    int mi_forest_##SUFFIX(const T *X, int64_t n_rows, int64_t stride, const NODE *nodes,   \
                           const int32_t *roots, int64_t n_trees, const int32_t *wt_target, \
                           const T *wt_value, int64_t n_targets, int32_t agg, int32_t fast, \
                           T *scores, uint8_t *has) {                                       \
        if (n_rows < 0 || n_trees < 0 || n_targets < 1) return -1;                          \
        memset(scores, 0, (size_t)(n_rows * n_targets) * sizeof(T));                        \
        memset(has, 0, (size_t)(n_rows * n_targets));                                       \
        for (int64_t r0 = 0; r0 < n_rows; r0 += BLOCK) {                                    \
            int64_t r1 = r0 + BLOCK < n_rows ? r0 + BLOCK : n_rows;                         \
            for (int64_t t = 0; t < n_trees; ++t) {                                         \
                const NODE *root = nodes + roots[t];                                        \
                const NODE *lane[LANES];                                                    \
                int64_t lanes_end = fast && stride > 0 ? r0 + (r1 - r0) / LANES * LANES : r0;\
                for (int64_t r = r0; r < r1; ++r) {                                         \
                    const NODE *leaf;                                                       \
                    if (r < lanes_end) {                                                    \
                        if ((r - r0) % LANES == 0)                                          \
                            walk_lanes_##SUFFIX(nodes, root, X + r * stride, stride, lane); \
                        leaf = lane[(r - r0) % LANES];                                      \
                    } else {                                                                \
                        leaf = walk_##SUFFIX(nodes, root, X + r * stride, fast);            \
                    }                                                                       \
                    T *s = scores + r * n_targets;                                          \
                    uint8_t *h = has + r * n_targets;                                       \
                    const int32_t end = leaf->tc + leaf->fc;                                \
                    for (int32_t w = leaf->tc; w < end; ++w) {                              \
                        const int32_t k = wt_target[w];                                     \
                        const T v = wt_value[w];                                            \
                        if (agg == AGG_SUM) s[k] += v;                                      \
                        else if (!h[k] || (agg == AGG_MIN ? v < s[k] : v > s[k])) s[k] = v; \
                        h[k] = 1;                                                           \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        return 0;                                                                           \
    }

DEFINE_FOREST(f32, float, node_f32)
DEFINE_FOREST(f64, double, node_f64)

/* the size of each node layout, so that the Python side can check it matches its own */
int mi_forest_node_sizes(int64_t *out) {
    out[0] = (int64_t)sizeof(node_f32);
    out[1] = (int64_t)sizeof(node_f64);
    return 0;
}

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ctrees",
    "Tree-ensemble traversal (plain C functions reached through ctypes).", -1, NULL,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ctrees(void) { return PyModule_Create(&module); }
