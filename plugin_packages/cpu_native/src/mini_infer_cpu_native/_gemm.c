/* Single-precision GEMM with its epilogue in registers, on the library's own thread pool.
 *
 *   C (M x N, ldc) = clamp(A (M x K) . B (K x N, ldb) + bias[m] + R (M x N, ldr), lo, hi)
 *
 * A is packed once (mi_gemm_pack_f32: the weights, by the build, stored so in the engine):
 * panels of MR = 8 rows, k-major, 8 values per k; a last partial panel of r rows keeps r
 * values per k, so the packed array has exactly M * K floats. B is read in place (an im2col
 * buffer or the input itself), PF rows ahead prefetched. Each micro-tile is 8 rows x 48
 * columns (24 AVX-512 accumulators) over the whole K: the B panel (K x 48) stays in L2 while
 * the row panels stream past it; bias, residual and the clamp are applied to the
 * accumulators before the one store. One column (a fully connected layer at batch 1) has a
 * matrix-vector kernel of its own, bound by memory. Each output is one thread's sum in k
 * order: the thread count does not change the result.
 *
 * On the library's pool (_pool.c) the calling thread and the workers split the tiles (by
 * column tiles when there are many, by row panels otherwise). Why not BLAS: OpenBLAS's idle
 * workers spin on every core for a long time after each call, so nothing else can use the
 * other cores; with every product of a run here, OpenBLAS stays asleep.
 *
 * Without AVX-512 (checked once, at the first product or mi_gemm_available call) every entry
 * point runs a plain C loop and mi_gemm_available() says 0: the Python side then keeps the
 * BLAS paths. Arguments: one struct per entry point (_args.h). */
#include <stdatomic.h>

#include "_args.h"
#include "_common.h"
#include "_pool.h"

#define MR 8
#define NR 48
/* rows of B prefetched ahead in the tile kernel, and k ahead in the matrix-vector kernel
 * (ResNet-50's GEMMs: 4 rows 10% faster than none, 8 no better; FC 9216 -> 4096: 31 -> 38-42
 * GB/s with 64) */
#define PF 4
#define GEMV_PF 64

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,fma")))
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

static long panel_offset(long ip, long k) { return ip * MR * k; }

int mi_gemm_pack_f32(const mi_gemm_pack_args *p) {
    const float *a = p->a;
    float *out = p->out;
    const long m = p->m, k = p->k, lda = p->lda;
    if (!a || !out || ANY_NEGATIVE(m, k, lda)) return MI_EARGS;
    for (long i = 0; i < m; i += MR) {
        long rows = lmin(MR, m - i);
        float *dst = out + panel_offset(i / MR, k);
        for (long kk = 0; kk < k; kk++)
            for (long r = 0; r < rows; r++) dst[kk * rows + r] = a[(i + r) * lda + kk];
    }
    return MI_OK;
}

typedef struct {
    const float *a;
    const float *b;
    float *c;
    const float *bias, *res;
    long m, n, k, ldb, ldc, ldr;
    float lo, hi;
    int avx512; /* the kernels this job runs: AVX-512 or the plain C loops */
} tile_job;

#if HAVE_X86
/* ROWS x (16 * NV) accumulators over the whole K; `last` masks the last vector's columns */
#define MICRO(ROWS, NV)                                                                        \
AVX512 static void micro_##ROWS##_##NV(const tile_job *g, const float *restrict ap,           \
                                        const float *restrict b, float *restrict c,           \
                                        const float *bias, const float *res, __mmask16 last) { \
    __m512 acc[ROWS][NV];                                                                      \
    _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++)                                                             \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();                          \
    const long ldb = g->ldb;                                                                   \
    /* the output (and residual) lines, fetched while the k loop runs: stores into cold lines \
     * stalled the epilogue (1x1 convolutions over 56x56 maps: K = 64 is a short loop) */     \
    _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++)                                     \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                                 \
            _mm_prefetch((const char *)(c + r * g->ldc + 16 * v), _MM_HINT_ET0);               \
            if (res) _mm_prefetch((const char *)(res + r * g->ldr + 16 * v), _MM_HINT_T0);     \
        }                                                                                      \
    for (long kk = 0; kk < g->k; kk++) {                                                       \
        __m512 bv[NV];                                                                         \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                                           \
            bv[v] = v == NV - 1 ? _mm512_maskz_loadu_ps(last, b + 16 * v)                      \
                                : _mm512_loadu_ps(b + 16 * v);                                 \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                       \
            __m512 av = _mm512_set1_ps(ap[r]);                                                 \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);    \
        }                                                                                      \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                  \
            _mm_prefetch((const char *)(b + PF * ldb + 16 * v), _MM_HINT_T0);                  \
        ap += ROWS;                                                                            \
        b += ldb;                                                                              \
    }                                                                                          \
    const __m512 lo = _mm512_set1_ps(g->lo), hi = _mm512_set1_ps(g->hi);                       \
    _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                           \
        const __m512 bb = _mm512_set1_ps(bias ? bias[r] : 0.0f);                               \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                                                         \
            const __mmask16 mk = v == NV - 1 ? last : (__mmask16)0xFFFF;                       \
            __m512 x = _mm512_add_ps(acc[r][v], bb);                                           \
            if (res) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mk, res + r * g->ldr + 16 * v));\
            x = _mm512_min_ps(_mm512_max_ps(x, lo), hi);                                       \
            _mm512_mask_storeu_ps(c + r * g->ldc + 16 * v, mk, x);                             \
        }                                                                                      \
    }                                                                                          \
}
#define MICRO_ROWS(ROWS) MICRO(ROWS, 1) MICRO(ROWS, 2) MICRO(ROWS, 3)
MICRO_ROWS(1) MICRO_ROWS(2) MICRO_ROWS(3) MICRO_ROWS(4)
MICRO_ROWS(5) MICRO_ROWS(6) MICRO_ROWS(7) MICRO_ROWS(8)

/* one column (N = 1, contiguous: a matrix-vector product, fully connected layers at batch 1):
 * an 8-row panel reads 16 floats (2 k) per step, bound by memory rather than by the eight
 * one-lane FMAs per k of the 8 x 16 tile */
AVX512 static void gemv_8(const tile_job *g, const float *restrict ap, const float *restrict x,
                          float *restrict c, const float *bias, const float *res) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    const __m512i lo_hi = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    long k = g->k, kk = 0;
    for (; kk + 16 <= k; kk += 16) {
        __m512 xv = _mm512_loadu_ps(x + kk);
        _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++)
            _mm_prefetch((const char *)(ap + (kk + GEMV_PF) * MR + 16 * q), _MM_HINT_T0);
        _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) {
            __m512i idx = _mm512_add_epi32(lo_hi, _mm512_set1_epi32(2 * j));
            __m512 xs = _mm512_permutexvar_ps(idx, xv);
            __m512 a2 = _mm512_loadu_ps(ap + (kk + 2 * j) * MR); /* k, k+1: 8 rows each */
            acc[j & 3] = _mm512_fmadd_ps(a2, xs, acc[j & 3]);
        }
    }
    __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
    __m256 y = _mm256_add_ps(_mm512_castps512_ps256(sum), _mm512_extractf32x8_ps(sum, 1));
    for (; kk < k; kk++)
        y = _mm256_fmadd_ps(_mm256_loadu_ps(ap + kk * MR), _mm256_set1_ps(x[kk]), y);
    float out[MR];
    _mm256_storeu_ps(out, y);
    for (int r = 0; r < MR; r++) {
        float v = out[r] + (bias ? bias[r] : 0.0f) + (res ? res[r * g->ldr] : 0.0f);
        v = v < g->lo ? g->lo : v;
        c[r * g->ldc] = v > g->hi ? g->hi : v;
    }
}

typedef void (*micro_fn)(const tile_job *, const float *, const float *, float *,
                         const float *, const float *, __mmask16);
#define MICRO_ROW_TABLE(ROWS) {micro_##ROWS##_1, micro_##ROWS##_2, micro_##ROWS##_3}
static const micro_fn micros[MR][3] = {
    MICRO_ROW_TABLE(1), MICRO_ROW_TABLE(2), MICRO_ROW_TABLE(3), MICRO_ROW_TABLE(4),
    MICRO_ROW_TABLE(5), MICRO_ROW_TABLE(6), MICRO_ROW_TABLE(7), MICRO_ROW_TABLE(8)};
#endif

static int has_avx512(void) {
#if HAVE_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

/* -1 until the first product; relaxed: a job reads it once, into its tile_job, which the pool
 * hands to the workers (a test switching it while another thread's product runs changes
 * the next product, not that one) */
static atomic_int avx512 = -1;

/* tests: the plain C loops even where AVX-512 is present */
void mi_gemm_set_plain(int plain) {
    atomic_store_explicit(&avx512, plain ? 0 : has_avx512(), memory_order_relaxed);
}

int mi_gemm_available(void) {
    int on = atomic_load_explicit(&avx512, memory_order_relaxed);
    if (on < 0) {
        on = has_avx512();
        atomic_store_explicit(&avx512, on, memory_order_relaxed);
    }
    return on;
}

/* the plain C tile (no AVX-512): rows x cols of C */
static void tile_plain(const tile_job *g, const float *ap, long rows, const float *b, float *c,
                       const float *bias, const float *res, long cols) {
    for (long r = 0; r < rows; r++)
        for (long j = 0; j < cols; j++) {
            float s = 0.0f;
            for (long kk = 0; kk < g->k; kk++) s += ap[kk * rows + r] * b[kk * g->ldb + j];
            s += (bias ? bias[r] : 0.0f) + (res ? res[r * g->ldr + j] : 0.0f);
            s = s < g->lo ? g->lo : s;
            c[r * g->ldc + j] = s > g->hi ? g->hi : s;
        }
}

static void run_tile(const tile_job *g, long ip, long jt) {
    long i = ip * MR, j = jt * NR;
    long rows = lmin(MR, g->m - i), cols = lmin(NR, g->n - j);
    const float *ap = g->a + panel_offset(ip, g->k);
    const float *b = g->b + j;
    float *c = g->c + i * g->ldc + j;
    const float *bias = g->bias ? g->bias + i : NULL;
    const float *res = g->res ? g->res + i * g->ldr + j : NULL;
#if HAVE_X86
    if (g->avx512 && cols == 1 && rows == MR && g->ldb == 1) {
        gemv_8(g, ap, b, c, bias, res);
        return;
    }
    if (g->avx512) {
        long nv = (cols + 15) / 16, tail = cols - 16 * (nv - 1);
        __mmask16 last = (__mmask16)(tail == 16 ? 0xFFFF : (1u << tail) - 1u);
        micros[rows - 1][nv - 1](g, ap, b, c, bias, res, last);
        return;
    }
#endif
    tile_plain(g, ap, rows, b, c, bias, res, cols);
}

/* part `part` of `parts`. Many column tiles: they are split, each B panel (K x 48) stays in
 * cache while every row panel of A passes it. Few (thin outputs, 7x7 maps): the row panels
 * are split, and each A panel is read once for all the column tiles (A, the weights, is the
 * large operand there: re-reading it per column tile doubled the time of 2048x1024x49). */
static void run_part(const tile_job *g, int part, int parts) {
    long mp = (g->m + MR - 1) / MR, nt = (g->n + NR - 1) / NR;
    if (nt >= 4 * parts || mp < parts) {
        for (long jt = nt * part / parts; jt < nt * (part + 1) / parts; jt++)
            for (long ip = 0; ip < mp; ip++) run_tile(g, ip, jt);
    } else {
        for (long ip = mp * part / parts; ip < mp * (part + 1) / parts; ip++)
            for (long jt = 0; jt < nt; jt++) run_tile(g, ip, jt);
    }
}

/* ---- batches: `count` GEMMs of one shape without epilogue (Winograd's products) ---- */
typedef struct {
    tile_job one;
    long count, a_stride, b_stride, c_stride;
} batch_job;

static void run_batch_part(const batch_job *bj, int part, int parts) {
    long mp = (bj->one.m + MR - 1) / MR, nt = (bj->one.n + NR - 1) / NR;
    long per = mp * nt, total = per * bj->count;
    long t0 = total * part / parts, t1 = total * (part + 1) / parts;
    for (long t = t0; t < t1; t++) {
        long q = t / per, rest = t % per;
        tile_job g = bj->one;
        g.a += q * bj->a_stride;
        g.b += q * bj->b_stride;
        g.c += q * bj->c_stride;
        run_tile(&g, rest % mp, rest / mp);
    }
}

static void gemm_part(const void *job, int part, int parts) {
    run_part((const tile_job *)job, part, parts);
}

static void batch_part(const void *job, int part, int parts) {
    run_batch_part((const batch_job *)job, part, parts);
}

int mi_gemm_f32(const mi_gemm_args *a) {
    if (!a->a || !a->b || !a->c || ANY_NEGATIVE(a->m, a->n, a->k, a->ldb, a->ldc, a->ldr))
        return MI_EARGS;
    tile_job g = {a->a, a->b, a->c, a->bias, a->res, a->m, a->n, a->k, a->ldb, a->ldc, a->ldr,
                  a->lo, a->hi, mi_gemm_available()};
    if (g.m == 0 || g.n == 0) return MI_OK;
    /* tiny products are not worth waking the pool */
    if (g.m * g.n * g.k < 32768L) run_part(&g, 0, 1);
    else mi_pool_run(gemm_part, &g);
    return MI_OK;
}

int mi_gemm_batch_f32(const mi_gemm_batch_args *a) {
    if (!a->a || !a->b || !a->c ||
        ANY_NEGATIVE(a->count, a->a_stride, a->b_stride, a->c_stride, a->ldb, a->ldc, a->m,
                     a->n, a->k))
        return MI_EARGS;
    batch_job bj = {{a->a, a->b, a->c, NULL, NULL, a->m, a->n, a->k, a->ldb, a->ldc, 0,
                     -INFINITY, INFINITY, mi_gemm_available()},
                    a->count, a->a_stride, a->b_stride, a->c_stride};
    if (bj.one.m == 0 || bj.one.n == 0 || bj.count == 0) return MI_OK;
    mi_pool_run(batch_part, &bj);
    return MI_OK;
}
