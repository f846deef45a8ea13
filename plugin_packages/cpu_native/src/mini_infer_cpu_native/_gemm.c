/* Single-precision GEMM with its epilogue in registers, on the library's own thread pool.
 *
 *   C (M x N) = clamp(alpha * A (M x K) . B (K x N) + bias[m] + cbias[n] + R (M x N), lo, hi)
 *
 * A, the side whose values are broadcast, is either packed (mi_gemm_pack_f32: the weights of
 * a convolution, by the build, stored so in the engine: panels of MR = 8 rows, k-major, 8
 * values per k; a last partial panel of r rows keeps r values per k, so the packed array has
 * exactly M * K floats) or read in place through any two strides (a MatMul's activations,
 * transposed or not). A MatMul's weights packed where the AVX2 kernels run come in panels of
 * NR2 = 24 columns instead (b_packed 2): a tile's B is then K rows of 96 contiguous bytes,
 * where half of a 48-column panel touched two cache lines of three per k (a block of 256 k:
 * 32 KiB, all of L1); BERT's and ViT's linear layers (128-197 x 768 x 768-3072) ran 10-25%
 * faster against onnxruntime with weights coming from memory. AVX-512 tiles are 24 columns
 * wide over such panels. B, the side read in vectors, is read in place with its row stride (an
 * im2col buffer, the input planes, a MatMul's runtime operand) or packed in panels of NB = 48
 * columns (mi_gemm_pack_b_f32: a MatMul's or Gemm's constant weights; panel p holds columns
 * [48p, 48p + w), K rows of w floats, so the packed array has exactly K * N floats too). Both
 * packed layouts are read by every kernel below: an engine packed on one CPU runs on another.
 *
 * Kernels, chosen once by the CPU's features (mi_gemm_isa):
 * - AVX-512: micro-tiles of 8 rows x 48 columns (24 accumulators); K over KC_FROM, with M
 *   over 16, in blocks of KC as on AVX2 (below), the partial sums kept in C.
 * - AVX2 + FMA: micro-tiles of 4 rows x 24 columns (12 ymm accumulators, 3 vectors of B and
 *   a broadcast: the 16 registers) over the whole K, half of an 8-row panel. 6 x 16 (also 12
 *   accumulators) loads 8 values per 12 FMAs where 4 x 24 loads 7, and would need panels of
 *   6 rows. One call walks every 4-row group of a column tile (tile2, micro2: a call per
 *   tile cost 10-30% of a short K's time), rows in blocks whose A stays in L2 (row_block).
 *   On a Zen 3 core (94 GFLOP/s FMA peak): 90-93 GFLOP/s on cache-resident tiles, 75-88 on
 *   transformer shapes. K over KC_FROM (512), with M over 16, runs in blocks of KC (256),
 *   the partial sums kept in C (loaded by the next block, the epilogue on the last): a block
 *   of A then stays in L2 for more rows (row_block) and the tile's B block in L1. On a loaded
 *   2-core Zen 3 VM: 128x1152x784 (packed A) 15-30 -> 47-65 GFLOP/s, 256x2304x196 12-62 ->
 *   57-67, 128x3072x768 8-15 -> 18-35; K up to 512 unchanged (blocks of 96-256 were slower
 *   there). The matrix-vector kernels take all of K (one column is not blocked), as do a few
 *   rows (nothing of a B block is reused). C is written before the residual and column bias
 *   are read: neither may alias C (the engine never hands an output that aliases an input).
 * - plain C loops everywhere else (and in tests, mi_gemm_set_isa(0)).
 * The B panel (K x tile columns) stays in L2 while the row panels stream past it; alpha,
 * bias, column bias, residual and the clamp are applied to the accumulators before the one
 * store. One column with a packed A (a 1x1 convolution of a 1x1 map, a fully connected layer
 * at batch 1) has a matrix-vector kernel of its own, bound by memory. Each output is one
 * thread's sum in k order: the thread count does not change the result.
 *
 * On the library's pool (_pool.c) the calling thread and the workers split the tiles (by
 * column tiles when there are many, by row panels otherwise, by products in a batch). Why
 * not BLAS: OpenBLAS's idle workers spin on every core for a long time after each call, so
 * nothing else can use the other cores; with every product of a run here, OpenBLAS stays
 * asleep. Arguments: one struct per entry point (_args.h). */
#include <stdatomic.h>
#include <stdlib.h>

#include "_args.h"
#include "_common.h"
#include "_epi.h"
#include "_pool.h"

#define MR 8
#define NB 48
/* columns per tile: AVX-512 48 (one B panel), AVX2 and plain C 24 (half of one) */
#define NR512 48
#define NR2 24
/* rows of B prefetched ahead in the tile kernels, and k ahead in the matrix-vector kernels
 * (ResNet-50's GEMMs: 4 rows 10% faster than none, 8 no better; FC 9216 -> 4096: 31 -> 38-42
 * GB/s with 64) */
#define PF 4
#define GEMV_PF 64
#ifndef KC
#define KC 256
#endif
#ifndef KC_FROM
#define KC_FROM 512
#endif

enum { ISA_PLAIN = 0, ISA_AVX2 = 1, ISA_AVX512 = 2 };

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,fma")))
#define AVX2 __attribute__((target("avx2,fma")))
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

int mi_gemm_pack_b_f32(const mi_gemm_pack_b_args *p) {
    const float *b = p->b;
    float *out = p->out;
    const long k = p->k, n = p->n, rs = p->rs, cs = p->cs;
    if (!b || !out || ANY_NEGATIVE(k, n)) return MI_EARGS;
    for (long j0 = 0; j0 < n; j0 += NB) {
        long w = lmin(NB, n - j0);
        float *dst = out + j0 * k;
        for (long kk = 0; kk < k; kk++)
            for (long j = 0; j < w; j++) dst[kk * w + j] = b[kk * rs + (j0 + j) * cs];
    }
    return MI_OK;
}

/* a whole job: `batch0 * batch1` products of one shape */
typedef struct {
    const float *a, *b;
    float *c;
    const float *bias, *cbias, *res;
    long m, n, k, a_rs, a_ks, ldb, ldc, ldr;
    long batch0, batch1, a_s0, a_s1, b_s0, b_s1, c_s0, c_s1, r_s0, r_s1;
    int a_packed, b_packed;
    long bnb; /* columns per panel of a packed B: NB, or NR2 (b_packed 2) */
    int isa; /* the kernels this job runs, read once (ISA_*) */
    long kc; /* k per block (AVX2 and AVX-512; the plain loops all of K) */
    float alpha, lo, hi;
    int act; /* after the clamp (_epi.h; 0 none) */
    float act_alpha, act_beta;
} gemm_job;

/* one tile's operands: A[r, kk] = a[r * rs + kk * ks], B[kk, j] = b[kk * ldb + j] */
typedef struct {
    const float *a, *b;
    float *c;
    const float *bias, *cbias, *res;
    long rs, ks, ldb, ldc, ldr, k;
    /* blocks of K: this one is [k0, k0 + k) of kfull (A's rows start at k = 0, B's at
     * k0); the first block starts from 0, the others from the partial sums in C, the last
     * applies the epilogue, the others store the partial sums */
    long k0, kfull;
    int first, last;
    /* AVX2: `groups` groups of 4 rows, group g's A at a + (g / 2) * a_ps + (g % 2) * a_hs
     * (8-row panels: packed, or strided rows), its C, bias and residual 4 rows further */
    long groups, a_ps, a_hs;
    float alpha, lo, hi;
    int act;
    float act_alpha, act_beta;
} tile;

#if HAVE_X86
/* ROWS x (16 * NV) accumulators over the tile's block of K (from C's partial sums after the
 * first, stored as such before the last); `last` masks the last vector's columns.
 * STRIDED 0: A packed (ap[r], ROWS values per k; the original kernel, constant-folded),
 * 1: A through the tile's strides. */
#define MICRO512(ROWS, NV, STRIDED)                                                             \
AVX512 static void micro512_##STRIDED##_##ROWS##_##NV(const tile *t, __mmask16 last) {          \
    __m512 acc[ROWS][NV];                                                                       \
    float *restrict c = t->c;                                                                   \
    const long ldb = t->ldb, rs = STRIDED ? t->rs : 1, ks = STRIDED ? t->ks : ROWS;             \
    const long kend = t->k, ldc = t->ldc, ldr = t->ldr;                                         \
    /* a block of K after the first starts from the partial sums in C */                       \
    _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++)                                      \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                    \
            acc[r][v] = t->first ? _mm512_setzero_ps()                                          \
                                 : _mm512_maskz_loadu_ps(v == NV - 1 ? last : (__mmask16)0xFFFF, \
                                                         c + r * ldc + 16 * v);                 \
    const float *restrict ap = t->a + t->k0 * ks, *restrict b = t->b;                           \
    const float *bias = t->bias, *cbias = t->cbias, *res = t->res;                              \
    /* the output (and residual) lines, fetched while the k loop runs: stores into cold lines   \
     * stalled the epilogue (1x1 convolutions over 56x56 maps: K = 64 is a short loop) */       \
    _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++)                                      \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                                  \
            _mm_prefetch((const char *)(c + r * ldc + 16 * v), _MM_HINT_ET0);                   \
            if (res) _mm_prefetch((const char *)(res + r * ldr + 16 * v), _MM_HINT_T0);         \
        }                                                                                       \
    for (long kk = 0; kk < kend; kk++) {                                                        \
        __m512 bv[NV];                                                                          \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                    \
            bv[v] = v == NV - 1 ? _mm512_maskz_loadu_ps(last, b + 16 * v)                       \
                                : _mm512_loadu_ps(b + 16 * v);                                  \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                \
            __m512 av = _mm512_set1_ps(ap[r * rs]);                                             \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                \
                acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);                              \
        }                                                                                       \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                    \
            _mm_prefetch((const char *)(b + PF * ldb + 16 * v), _MM_HINT_T0);                   \
        ap += ks;                                                                               \
        b += ldb;                                                                               \
    }                                                                                           \
    if (!t->last) { /* partial sums: the next block of K goes on from them */                   \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++)                                  \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                \
                _mm512_mask_storeu_ps(c + r * ldc + 16 * v,                                     \
                                      v == NV - 1 ? last : (__mmask16)0xFFFF, acc[r][v]);       \
        return;                                                                                 \
    }                                                                                           \
    const __m512 lo = _mm512_set1_ps(t->lo), hi = _mm512_set1_ps(t->hi);                        \
    const __m512 alpha = _mm512_set1_ps(t->alpha);                                              \
    _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                    \
        const __m512 bb = _mm512_set1_ps(bias ? bias[r] : 0.0f);                                \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                                  \
            const __mmask16 mk = v == NV - 1 ? last : (__mmask16)0xFFFF;                        \
            __m512 x = _mm512_fmadd_ps(acc[r][v], alpha, bb);                                   \
            if (cbias) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mk, cbias + 16 * v));         \
            if (res)                                                                            \
                x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mk, res + r * ldr + 16 * v));        \
            /* max(lo, x), min(hi, .): a NaN (the second operand) passes through */             \
            x = _mm512_min_ps(hi, _mm512_max_ps(lo, x));                                        \
            x = mi_epi_avx512(x, t->act, _mm512_set1_ps(t->act_alpha),                          \
                              _mm512_set1_ps(t->act_beta));                                     \
            _mm512_mask_storeu_ps(c + r * ldc + 16 * v, mk, x);                                 \
        }                                                                                       \
    }                                                                                           \
}
#define MICRO512_ROWS(ROWS, S) MICRO512(ROWS, 1, S) MICRO512(ROWS, 2, S) MICRO512(ROWS, 3, S)
#define MICRO512_ALL(S)                                                                         \
    MICRO512_ROWS(1, S) MICRO512_ROWS(2, S) MICRO512_ROWS(3, S) MICRO512_ROWS(4, S)             \
    MICRO512_ROWS(5, S) MICRO512_ROWS(6, S) MICRO512_ROWS(7, S) MICRO512_ROWS(8, S)
MICRO512_ALL(0)
MICRO512_ALL(1)

/* the epilogue of a matrix-vector product's MR rows (`out`, the sums over k) into C's column:
 * alpha, the biases, the residual, the clamp and the activation, as the tiles' epilogue */
static inline void gemv_store(const tile *t, const float out[MR]) {
    for (int r = 0; r < MR; r++) {
        float v = out[r] * t->alpha + (t->bias ? t->bias[r] : 0.0f) +
                  (t->cbias ? t->cbias[0] : 0.0f) + (t->res ? t->res[r * t->ldr] : 0.0f);
        v = v < t->lo ? t->lo : v;
        t->c[r * t->ldc] = mi_epi_scalar(v > t->hi ? t->hi : v, t->act, t->act_alpha,
                                         t->act_beta);
    }
}

/* one column (N = 1, contiguous: a matrix-vector product, fully connected layers at batch 1):
 * an 8-row panel reads 16 floats (2 k) per step, bound by memory rather than by the eight
 * one-lane FMAs per k of the 8 x 16 tile */
AVX512 static void gemv512(const tile *t) {
    const float *restrict ap = t->a, *restrict x = t->b;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    const __m512i lo_hi = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    long k = t->k, kk = 0;
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
    gemv_store(t, out);
}

typedef void (*micro512_fn)(const tile *, __mmask16);
#define M512_ROW(S, ROWS) {micro512_##S##_##ROWS##_1, micro512_##S##_##ROWS##_2,                \
                           micro512_##S##_##ROWS##_3}
#define M512_TABLE(S) {M512_ROW(S, 1), M512_ROW(S, 2), M512_ROW(S, 3), M512_ROW(S, 4),          \
                       M512_ROW(S, 5), M512_ROW(S, 6), M512_ROW(S, 7), M512_ROW(S, 8)}
static const micro512_fn micros512[2][MR][3] = {M512_TABLE(0), M512_TABLE(1)};

/* ---- AVX2 + FMA ---- */

/* ROWS x (8 * NV) accumulators over the tile's K (from 0, or from C's partial sums) for each
 * of the tile's row groups (one call
 * walks a column tile: a call per 4 rows cost 10-20% of a short K's time), A through the
 * tile's strides; TAIL: the last vector holds fewer than 8 columns (masked loads and
 * stores, `last` its lanes) */
#define MICRO2(ROWS, NV, TAIL)                                                                  \
AVX2 static void micro2_##TAIL##_##ROWS##_##NV(const tile *t, __m256i last) {                   \
    const long ldb = t->ldb, rs = t->rs, ks = t->ks, kend = t->k, ldc = t->ldc, ldr = t->ldr;   \
    const long groups = t->groups, a_ps = t->a_ps, a_hs = t->a_hs;                              \
    const __m256 lo = _mm256_set1_ps(t->lo), hi = _mm256_set1_ps(t->hi);                        \
    const __m256 alpha = _mm256_set1_ps(t->alpha);                                              \
    const float *cbias = t->cbias;                                                              \
    const int first = t->first;                                                                 \
    for (long g = 0; g < groups; g++) {                                                         \
        const float *restrict ap = t->a + (g >> 1) * a_ps + (g & 1) * a_hs + t->k0 * ks;        \
        const float *restrict b = t->b;                                                         \
        float *restrict c = t->c + 4 * g * ldc;                                                 \
        const float *bias = t->bias ? t->bias + 4 * g : NULL;                                   \
        const float *res = t->res ? t->res + 4 * g * ldr : NULL;                                \
        __m256 acc[ROWS][NV];                                                                   \
        _Pragma("GCC unroll 4") for (int r = 0; r < ROWS; r++) {                                \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++)                                \
                acc[r][v] = first ? _mm256_setzero_ps()                                         \
                            : TAIL && v == NV - 1 ? _mm256_maskload_ps(c + r * ldc + 8 * v, last) \
                            : _mm256_loadu_ps(c + r * ldc + 8 * v);                             \
            _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);                             \
            _mm_prefetch((const char *)(c + r * ldc + 8 * NV - 1), _MM_HINT_T0);                \
        }                                                                                       \
        _Pragma("GCC unroll 2") for (long kk = 0; kk < kend; kk++) {                            \
            __m256 bv[NV];                                                                      \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++)                                \
                bv[v] = TAIL && v == NV - 1 ? _mm256_maskload_ps(b + 8 * v, last)               \
                                            : _mm256_loadu_ps(b + 8 * v);                       \
            _Pragma("GCC unroll 4") for (int r = 0; r < ROWS; r++) {                            \
                __m256 av = _mm256_broadcast_ss(ap + r * rs);                                   \
                _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++)                            \
                    acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);                          \
            }                                                                                   \
            _mm_prefetch((const char *)(b + PF * ldb), _MM_HINT_T0);                            \
            if (NV > 1) _mm_prefetch((const char *)(b + PF * ldb + 8 * NV - 1), _MM_HINT_T0);   \
            ap += ks;                                                                           \
            b += ldb;                                                                           \
        }                                                                                       \
        if (!t->last) { /* the partial sums, for the next block of K */                        \
            _Pragma("GCC unroll 4") for (int r = 0; r < ROWS; r++)                              \
                _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) {                          \
                    if (TAIL && v == NV - 1)                                                    \
                        _mm256_maskstore_ps(c + r * ldc + 8 * v, last, acc[r][v]);              \
                    else _mm256_storeu_ps(c + r * ldc + 8 * v, acc[r][v]);                      \
                }                                                                               \
            continue;                                                                           \
        }                                                                                       \
        _Pragma("GCC unroll 4") for (int r = 0; r < ROWS; r++) {                                \
            const __m256 bb = _mm256_set1_ps(bias ? bias[r] : 0.0f);                            \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) {                              \
                const int part = TAIL && v == NV - 1;                                           \
                __m256 x = _mm256_fmadd_ps(acc[r][v], alpha, bb);                               \
                if (cbias)                                                                      \
                    x = _mm256_add_ps(x, part ? _mm256_maskload_ps(cbias + 8 * v, last)         \
                                              : _mm256_loadu_ps(cbias + 8 * v));                \
                mi_epi_store_avx2(c + r * ldc + 8 * v, res ? res + r * ldr + 8 * v : NULL, x,   \
                                  part, last, lo, hi, t->act, _mm256_set1_ps(t->act_alpha),     \
                                  _mm256_set1_ps(t->act_beta));                                 \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
}
#define MICRO2_ROWS(ROWS, T) MICRO2(ROWS, 1, T) MICRO2(ROWS, 2, T) MICRO2(ROWS, 3, T)
#define MICRO2_ALL(T) MICRO2_ROWS(1, T) MICRO2_ROWS(2, T) MICRO2_ROWS(3, T) MICRO2_ROWS(4, T)
MICRO2_ALL(0)
MICRO2_ALL(1)

typedef void (*micro2_fn)(const tile *, __m256i);
#define M2_ROW(T, ROWS) {micro2_##T##_##ROWS##_1, micro2_##T##_##ROWS##_2, micro2_##T##_##ROWS##_3}
#define M2_TABLE(T) {M2_ROW(T, 1), M2_ROW(T, 2), M2_ROW(T, 3), M2_ROW(T, 4)}
static const micro2_fn micros2[2][4][3] = {M2_TABLE(0), M2_TABLE(1)};

/* one column of a packed 8-row panel (see gemv512): one vector of 8 rows per k */
AVX2 static void gemv2(const tile *t) {
    const float *restrict ap = t->a, *restrict x = t->b;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    long k = t->k, kk = 0;
    for (; kk + 8 <= k; kk += 8) {
        _Pragma("GCC unroll 8") for (int q = 0; q < 8; q += 2)
            _mm_prefetch((const char *)(ap + (kk + GEMV_PF + q) * MR), _MM_HINT_T0);
        _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++)
            acc[j & 3] = _mm256_fmadd_ps(_mm256_loadu_ps(ap + (kk + j) * MR),
                                         _mm256_broadcast_ss(x + kk + j), acc[j & 3]);
    }
    __m256 y = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    for (; kk < k; kk++)
        y = _mm256_fmadd_ps(_mm256_loadu_ps(ap + kk * MR), _mm256_broadcast_ss(x + kk), y);
    float out[MR];
    _mm256_storeu_ps(out, y);
    gemv_store(t, out);
}

/* rows [0, rows) of a column tile (`t` set up for its first row; A packed or strided, as
 * `packed` says; `panels` the full 8-row panels in it): the groups of 4 rows in one call, the
 * rows after them (a packed partial panel, or fewer than 4) in one or two more */
AVX2 static void tile2(const tile *t, long rows, long cols, int packed, long panels, int gemv) {
    long nv = (cols + 7) / 8, tail = cols - 8 * (nv - 1);
    __m256i last = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)tail),
                                      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const int tl = tail < 8;
    tile w = *t;
    long done;
    if (gemv) { /* packed A, one contiguous column */
        for (long p = 0; p < panels; p++) {
            w.a = t->a + p * MR * t->kfull;
            w.c = t->c + p * MR * t->ldc;
            w.bias = t->bias ? t->bias + p * MR : NULL;
            w.res = t->res ? t->res + p * MR * t->ldr : NULL;
            gemv2(&w);
        }
        done = panels * MR;
    } else {
        w.groups = packed ? 2 * panels : rows / 4;
        w.a_ps = packed ? MR * t->kfull : MR * t->rs;
        w.a_hs = packed ? 4 : 4 * t->rs;
        if (packed) w.ks = MR;
        if (w.groups) micros2[tl][3][nv - 1](&w, last);
        done = 4 * w.groups;
    }
    /* the rest: fewer than 4 strided rows, or the packed partial panel (r rows per k) */
    const float *a = packed ? t->a + (done / MR) * MR * t->kfull : t->a + done * t->rs;
    long ks = packed ? rows - done : t->ks;
    for (long h = done; h < rows; h += 4) {
        long r = lmin(4, rows - h);
        w.a = a + (packed ? h - done : (h - done) * t->rs);
        w.ks = ks;
        w.groups = 1;
        w.c = t->c + h * t->ldc;
        w.bias = t->bias ? t->bias + h : NULL;
        w.res = t->res ? t->res + h * t->ldr : NULL;
        micros2[tl][r - 1][nv - 1](&w, last);
    }
}

/* B's block of a column tile (k rows of `cols` columns, rows ldb apart: an im2col buffer, a
 * convolution's input planes) copied into `dst`, k rows of 8 * nv floats (zero past `cols`):
 * the tile kernels then read one contiguous, aligned stream that stays in L1 for every row
 * group, where rows ldb apart touched 2-3 lines each (and a page each at 56x56 maps) */
AVX2 static void pack_b_block(const float *restrict b, long ldb, long k, long cols,
                              float *restrict dst) {
    long nv = (cols + 7) / 8, tail = cols - 8 * (nv - 1);
    __m256i last = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)tail),
                                      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    long w = 8 * nv;
    for (long kk = 0; kk < k; kk++) {
        const float *src = b + kk * ldb;
        float *out = dst + kk * w;
        for (long v = 0; v + 1 < nv; v++) _mm256_store_ps(out + 8 * v, _mm256_loadu_ps(src + 8 * v));
        _mm256_store_ps(out + 8 * (nv - 1), tail == 8 ? _mm256_loadu_ps(src + 8 * (nv - 1))
                                                      : _mm256_maskload_ps(src + 8 * (nv - 1), last));
    }
}
#endif

static int detect_isa(void) {
#if HAVE_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma"))
        return ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return ISA_AVX2;
#endif
    return ISA_PLAIN;
}

/* -1 until the first product; relaxed: a job reads it once, into its gemm_job, which the pool
 * hands to the workers (a test switching it while another thread's product runs changes
 * the next product, not that one) */
static atomic_int isa = -1;

/* tests: run the kernels of `level` (ISA_*) or, where the CPU lacks them, the best it has;
 * returns the level now in use */
int mi_gemm_set_isa(int level) {
    int best = detect_isa();
    int use = level < 0 ? best : (level < best ? level : best);
    atomic_store_explicit(&isa, use, memory_order_relaxed);
    return use;
}

/* tests: the plain C loops even where a vector kernel could run */
void mi_gemm_set_plain(int plain) { mi_gemm_set_isa(plain ? ISA_PLAIN : -1); }

/* the kernels in use: 0 plain C, 1 AVX2, 2 AVX-512 */
int mi_gemm_isa(void) { return cached_isa(&isa, detect_isa); }

/* whether a vector kernel runs the products (the Python side otherwise keeps BLAS) */
int mi_gemm_available(void) { return mi_gemm_isa() != ISA_PLAIN; }

/* the plain C tile: rows x cols of C, each a sum in k order */
static void tile_plain(const tile *t, long rows, long cols) {
    for (long r = 0; r < rows; r++)
        for (long j = 0; j < cols; j++) {
            float s = 0.0f;
            for (long kk = 0; kk < t->k; kk++)
                s += t->a[r * t->rs + kk * t->ks] * t->b[kk * t->ldb + j];
            s = s * t->alpha + (t->bias ? t->bias[r] : 0.0f) + (t->cbias ? t->cbias[j] : 0.0f) +
                (t->res ? t->res[r * t->ldr + j] : 0.0f);
            s = s < t->lo ? t->lo : s;
            t->c[r * t->ldc + j] = mi_epi_scalar(s > t->hi ? t->hi : s, t->act, t->act_alpha,
                                                 t->act_beta);
        }
}

/* the calling thread's buffer for a packed block of B: BPACK_K rows of NR2 floats, 64-byte
 * aligned (NULL where it cannot be had: B is then read in place) */
#ifndef BPACK_ROWS
#define BPACK_ROWS 96
#endif
#ifndef BPACK_LDB
#define BPACK_LDB 256
#endif
#ifndef BPACK_K
#define BPACK_K 1024
#endif
#if HAVE_X86
static float *bpack_buffer(void) {
    static _Thread_local float *buf;
    if (!buf) buf = aligned_alloc(64, sizeof(float) * BPACK_K * NR2);
    return buf;
}
#endif

/* AVX-512 tiles of 48 columns read one panel of NB; panels of NR2 take tiles of NR2 */
static long tile_cols(const gemm_job *g) {
    return g->isa == ISA_AVX512 && g->bnb == NB ? NR512 : NR2;
}

/* rows [i0, i1) (i0 a multiple of MR) of column tile jt of product q, k in [k0, k0 + kc) */
static void run_block(const gemm_job *g, long q, long i0, long i1, long jt, long k0) {
    long q0 = g->batch1 == 1 ? q : q / g->batch1, q1 = g->batch1 == 1 ? 0 : q % g->batch1;
    long nr = tile_cols(g);
    long j = jt * nr, cols = lmin(nr, g->n - j), rows = i1 - i0;
    tile t;
    const float *a = g->a + q0 * g->a_s0 + q1 * g->a_s1;
    if (g->a_packed) {
        t.a = a + panel_offset(i0 / MR, g->k);
        t.rs = 1;
        t.ks = lmin(MR, rows);
    } else {
        t.a = a + i0 * g->a_rs;
        t.rs = g->a_rs;
        t.ks = g->a_ks;
    }
    const float *b = g->b + q0 * g->b_s0 + q1 * g->b_s1;
    if (g->b_packed) { /* nr divides the panel's width: the tile lies in one panel */
        long p0 = j / g->bnb * g->bnb;
        t.ldb = lmin(g->bnb, g->n - p0);
        t.b = b + p0 * g->k + k0 * t.ldb + (j - p0);
    } else {
        t.ldb = g->ldb;
        t.b = b + k0 * g->ldb + j;
    }
    t.c = g->c + q0 * g->c_s0 + q1 * g->c_s1 + i0 * g->ldc + j;
    t.ldc = g->ldc;
    t.bias = g->bias ? g->bias + i0 : NULL;
    t.cbias = g->cbias ? g->cbias + j : NULL;
    t.res = g->res ? g->res + q0 * g->r_s0 + q1 * g->r_s1 + i0 * g->ldr + j : NULL;
    t.ldr = g->ldr;
    t.k = lmin(g->kc, g->k - k0);
    t.k0 = k0;
    t.kfull = g->k;
    t.first = k0 == 0;
    t.last = k0 + t.k >= g->k;
    t.groups = 1;
    t.a_ps = t.a_hs = 0;
    t.alpha = g->alpha;
    t.lo = g->lo;
    t.hi = g->hi;
    t.act = g->act;
    t.act_alpha = g->act_alpha;
    t.act_beta = g->act_beta;
    /* packed A, one contiguous column, all of K: the matrix-vector kernels, panel by panel */
    int gemv = cols == 1 && g->a_packed && t.ldb == 1 && t.first && t.last;
    long panels = g->a_packed ? rows / MR : 0;
#if HAVE_X86
    if (g->isa == ISA_AVX2) {
        /* B in place in short rows (7x7 and 14x14 maps, narrow im2col bands), rows enough
         * to share its block (fewer: as fast in place, ResNet's 64-row layers): packed
         * first (2048x1024x49 and 512x4608x49, rows of 49 floats that start anywhere in a
         * line: 30-37 -> 40-48 GFLOP/s; long rows, 1x1 convolutions over 19x25 to 76x100
         * maps, ran 15-35% slower packed) */
        if (!g->b_packed && !gemv && rows >= BPACK_ROWS && t.k <= BPACK_K &&
            t.ldb <= BPACK_LDB) {
            float *buf = bpack_buffer();
            if (buf) {
                pack_b_block(t.b, t.ldb, t.k, cols, buf);
                t.b = buf;
                t.ldb = 8 * ((cols + 7) / 8);
            }
        }
        tile2(&t, rows, cols, g->a_packed, panels, gemv);
        return;
    }
#endif
    for (long i = 0; i < rows; i += MR) { /* AVX-512 and plain C: panel by panel */
        long r = lmin(MR, rows - i);
        tile p = t;
        p.a = g->a_packed ? t.a + panel_offset(i / MR, g->k) : t.a + i * t.rs;
        p.ks = g->a_packed ? r : t.ks;
        p.c = t.c + i * t.ldc;
        p.bias = t.bias ? t.bias + i : NULL;
        p.res = t.res ? t.res + i * t.ldr : NULL;
#if HAVE_X86
        if (g->isa == ISA_AVX512) {
            if (gemv && r == MR) {
                gemv512(&p);
                continue;
            }
            long nv = (cols + 15) / 16, tail = cols - 16 * (nv - 1);
            __mmask16 last = (__mmask16)(tail == 16 ? 0xFFFF : (1u << tail) - 1u);
            micros512[!g->a_packed][r - 1][nv - 1](&p, last);
            continue;
        }
#endif
        tile_plain(&p, r, cols);
    }
}

/* AVX2: rows per block of A that the column tiles pass in turn, so that the block stays in
 * L2 (A_BLOCK bytes) instead of A coming from L3 for each column tile (3136 x 384 x 384 on
 * one Zen 3 core: 20-35 -> 55-70 GFLOP/s; 128 KiB blocks no slower than 256 KiB); the
 * others: all rows */
#ifndef A_BLOCK
#define A_BLOCK (128L * 1024)
#endif
/* AVX-512, rows split between threads: rows per block whose A slice (rows x kc) stays in L2
 * while every column tile passes it */
#ifndef A_SLICE
#define A_SLICE (512L * 1024)
#endif
#ifndef MIN_ROWS
#define MIN_ROWS (8 * MR)
#endif
static long row_block(const gemm_job *g) {
    if (g->isa != ISA_AVX2) return lmax(g->m, 1);
    long mc = lmax(MIN_ROWS, A_BLOCK / (4 * lmax(g->kc, 1)) / MR * MR);
    /* up to 7/4 of a block: all the rows in one, B streamed once rather than again for a
     * short last block (ViT's 197 rows, K = 768, weights from memory: 128 + 69 rows took
     * 5-10% longer than 197 at once; 256 rows in two blocks as fast as in one) */
    return g->m <= mc * 7 / 4 ? lmax(g->m, 1) : mc;
}

/* part `part` of `parts`. One product: many column tiles and more columns than rows (or one
 * thread): the column tiles are split, each B panel (K x tile columns) stays in cache while
 * every row panel of A passes it. Otherwise (thin outputs, 7x7 maps; A the larger operand):
 * the row panels are split, and each A panel is read once for all the column tiles (A, the
 * weights, is the large operand there: re-reading it per column tile doubled the time of
 * 2048x1024x49); on AVX-512 in slices of rows whose block of K stays in L2 while the column
 * tiles pass (A_SLICE). Two threads splitting the column tiles of 512x1280x508 (Magika's
 * 5x1 convolution) each read all of A and ran no faster than one (4.1 -> 3.9 ms); splitting
 * its rows, 2.3 ms. Several products: each part a run of (product, column tile) pairs. */
static void run_part(const gemm_job *g, int part, int parts) {
    long mp = (g->m + MR - 1) / MR, nt = (g->n + tile_cols(g) - 1) / tile_cols(g);
    long count = g->batch0 * g->batch1;
    if (count > 1) {
        long total = nt * count;
        for (long x = total * part / parts; x < total * (part + 1) / parts; x++)
            for (long k0 = 0; k0 < g->k || k0 == 0; k0 += g->kc)
                run_block(g, x / nt, 0, g->m, x % nt, k0);
    } else if ((nt >= 4 * parts && (parts == 1 || g->m < g->n)) || mp < parts) {
        long mc = row_block(g);
        for (long i0 = 0; i0 < g->m; i0 += mc)
            for (long k0 = 0; k0 < g->k || k0 == 0; k0 += g->kc)
                for (long jt = nt * part / parts; jt < nt * (part + 1) / parts; jt++)
                    run_block(g, 0, i0, lmin(g->m, i0 + mc), jt, k0);
    } else { /* AVX2: blocks of rows (each in L2 while the column tiles pass); else panels */
        long i1 = lmin(g->m, mp * (part + 1) / parts * MR), ib = mp * part / parts * MR;
        long step = g->isa == ISA_AVX2 ? row_block(g)
                    : lmax(MR, A_SLICE / (4 * lmax(g->kc, 1)) / MR * MR);
        for (long i0 = ib; i0 < i1; i0 += step)
            for (long k0 = 0; k0 < g->k || k0 == 0; k0 += g->kc)
                for (long jt = 0; jt < nt; jt++)
                    run_block(g, 0, i0, lmin(i1, i0 + step), jt, k0);
    }
}

static void gemm_part(const void *job, int part, int parts) {
    run_part((const gemm_job *)job, part, parts);
}

static int run_job(gemm_job *g) {
    g->isa = mi_gemm_isa();
    g->bnb = g->b_packed == 2 ? NR2 : NB;
    /* blocks of K where A has rows enough to reuse a B block (not a decoding step's row) */
    g->kc = g->isa != ISA_PLAIN && g->m > 2 * MR && g->n > 1 && g->k > KC_FROM ? KC
                                                                              : lmax(g->k, 1);
    long count = g->batch0 * g->batch1;
    if (g->m == 0 || g->n == 0 || count == 0) return MI_OK;
    /* tiny products are not worth waking the pool */
    if (g->m * g->n * lmax(g->k, 1) * count < 32768L) run_part(g, 0, 1);
    else mi_pool_run(gemm_part, g);
    return MI_OK;
}

int mi_gemm_f32(const mi_gemm_args *a) {
    if (!a->a || !a->b || !a->c || ANY_NEGATIVE(a->m, a->n, a->k, a->ldb, a->ldc, a->ldr) ||
        !mi_epi_valid(a->act))
        return MI_EARGS;
    gemm_job g = {.a = a->a, .b = a->b, .c = a->c, .bias = a->bias, .res = a->res, .m = a->m,
                  .n = a->n, .k = a->k, .ldb = a->ldb, .ldc = a->ldc, .ldr = a->ldr,
                  .batch0 = 1, .batch1 = 1, .a_packed = 1, .alpha = 1.0f, .lo = a->lo,
                  .hi = a->hi, .act = a->act, .act_alpha = a->act_alpha,
                  .act_beta = a->act_beta};
    return run_job(&g);
}

int mi_gemm_batch_f32(const mi_gemm_batch_args *a) {
    if (!a->a || !a->b || !a->c ||
        ANY_NEGATIVE(a->count, a->a_stride, a->b_stride, a->c_stride, a->ldb, a->ldc, a->m,
                     a->n, a->k))
        return MI_EARGS;
    gemm_job g = {.a = a->a, .b = a->b, .c = a->c, .m = a->m, .n = a->n, .k = a->k,
                  .ldb = a->ldb, .ldc = a->ldc, .batch0 = a->count, .batch1 = 1,
                  .a_s0 = a->a_stride, .b_s0 = a->b_stride, .c_s0 = a->c_stride, .a_packed = 1,
                  .alpha = 1.0f, .lo = -INFINITY, .hi = INFINITY};
    return run_job(&g);
}

/* strides may be below 0 or 0 for what is read (a broadcast operand), not for C */
int mi_matmul_f32(const mi_matmul_args *a) {
    if (!a->a || !a->b || !a->c ||
        ANY_NEGATIVE(a->m, a->n, a->k, a->ldc, a->batch0, a->batch1, a->c_s0, a->c_s1))
        return MI_EARGS;
    gemm_job g = {.a = a->a, .b = a->b, .c = a->c, .bias = a->bias, .cbias = a->cbias,
                  .res = a->res, .m = a->m, .n = a->n, .k = a->k, .a_rs = a->a_rs,
                  .a_ks = a->a_ks, .ldb = a->ldb, .ldc = a->ldc, .ldr = a->ldr,
                  .batch0 = a->batch0, .batch1 = a->batch1, .a_s0 = a->a_s0, .a_s1 = a->a_s1,
                  .b_s0 = a->b_s0, .b_s1 = a->b_s1, .c_s0 = a->c_s0, .c_s1 = a->c_s1,
                  .r_s0 = a->r_s0, .r_s1 = a->r_s1, .a_packed = a->a_packed != 0,
                  .b_packed = a->b_packed == 2 ? 2 : a->b_packed != 0, .alpha = a->alpha,
                  .lo = a->lo, .hi = a->hi};
    return run_job(&g);
}
