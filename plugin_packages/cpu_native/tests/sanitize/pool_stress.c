/* The thread pool and the kernels on it, without Python, for ThreadSanitizer,
 * AddressSanitizer (with its leak check) and UBSan, and valgrind: tests/sanitizers.py (at
 * the repository root) builds it with every C source of the library; the test suite runs
 * it for one round under ASan + UBSan and TSan (tests/test_sanitizers.py).
 *
 *   pool_stress [ROUNDS]   (default 20 rounds per caller)
 *
 * Each round checks its results against plain loops: products split between 4 threads, from
 * two calling threads at once (one of them then runs alone; both exit, and their scratch
 * with them), pooling and depthwise convolutions that give each worker scratch of its own,
 * batched products with their epilogue, every other kernel family (families.c), on each
 * instruction set the CPU has; workers that cannot start (the pool runs with those it has,
 * then starts the rest when asked again), and scratch that cannot be allocated (the caller
 * computes alone). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

int mi_pool_started(void);
int mi_pool_start_error(void);
void mi_pool_set_adaptive(int mode);
int mi_pool_stats(long *out, int n);
void mi_pool_reset_stats(void);
void mi_act_set_isa(int most);
int mi_act_isa(void);

atomic_int failures;
static int rounds = 20;

/* C = A . B on the pool, against the plain sum */
static void product(unsigned seed) {
    enum { M = 40, N = 300, K = 64 };
    float *a = malloc(sizeof(float) * M * K), *ap = malloc(sizeof(float) * M * K);
    float *b = malloc(sizeof(float) * K * N), *c = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * K; i++) a[i] = frand(&seed);
    for (int i = 0; i < K * N; i++) b[i] = frand(&seed);
    mi_gemm_pack_args pack = {a, ap, M, K, K};
    CHECK(mi_gemm_pack_f32(&pack) == MI_OK, "pack refused");
    mi_gemm_args g = {ap, b, c, NULL, NULL, M, N, K, N, N, 0, -INFINITY, INFINITY};
    CHECK(mi_gemm_f32(&g) == MI_OK, "gemm refused");
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double)a[i * K + k] * b[k * N + j];
            worst = fmax(worst, fabs(s - c[i * N + j]));
        }
    CHECK(worst < 1e-4, "product off by %g", worst);
    free(a), free(ap), free(b), free(c);
}

/* 2x2 max pooling of 32 planes of 40x40 (over PARALLEL_MIN: on the pool, scratch per worker) */
static void pooling(unsigned seed) {
    enum { P = 32, H = 40, O = 20 };
    float *x = malloc(sizeof(float) * P * H * H), *y = malloc(sizeof(float) * P * O * O);
    float *work = malloc(sizeof(float) * (2 * H * H + 2 * O));
    for (int i = 0; i < P * H * H; i++) x[i] = frand(&seed);
    mi_pool2d_args p = {x, y, work, P, H, H, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, O, O, 0, 0};
    CHECK(mi_pool2d_f32(&p) == MI_OK, "pool refused");
    for (int q = 0; q < P; q++)
        for (int r = 0; r < O; r++)
            for (int o = 0; o < O; o++) {
                const float *s = x + (q * H + 2 * r) * H + 2 * o;
                float want = fmaxf(fmaxf(s[0], s[1]), fmaxf(s[H], s[H + 1]));
                CHECK(y[(q * O + r) * O + o] == want, "pool (%d, %d, %d)", q, r, o);
            }
    free(x), free(y), free(work);
}

/* depthwise 3x3, pads 1, of 2 x 16 planes of 40x40, against the direct sum */
static void depthwise(unsigned seed) {
    enum { N = 2, C = 16, H = 40, HP = H + 2 };
    float *x = malloc(sizeof(float) * N * C * H * H), *w = malloc(sizeof(float) * C * 9);
    float *y = malloc(sizeof(float) * N * C * H * H);
    float *work = malloc(sizeof(float) * (HP * HP + H * HP));
    for (int i = 0; i < N * C * H * H; i++) x[i] = frand(&seed);
    for (int i = 0; i < C * 9; i++) w[i] = frand(&seed);
    mi_dwconv2d_args d = {x, w, NULL, NULL, y, work, N, C, H, H, 3, 3, 1, 1, 1, 1, 1, 1,
                          H, H, HP, HP, -INFINITY, INFINITY};
    CHECK(mi_dwconv2d_f32(&d) == MI_OK, "depthwise refused");
    double worst = 0;
    for (int p = 0; p < N * C; p++)
        for (int r = 0; r < H; r++)
            for (int o = 0; o < H; o++) {
                double s = 0;
                for (int t = 0; t < 9; t++) {
                    int i = r + t / 3 - 1, j = o + t % 3 - 1;
                    if (i >= 0 && i < H && j >= 0 && j < H)
                        s += (double)w[(p % C) * 9 + t] * x[(p * H + i) * H + j];
                }
                worst = fmax(worst, fabs(s - y[(p * H + r) * H + o]));
            }
    CHECK(worst < 1e-4, "depthwise off by %g", worst);
    free(x), free(w), free(y), free(work);
}

/* a batch of 3 products C_q = clamp(0.5 * A_q . B + cbias + R_q, -1, 1), A read through its
 * transpose (strides 1, M), B packed in 48-column panels, each kernel this CPU has (the
 * ISA is a process-wide setting: the callers may see each other's; every one is right) */
static void matmul(unsigned seed) {
    enum { Q = 3, M = 37, N = 101, K = 29 };
    float *a = malloc(sizeof(float) * Q * K * M), *b = malloc(sizeof(float) * K * N);
    float *bp = malloc(sizeof(float) * K * N), *c = malloc(sizeof(float) * Q * M * N);
    float *r = malloc(sizeof(float) * Q * M * N), *cb = malloc(sizeof(float) * N);
    for (int i = 0; i < Q * K * M; i++) a[i] = frand(&seed);
    for (int i = 0; i < K * N; i++) b[i] = frand(&seed);
    for (int i = 0; i < Q * M * N; i++) r[i] = frand(&seed);
    for (int i = 0; i < N; i++) cb[i] = frand(&seed);
    mi_gemm_pack_b_args pack = {b, bp, K, N, N, 1};
    CHECK(mi_gemm_pack_b_f32(&pack) == MI_OK, "pack_b refused");
    mi_matmul_args g = {.a = a, .b = bp, .c = c, .cbias = cb, .res = r, .m = M, .n = N, .k = K,
                        .a_rs = 1, .a_ks = M, .ldc = N, .ldr = N, .batch0 = 1, .batch1 = Q,
                        .a_s1 = K * M, .c_s1 = M * N, .r_s1 = M * N, .b_packed = 1,
                        .alpha = 0.5f, .lo = -1.0f, .hi = 1.0f};
    CHECK(mi_matmul_f32(&g) == MI_OK, "matmul refused");
    double worst = 0;
    for (int q = 0; q < Q; q++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int k = 0; k < K; k++) s += (double)a[q * K * M + k * M + i] * b[k * N + j];
                s = 0.5 * s + cb[j] + r[(q * M + i) * N + j];
                s = fmin(1.0, fmax(-1.0, s));
                worst = fmax(worst, fabs(s - c[(q * M + i) * N + j]));
            }
    CHECK(worst < 1e-4, "matmul off by %g", worst);
    free(a), free(b), free(bp), free(c), free(r), free(cb);
}

static void *caller(void *arg) {
    unsigned seed = (unsigned)(size_t)arg;
    for (int i = 0; i < rounds; i++) {
        product(seed + i);
        pooling(seed + i);
        depthwise(seed + i);
        matmul(seed + i);
        families(seed + i);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) rounds = atoi(argv[1]);
    /* one worker may start, the next fails: the pool runs with 2 threads of the 4 asked */
    mi_pool_fail_start(1);
    mi_pool_set_threads(4);
    caller((void *)1);
    CHECK(mi_pool_started() == 2, "started %d, wanted 2", mi_pool_started());
    CHECK(mi_pool_get_threads() == 2, "threads %d, wanted 2", mi_pool_get_threads());
    CHECK(mi_pool_start_error() != 0, "no start error reported");

    /* asked again: the rest start; two callers at once (one runs its jobs alone), threads
     * that then exit: the scratch they took for their parts goes with them (LeakSanitizer) */
    mi_pool_fail_start(-1);
    mi_pool_set_threads(4);
    pthread_t t[2];
    for (size_t i = 0; i < 2; i++) pthread_create(&t[i], NULL, caller, (void *)(100 * i + 7));
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    CHECK(mi_pool_started() == 4, "started %d, wanted 4", mi_pool_started());

    /* a contended time throughout: the workers sleep after every job, every job wakes them;
     * the counters, read while they are written, count every parallel job's chunks */
    mi_pool_set_adaptive(3);
    mi_pool_reset_stats();
    caller((void *)5);
    long st[9];
    CHECK(mi_pool_stats(st, 9) == 9, "mi_pool_stats: not 9 figures");
    CHECK(st[0] > 0 && st[5] <= st[4], "stats: %ld parallel jobs, %ld of %ld chunks", st[0],
          st[5], st[4]);
    mi_pool_set_adaptive(1);

    /* workers without scratch: the caller computes the whole job alone */
    mi_pool_fail_scratch(1);
    caller((void *)3);
    mi_pool_fail_scratch(0);

    /* every GEMM kernel and every copy of the activations this CPU has: plain C, AVX2,
     * AVX-512 */
    for (int isa = 0; isa <= 2; isa++) {
        mi_act_set_isa(isa);
        if (mi_gemm_set_isa(isa) == isa && mi_act_isa() == isa)
            caller((void *)(size_t)(11 + isa));
    }
    mi_gemm_set_isa(-1);
    mi_act_set_isa(-1);

    int failed = atomic_load(&failures);
    printf("%s: %d failures\n", failed ? "FAILED" : "ok", failed);
    return failed != 0;
}
