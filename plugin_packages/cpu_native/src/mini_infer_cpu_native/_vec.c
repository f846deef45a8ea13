/* Kernels bound by memory for products of a few rows and squeeze-and-excitation blocks.
 *
 * mi_gemv_f32: C (m x n) = clamp(alpha * A (m x k) . B (k x n) + bias[i] + cbias[j] + R, lo,
 * hi) for a few rows m (a classifier head at batch 1, a decoder's step), bound by memory:
 * the weights are read once per run. The GEMM's one-row tile (_gemm.c) reads each 24-column
 * tile of B as one stream, k after k; here k is cut in four segments read side by side,
 * each with its own accumulators (12 ymm for one row), B prefetched a few rows ahead in each:
 * a 2-core Zen VM's core drew ~3 GB/s from one stream and ~7 from four, and the classifier
 * shapes (440-2048 x 1000-1280, weights from memory) ran 1.1-1.5x faster than on the GEMM's
 * tile. Two rows share each pass over a tile (the next two read it from cache; the plugins
 * take the GEMM from 3 rows: as fast there); the tiles are shared by the pool's threads
 * when B is large. B is packed (mi_gemm_pack_b_f32's panels of `panel` columns: the weights,
 * packed by the build) or read in place (rows ldb floats apart). Each output is one thread's
 * sum, the segments' partial sums added in order: the thread count does not change it.
 *
 * mi_row_mean_f32: y[r] = mean of row r (ReduceMean / GlobalAveragePool over the trailing
 * axes: rows N*C, columns H*W). mi_row_scale_f32: y[r, :] = x[r, :] * s[r] (the SE block's
 * channel scale x[N, C, H, W] * s[N, C, 1, 1]). mi_row_logsumexp_f32: y[r] = log(sum(exp(x[r,
 * :]))) (ReduceLogSumExp over the trailing axes: naive Bayes' normalizer of one row of class
 * scores), plain C.
 *
 * AVX2 + FMA where the CPU has it and the GEMM's kernels run AVX2 or better (mi_gemm_isa:
 * tests switch to the plain C loops with it), plain C otherwise. */
#include "_args.h"
#include "_common.h"
#include "_pool.h"

int mi_gemm_isa(void); /* _gemm.c: 0 plain C, 1 AVX2, 2 AVX-512 */

#define TILE 24
#define MAX_GROUP 2
/* rows of B prefetched ahead in each stream: with four streams, 2-4 rows ran 1.1-1.5x
 * faster than the GEMM's one-row tile on a 2-core Zen VM (weights from memory), 8 about as
 * fast as it, 16 slower */
#ifndef GEMV_AHEAD
#define GEMV_AHEAD 4
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2,fma")))
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

/* a column tile's operands: `rows` rows of A, B's tile (k rows ldb apart, `cols` columns) */
typedef struct {
    const float *a, *b;
    float *c;
    const float *bias, *cbias, *res;
    long rows, cols, k, a_rs, a_ks, ldb, ldc, ldr;
    float alpha, lo, hi;
} vtile;

static float finish(const vtile *t, float s, long r, long j) {
    s = s * t->alpha + (t->bias ? t->bias[r] : 0.0f) + (t->cbias ? t->cbias[j] : 0.0f) +
        (t->res ? t->res[r * t->ldr + j] : 0.0f);
    s = s < t->lo ? t->lo : s;
    return s > t->hi ? t->hi : s;
}

static void tile_plain(const vtile *t) {
    for (long r = 0; r < t->rows; r++)
        for (long j = 0; j < t->cols; j++) {
            float s = 0.0f;
            for (long kk = 0; kk < t->k; kk++)
                s += t->a[r * t->a_rs + kk * t->a_ks] * t->b[kk * t->ldb + j];
            t->c[r * t->ldc + j] = finish(t, s, r, j);
        }
}

#if HAVE_X86
/* ROWS rows x NV vectors, k in U streams (U sets of accumulators, summed at the end);
 * the last vector's lanes `last` (all of them for a full tile) */
#define GEMV(ROWS, NV, U)                                                                    \
AVX2 static void gemv_##ROWS##_##NV(const vtile *t, __m256i last) {                           \
    const long ldb = t->ldb, rs = t->a_rs, ks = t->a_ks, k = t->k;                            \
    const float *restrict a = t->a, *restrict b = t->b;                                       \
    __m256 acc[U][ROWS][NV];                                                                  \
    _Pragma("GCC unroll 4") for (int u = 0; u < U; u++)                                       \
        _Pragma("GCC unroll 4") for (int r = 0; r < ROWS; r++)                                \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++)                              \
                acc[u][r][v] = _mm256_setzero_ps();                                           \
    /* U streams: k in U segments of kseg rows, each its own accumulators (a VM's core drew  \
     * 3 GB/s from one stream, 7 from four) */                                                \
    const long kseg = k / U;                                                                  \
    for (long kk = 0; kk < kseg; kk++) {                                                      \
        _Pragma("GCC unroll 4") for (int u = 0; u < U; u++) {                                 \
            const long row = u * kseg + kk;                                                   \
            const float *bk = b + row * ldb;                                                  \
            __m256 bv[NV];                                                                    \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++)                              \
                bv[v] = v == NV - 1 ? _mm256_maskload_ps(bk + 8 * v, last)                    \
                                    : _mm256_loadu_ps(bk + 8 * v);                            \
            _Pragma("GCC unroll 4") for (int r = 0; r < ROWS; r++) {                          \
                __m256 av = _mm256_broadcast_ss(a + r * rs + row * ks);                       \
                _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++)                          \
                    acc[u][r][v] = _mm256_fmadd_ps(av, bv[v], acc[u][r][v]);                  \
            }                                                                                 \
            const float *pf = bk + GEMV_AHEAD * ldb;                                          \
            _mm_prefetch((const char *)pf, _MM_HINT_T0);                                      \
            _mm_prefetch((const char *)(pf + 8 * NV - 1), _MM_HINT_T0);                       \
        }                                                                                     \
    }                                                                                         \
    long kk = U * kseg;                                                                       \
    for (; kk < k; kk++) {                                                                    \
        const float *bk = b + kk * ldb;                                                       \
        _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) {                                \
            __m256 bv = v == NV - 1 ? _mm256_maskload_ps(bk + 8 * v, last)                    \
                                    : _mm256_loadu_ps(bk + 8 * v);                            \
            _Pragma("GCC unroll 4") for (int r = 0; r < ROWS; r++)                            \
                acc[0][r][v] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + r * rs + kk * ks), bv, \
                                               acc[0][r][v]);                                 \
        }                                                                                     \
    }                                                                                         \
    const __m256 alpha = _mm256_set1_ps(t->alpha), lo = _mm256_set1_ps(t->lo),                \
                 hi = _mm256_set1_ps(t->hi);                                                  \
    _Pragma("GCC unroll 4") for (int r = 0; r < ROWS; r++) {                                  \
        const __m256 bb = _mm256_set1_ps(t->bias ? t->bias[r] : 0.0f);                        \
        _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) {                                \
            __m256 s = acc[0][r][v];                                                          \
            _Pragma("GCC unroll 4") for (int u = 1; u < U; u++)                               \
                s = _mm256_add_ps(s, acc[u][r][v]);                                           \
            const int part = v == NV - 1;                                                     \
            __m256 x = _mm256_fmadd_ps(s, alpha, bb);                                         \
            if (t->cbias)                                                                     \
                x = _mm256_add_ps(x, part ? _mm256_maskload_ps(t->cbias + 8 * v, last)        \
                                          : _mm256_loadu_ps(t->cbias + 8 * v));               \
            if (t->res) {                                                                     \
                const float *rp = t->res + r * t->ldr + 8 * v;                                \
                x = _mm256_add_ps(x, part ? _mm256_maskload_ps(rp, last) : _mm256_loadu_ps(rp)); \
            }                                                                                 \
            x = _mm256_min_ps(hi, _mm256_max_ps(lo, x)); /* a NaN passes through */           \
            float *cp = t->c + r * t->ldc + 8 * v;                                            \
            if (part) _mm256_maskstore_ps(cp, last, x);                                       \
            else _mm256_storeu_ps(cp, x);                                                     \
        }                                                                                     \
    }                                                                                         \
}
/* accumulators: ROWS * NV * U <= 12 (with NV vectors of B and a broadcast: 16 registers);
 * 3 and 4 rows in one pass (one stream) ran slower than two passes of two */
GEMV(1, 1, 4) GEMV(1, 2, 4) GEMV(1, 3, 4)
GEMV(2, 1, 4) GEMV(2, 2, 2) GEMV(2, 3, 2)

typedef void (*gemv_fn)(const vtile *, __m256i);
static const gemv_fn gemvs[MAX_GROUP][3] = {{gemv_1_1, gemv_1_2, gemv_1_3},
                                             {gemv_2_1, gemv_2_2, gemv_2_3}};

AVX2 static void tile_avx2(const vtile *t) {
    long nv = (t->cols + 7) / 8, tail = t->cols - 8 * (nv - 1);
    __m256i last = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)tail),
                                      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    gemvs[t->rows - 1][nv - 1](t, last);
}
#endif

typedef struct {
    const mi_gemv_args *a;
    long tiles;
    int avx2;
} gemv_job;

/* column tile `jt` (TILE columns, inside one panel of a packed B), every row in groups of
 * MAX_GROUP (the tile's B comes from memory for the first group, from cache for the others) */
static void run_tile(const gemv_job *g, long jt) {
    const mi_gemv_args *p = g->a;
    long j = jt * TILE;
    vtile t;
    t.cols = lmin(TILE, p->n - j);
    if (p->panel) { /* TILE divides the panel's width: the tile lies in one panel */
        long p0 = j / p->panel * p->panel;
        t.ldb = lmin(p->panel, p->n - p0);
        t.b = p->b + p0 * p->k + (j - p0);
    } else {
        t.ldb = p->ldb;
        t.b = p->b + j;
    }
    t.k = p->k;
    t.a_rs = p->a_rs;
    t.a_ks = p->a_ks;
    t.ldc = p->ldc;
    t.ldr = p->ldr;
    t.cbias = p->cbias ? p->cbias + j : NULL;
    t.alpha = p->alpha;
    t.lo = p->lo;
    t.hi = p->hi;
    for (long i = 0; i < p->m; i += MAX_GROUP) {
        t.rows = lmin(MAX_GROUP, p->m - i);
        t.a = p->a + i * p->a_rs;
        t.c = p->c + i * p->ldc + j;
        t.bias = p->bias ? p->bias + i : NULL;
        t.res = p->res ? p->res + i * p->ldr + j : NULL;
#if HAVE_X86
        if (g->avx2) {
            tile_avx2(&t);
            continue;
        }
#endif
        tile_plain(&t);
    }
}

static void gemv_part(const void *job, int part, int parts) {
    const gemv_job *g = (const gemv_job *)job;
    long t0, t1;
    mi_pool_share(g->tiles, part, parts, &t0, &t1);
    for (long jt = t0; jt < t1; jt++) run_tile(g, jt);
}

/* B at least this many bytes is shared by the pool's threads (smaller: not worth a wake) */
#ifndef GEMV_SPLIT
#define GEMV_SPLIT (128L * 1024)
#endif

int mi_gemv_f32(const mi_gemv_args *a) {
    if (!a->a || !a->b || !a->c || ANY_NEGATIVE(a->m, a->n, a->k, a->ldb, a->ldc, a->ldr) ||
        a->panel < 0 || (a->panel && a->panel % TILE))
        return MI_EARGS;
    if (a->m == 0 || a->n == 0) return MI_OK;
    gemv_job g = {.a = a, .tiles = (a->n + TILE - 1) / TILE, .avx2 = mi_gemm_isa() >= 1};
    if (a->k * a->n * 4 >= GEMV_SPLIT && g.tiles > 1) mi_pool_run(gemv_part, &g);
    else gemv_part(&g, 0, 1);
    return MI_OK;
}

/* ---- squeeze-and-excitation: the mean of each row, and each row times its scale ---- */

#if HAVE_X86
AVX2 static float row_sum_avx2(const float *x, long n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(),
           s3 = _mm256_setzero_ps();
    long i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
        s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x + i + 8));
        s2 = _mm256_add_ps(s2, _mm256_loadu_ps(x + i + 16));
        s3 = _mm256_add_ps(s3, _mm256_loadu_ps(x + i + 24));
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
    __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    float r = _mm_cvtss_f32(h);
    for (; i < n; i++) r += x[i];
    return r;
}

AVX2 static void row_scale_avx2(const float *x, float *y, long n, float s) {
    const __m256 sv = _mm256_set1_ps(s);
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), sv));
        _mm256_storeu_ps(y + i + 8, _mm256_mul_ps(_mm256_loadu_ps(x + i + 8), sv));
    }
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), sv));
    for (; i < n; i++) y[i] = x[i] * s;
}
#endif

static float row_sum_plain(const float *x, long n) {
    float r = 0.0f;
    for (long i = 0; i < n; i++) r += x[i];
    return r;
}

static int vec_avx2(void) {
#if HAVE_X86
    return mi_gemm_isa() >= 1;
#else
    return 0;
#endif
}

/* rows [r0, r1) of a row mean (scale 0) or row scale (scale 1) */
static void rows_range(const mi_rows_args *a, int scale, int avx2, long r0, long r1) {
    for (long r = r0; r < r1; r++) {
        const float *x = a->x + r * a->cols;
        if (scale) {
            float *y = a->y + r * a->cols;
#if HAVE_X86
            if (avx2) {
                row_scale_avx2(x, y, a->cols, a->s[r]);
                continue;
            }
#endif
            for (long i = 0; i < a->cols; i++) y[i] = x[i] * a->s[r];
            continue;
        }
#if HAVE_X86
        float s = avx2 ? row_sum_avx2(x, a->cols) : row_sum_plain(x, a->cols);
#else
        float s = row_sum_plain(x, a->cols);
#endif
        a->y[r] = s / (float)a->cols; /* no columns: 0 / 0, NaN */
    }
}

typedef struct {
    const mi_rows_args *a;
    int scale, avx2;
} rows_job;

static void rows_part(const void *job, int part, int parts) {
    const rows_job *j = (const rows_job *)job;
    long r0, r1;
    mi_pool_share(j->a->rows, part, parts, &r0, &r1);
    rows_range(j->a, j->scale, j->avx2, r0, r1);
}

/* floats at least for which the rows are shared by the pool's threads */
#ifndef ROWS_SPLIT
#define ROWS_SPLIT (64L * 1024)
#endif

static int run_rows(const mi_rows_args *a, int scale) {
    rows_job j = {.a = a, .scale = scale, .avx2 = vec_avx2()};
    if (a->rows > 1 && a->rows * a->cols >= ROWS_SPLIT) mi_pool_run(rows_part, &j);
    else rows_range(a, scale, j.avx2, 0, a->rows);
    return MI_OK;
}

int mi_row_mean_f32(const mi_rows_args *a) {
    if (!a->x || !a->y || ANY_NEGATIVE(a->rows, a->cols)) return MI_EARGS;
    return run_rows(a, 0);
}

int mi_row_scale_f32(const mi_rows_args *a) {
    if (!a->x || !a->y || !a->s || ANY_NEGATIVE(a->rows, a->cols)) return MI_EARGS;
    return run_rows(a, 1);
}

/* log(sum(exp(row))) with the row's largest finite value m taken out (0 where it has none):
 * +inf gives +inf, a row of -inf gives -inf, a NaN gives NaN (cpu_basic's NumPy form and
 * onnxruntime's); the sum of the float exponentials in double, stored as float */
int mi_row_logsumexp_f32(const mi_rows_args *a) {
    if (!a->x || !a->y || ANY_NEGATIVE(a->rows, a->cols)) return MI_EARGS;
    for (long r = 0; r < a->rows; r++) {
        const float *x = a->x + r * a->cols;
        float m = -INFINITY;
        int any = 0;
        for (long i = 0; i < a->cols; i++)
            if (isfinite(x[i]) && (!any || x[i] > m)) {
                m = x[i];
                any = 1;
            }
        if (!any) m = 0.0f;
        double sum = 0.0;
        for (long i = 0; i < a->cols; i++) sum += (double)expf(x[i] - m);
        a->y[r] = (float)log(sum) + m;
    }
    return MI_OK;
}
