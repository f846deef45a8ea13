/* MatMulNBits with 4-bit weights (com.microsoft): C (m x n) = A (m x k, float32) times the
 * block-quantized B^T, w[j][kk] = (q[j][kk] - zp[j][blk]) * scale[j][blk] with blk = kk / block,
 * plus an optional bias, on the library's thread pool (columns split between the threads).
 *
 * B is repacked once (mi_nbits_pack_q4: by the build for constant weights, stored so in the
 * engine, in exactly the N * k_blocks * block / 2 bytes of the ONNX layout) into panels of 16
 * columns. With kp = k_blocks * block (a multiple of 16), panel p starts at byte p * 8 * kp
 * and holds kp / 8 groups of 8 k; a group of a full panel is 64 bytes, byte j * 4 + t holding
 * q[k0 + t][j] in its low nibble and q[k0 + 4 + t][j] in its high one (the last, partial panel
 * of w columns: w * 4 bytes per group, the same order). Both computations read that layout:
 * a 64-byte load gives 16 columns x 4 k of unsigned bytes with one AND (low nibbles) or a
 * shift and an AND (high nibbles), vpdpbusd's operand as it is; the float path expands the
 * same bytes into floats. The caller passes the partial panel again padded to 16 columns
 * (`blast`) and the scales and zero points as floats in the panels' order, (panels, kb, 16).
 *
 * Two computations, as onnxruntime's MLAS SQNBitGemm kernels (accuracy_level):
 * - float (accuracy_level 0-3): from 5 rows up, each pair of panels is dequantized,
 *   (float(q) - zp) * scale (the weights onnxruntime's CompFp32 path makes, bit for bit),
 *   into a buffer of k x 32 floats (the thread's), then every tile of rows is multiplied by
 *   it with FMA chains along k (AVX-512: 8 rows x 32 columns; AVX2+FMA: 6 rows x 16; plain
 *   C: fmaf); up to 4 rows (a decoder's step) each group of 8 k of a panel is dequantized in
 *   registers and used by every row at once (no buffer). Every kernel computes each output
 *   as the same chain fma(a[k], w[k], acc) from k = 0 up, then + bias, so the results are
 *   bit-identical between kernels and thread counts.
 * - int8 (accuracy_level 4): A is quantized per row and block of k to int8 (scale = max|a| /
 *   127, round half to even), the integer dot products of each block with the 4-bit values
 *   are exact (AVX-512 VNNI: vpdpbusd, the nibbles as its unsigned operand; AVX2: vpmaddubsw,
 *   whose int16 pair sums cannot saturate here, 2 * 15 * 127 < 32767, then vpmaddwd; plain
 *   C), and each block is added in float as fma(float(dot) - zp * sum(qa), sa * scale, acc):
 *   exact integers until that fma, the same float operations in every kernel.
 *
 * Kernels, chosen once by the CPU's features (mi_nbits_isa; MINI_INFER_NBITS_ISA=plain|avx2|
 * avx512vnni caps the choice, as mi_nbits_set_isa does in tests): AVX-512 (F, BW and VNNI),
 * AVX2 with FMA, plain C.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_args.h"
#include "_common.h"
#include "_pool.h"

#define NBP 16 /* columns per panel */

enum { NISA_PLAIN = 0, NISA_AVX2 = 1, NISA_AVX512 = 2 };

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define N_AVX2 __attribute__((target("avx2,fma")))
#define N_AVX512 __attribute__((target("avx512f,avx512bw,avx512vnni,avx2,fma")))
#define N_HAVE_X86 1
#else
#define N_HAVE_X86 0
#endif

/* ---- packing B --------------------------------------------------------------------------- */

int mi_nbits_pack_q4(const mi_nbits_pack_args *p) {
    const uint8_t *b = p->b;
    uint8_t *out = p->out;
    const long n = p->n, kb = p->kb, block = p->block;
    if (!b || !out || ANY_NEGATIVE(n, kb) || block < 16 || block % 16) return MI_EARGS;
    const long kp = kb * block, half = kp / 2; /* bytes per column */
    for (long j0 = 0; j0 < n; j0 += NBP) {
        long w = lmin(NBP, n - j0);
        uint8_t *dst = out + j0 * half;
        for (long g = 0; g < kp / 8; g++, dst += w * 4)
            for (long j = 0; j < w; j++) {
                const uint8_t *col = b + (j0 + j) * half + g * 4; /* k = 8g .. 8g + 7 */
                for (long t = 0; t < 4; t++) {
                    uint8_t lo = (uint8_t)((col[t / 2] >> (4 * (t % 2))) & 15);
                    uint8_t hi = (uint8_t)((col[2 + t / 2] >> (4 * (t % 2))) & 15);
                    dst[j * 4 + t] = (uint8_t)(lo | hi << 4);
                }
            }
    }
    return MI_OK;
}

/* ---- the kernels chosen at load ----------------------------------------------------------- */

static int n_supported(int level) {
#if N_HAVE_X86
    __builtin_cpu_init();
    switch (level) {
    case NISA_AVX2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case NISA_AVX512:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vnni");
    default: return level == NISA_PLAIN;
    }
#else
    return level == NISA_PLAIN;
#endif
}

static int n_detect(void) {
    int best = NISA_PLAIN;
    if (n_supported(NISA_AVX2)) best = NISA_AVX2;
    if (n_supported(NISA_AVX512)) best = NISA_AVX512;
    const char *cap = getenv("MINI_INFER_NBITS_ISA");
    if (cap) {
        static const char *names[] = {"plain", "avx2", "avx512vnni"};
        for (int i = 0; i < 3; i++)
            if (strcmp(cap, names[i]) == 0 && i < best) {
                best = i;
                break;
            }
    }
    return best;
}

static atomic_int n_isa = -1;

/* the kernels in use: 0 plain C, 1 AVX2 + FMA, 2 AVX-512 VNNI */
int mi_nbits_isa(void) { return cached_isa(&n_isa, n_detect); }

/* tests: run the kernels of `level` where the CPU has them (else the detected ones; level < 0:
 * the detected ones); returns the level now in use */
int mi_nbits_set_isa(int level) {
    int use = level >= 0 && n_supported(level) ? level : n_detect();
    atomic_store_explicit(&n_isa, use, memory_order_relaxed);
    return use;
}

int mi_nbits_supported(int level) { return n_supported(level); }

/* ---- the job ------------------------------------------------------------------------------ */

typedef struct {
    const mi_nbits_args *a;
    int isa;
    long np, kp, kg; /* panels, padded k, groups of 8 k that hold the k values */
    float *buf0;     /* part 0's dequantization buffer (the others: mi_pool_scratch) */
    /* int8: A quantized per row and block */
    const int8_t *qa; /* (m, kp) */
    const float *sa;  /* (m, kb) */
    const int32_t *asum; /* (m, kb) */
} nbjob;

static const uint8_t *panel_bytes(const nbjob *g, long p) {
    return (p + 1) * NBP <= g->a->n ? g->a->bp + p * 8 * g->kp : g->a->blast;
}

/* ---- float: dequantization into k x 32 floats ----------------------------------------------- */

/* panel `src` (16 columns) into columns [0, 16) of buf (rows 32 floats apart), k rows from
 * 0 to 8 * kg */
static void deq_plain(const uint8_t *src, const float *s, const float *z, long kg, long block,
                      float *buf) {
    for (long g = 0; g < kg; g++, src += 64) {
        long blk = 8 * g / block;
        const float *sv = s + blk * NBP, *zv = z ? z + blk * NBP : NULL;
        for (long j = 0; j < NBP; j++) {
            float sj = sv[j], zj = zv ? zv[j] : 8.0f;
            for (long t = 0; t < 4; t++) {
                uint8_t v = src[j * 4 + t];
                buf[(8 * g + t) * 32 + j] = ((float)(v & 15) - zj) * sj;
                buf[(8 * g + 4 + t) * 32 + j] = ((float)(v >> 4) - zj) * sj;
            }
        }
    }
}

#if N_HAVE_X86
N_AVX2 static void deq_avx2(const uint8_t *src, const float *s, const float *z, long kg,
                            long block, float *buf) {
    const __m256i m15 = _mm256_set1_epi32(15);
    const __m256 eight = _mm256_set1_ps(8.0f);
    for (long g = 0; g < kg; g++, src += 64) {
        long blk = 8 * g / block;
        for (int h = 0; h < 2; h++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(src + 32 * h));
            __m256 sv = _mm256_loadu_ps(s + blk * NBP + 8 * h);
            __m256 zv = z ? _mm256_loadu_ps(z + blk * NBP + 8 * h) : eight;
            float *row = buf + 8 * g * 32 + 8 * h;
#define DEQ_T(t)                                                                             \
    do {                                                                                     \
        __m256i lo = _mm256_and_si256(_mm256_srli_epi32(v, 8 * (t)), m15);                   \
        __m256i hi = _mm256_and_si256(_mm256_srli_epi32(v, 8 * (t) + 4), m15);               \
        _mm256_storeu_ps(row + (t) * 32,                                                     \
                         _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(lo), zv), sv));       \
        _mm256_storeu_ps(row + (4 + (t)) * 32,                                               \
                         _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(hi), zv), sv));       \
    } while (0)
            DEQ_T(0);
            DEQ_T(1);
            DEQ_T(2);
            DEQ_T(3);
#undef DEQ_T
        }
    }
}
#endif

static void deq(const nbjob *g, long p, float *buf) {
    const mi_nbits_args *a = g->a;
    if (p >= g->np) { /* no second panel: zeros */
        for (long kk = 0; kk < 8 * g->kg; kk++) memset(buf + kk * 32, 0, sizeof(float) * NBP);
        return;
    }
    const float *s = a->scales + p * a->kb * NBP, *z = a->zp ? a->zp + p * a->kb * NBP : NULL;
#if N_HAVE_X86
    if (g->isa >= NISA_AVX2) {
        deq_avx2(panel_bytes(g, p), s, z, g->kg, a->block, buf);
        return;
    }
#endif
    deq_plain(panel_bytes(g, p), s, z, g->kg, a->block, buf);
}

/* ---- float: rows x 32 columns of A times the buffer ---------------------------------------- */

/* t (rows x 32) = A rows . buf (k x 32): fma chains along k */
static void fmul_plain(const float *a, long lda, const float *b, long k, long rows, float *t) {
    for (long r = 0; r < rows; r++)
        for (long j = 0; j < 32; j++) {
            float acc = 0.0f;
            for (long kk = 0; kk < k; kk++) acc = fmaf(a[r * lda + kk], b[kk * 32 + j], acc);
            t[r * 32 + j] = acc;
        }
}

#if N_HAVE_X86
#define INLINE static inline __attribute__((always_inline))

N_AVX512 INLINE void f512_rows(const float *a, long lda, const float *b, long k, float *t,
                      const int rows) {
    __m512 c0[8], c1[8];
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++) c0[r] = c1[r] = _mm512_setzero_ps();
    for (long kk = 0; kk < k; kk++) {
        __m512 b0 = _mm512_loadu_ps(b + kk * 32), b1 = _mm512_loadu_ps(b + kk * 32 + 16);
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++) {
            __m512 av = _mm512_set1_ps(a[r * lda + kk]);
            c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
            c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++) {
        _mm512_storeu_ps(t + r * 32, c0[r]);
        _mm512_storeu_ps(t + r * 32 + 16, c1[r]);
    }
}

/* switch cases calling F(..., rows) with rows a constant: 1 .. 4, 1 .. 6 */
#define ROWS4_CASES(F, ...)                                                                  \
    case 1: F(__VA_ARGS__, 1); break;                                                        \
    case 2: F(__VA_ARGS__, 2); break;                                                        \
    case 3: F(__VA_ARGS__, 3); break;                                                        \
    case 4: F(__VA_ARGS__, 4); break
#define ROWS_CASES(F, ...)                                                                   \
    ROWS4_CASES(F, __VA_ARGS__);                                                             \
    case 5: F(__VA_ARGS__, 5); break;                                                        \
    case 6: F(__VA_ARGS__, 6); break

N_AVX512 static void fmul_512(const float *a, long lda, const float *b, long k, long rows,
                              float *t) {
    switch (rows) {
        ROWS_CASES(f512_rows, a, lda, b, k, t);
    case 7: f512_rows(a, lda, b, k, t, 7); break;
    case 8: f512_rows(a, lda, b, k, t, 8); break;
    default: break;
    }
}

/* AVX2: rows (up to 6) x 16 columns (half h of the buffer's 32) */
N_AVX2 INLINE void f256_rows(const float *a, long lda, const float *b, long k, float *t,
                      const int rows) {
    __m256 c0[6], c1[6];
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++) c0[r] = c1[r] = _mm256_setzero_ps();
    for (long kk = 0; kk < k; kk++) {
        __m256 b0 = _mm256_loadu_ps(b + kk * 32), b1 = _mm256_loadu_ps(b + kk * 32 + 8);
#pragma GCC unroll 6
        for (int r = 0; r < rows; r++) {
            __m256 av = _mm256_broadcast_ss(a + r * lda + kk);
            c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
            c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++) {
        _mm256_storeu_ps(t + r * 32, c0[r]);
        _mm256_storeu_ps(t + r * 32 + 8, c1[r]);
    }
}

N_AVX2 static void fmul_avx2(const float *a, long lda, const float *b, long k, long rows,
                             float *t) {
    for (int h = 0; h < 2; h++) switch (rows) {
            ROWS_CASES(f256_rows, a, lda, b + 16 * h, k, t + 16 * h);
        default: break;
        }
}
#endif

/* ---- float, up to 4 rows (a decoder's step): the panel dequantized in registers ---------- */

#define FEW_ROWS 4
/* K(0) .. K(7): a full group of 8 k, unrolled */
#define EIGHT_K(K)                                                                           \
    do {                                                                                     \
        K(0);                                                                                \
        K(1);                                                                                \
        K(2);                                                                                \
        K(3);                                                                                \
        K(4);                                                                                \
        K(5);                                                                                \
        K(6);                                                                                \
        K(7);                                                                                \
    } while (0)

#if N_HAVE_X86
/* t (rows x 16) = A rows . panel: each group of 8 k loaded once, its 16 x 8 weights made in
 * registers ((float(q) - zp) * scale, the buffer's values) and used by every row, k in order
 * (the same fma chains as the buffer's kernels) */
N_AVX512 INLINE void few512_rows(const float *a, long lda, const uint8_t *src, const float *s,
                                 const float *z, long k, long block, float *t, const int rows) {
    __m512 acc[FEW_ROWS];
#pragma GCC unroll 4
    for (int r = 0; r < rows; r++) acc[r] = _mm512_setzero_ps();
    const __m512i m15 = _mm512_set1_epi32(15);
    const long full = k / 8, rest = k % 8;
    __m512 sv = _mm512_setzero_ps(), zv = _mm512_set1_ps(8.0f);
    for (long g = 0; g <= full; g++) {
        long n_k = g < full ? 8 : rest;
        if (n_k == 0) break;
        if ((8 * g) % block == 0) {
            sv = _mm512_loadu_ps(s + 8 * g / block * NBP);
            if (z) zv = _mm512_loadu_ps(z + 8 * g / block * NBP);
        }
        __m512i v = _mm512_loadu_si512((const void *)(src + 64 * g));
        /* k = 8g + tk: byte tk % 4 of each column's 4, nibble tk / 4 */
#define FEW512_K(tk)                                                                         \
    do {                                                                                     \
        __m512i q_ = _mm512_and_si512(_mm512_srli_epi32(v, 8 * ((tk) % 4) + 4 * ((tk) / 4)), \
                                      m15);                                                  \
        __m512 w_ = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(q_), zv), sv);            \
        _Pragma("GCC unroll 4") for (int r = 0; r < rows; r++) acc[r] =                      \
            _mm512_fmadd_ps(_mm512_set1_ps(a[r * lda + 8 * g + (tk)]), w_, acc[r]);          \
    } while (0)
        if (n_k == 8) {
            EIGHT_K(FEW512_K);
        } else {
            for (int tk = 0; tk < n_k; tk++) FEW512_K(tk);
        }
#undef FEW512_K
    }
#pragma GCC unroll 4
    for (int r = 0; r < rows; r++) _mm512_storeu_ps(t + r * 32, acc[r]);
}

N_AVX512 static void few_512(const float *a, long lda, const uint8_t *src, const float *s,
                             const float *z, long k, long block, long rows, float *t) {
    switch (rows) {
        ROWS4_CASES(few512_rows, a, lda, src, s, z, k, block, t);
    default: break;
    }
}

/* AVX2: the same, columns 8h .. 8h + 7 */
N_AVX2 INLINE void few256_rows(const float *a, long lda, const uint8_t *src, const float *s,
                               const float *z, long k, long block, float *t, const int rows) {
    for (int h = 0; h < 2; h++) {
        __m256 acc[FEW_ROWS];
#pragma GCC unroll 4
        for (int r = 0; r < rows; r++) acc[r] = _mm256_setzero_ps();
        const __m256i m15 = _mm256_set1_epi32(15);
        const long full = k / 8, rest = k % 8;
        __m256 sv = _mm256_setzero_ps(), zv = _mm256_set1_ps(8.0f);
        for (long g = 0; g <= full; g++) {
            long n_k = g < full ? 8 : rest;
            if (n_k == 0) break;
            if ((8 * g) % block == 0) {
                sv = _mm256_loadu_ps(s + 8 * g / block * NBP + 8 * h);
                if (z) zv = _mm256_loadu_ps(z + 8 * g / block * NBP + 8 * h);
            }
            __m256i v = _mm256_loadu_si256((const __m256i *)(src + 64 * g + 32 * h));
#define FEW256_K(tk)                                                                         \
    do {                                                                                     \
        __m256i q_ = _mm256_and_si256(_mm256_srli_epi32(v, 8 * ((tk) % 4) + 4 * ((tk) / 4)), \
                                      m15);                                                  \
        __m256 w_ = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(q_), zv), sv);            \
        _Pragma("GCC unroll 4") for (int r = 0; r < rows; r++) acc[r] =                      \
            _mm256_fmadd_ps(_mm256_broadcast_ss(a + r * lda + 8 * g + (tk)), w_, acc[r]);     \
    } while (0)
            if (n_k == 8) {
                EIGHT_K(FEW256_K);
            } else {
                for (int tk = 0; tk < n_k; tk++) FEW256_K(tk);
            }
#undef FEW256_K
        }
#pragma GCC unroll 4
        for (int r = 0; r < rows; r++) _mm256_storeu_ps(t + r * 32 + 8 * h, acc[r]);
    }
}

N_AVX2 static void few_avx2(const float *a, long lda, const uint8_t *src, const float *s,
                            const float *z, long k, long block, long rows, float *t) {
    switch (rows) {
        ROWS4_CASES(few256_rows, a, lda, src, s, z, k, block, t);
    default: break;
    }
}
#endif

/* panel p for all (at most FEW_ROWS) rows */
static void few_unit(const nbjob *g, long p) {
    const mi_nbits_args *a = g->a;
    const float *s = a->scales + p * a->kb * NBP, *z = a->zp ? a->zp + p * a->kb * NBP : NULL;
    const long j0 = p * NBP, w = lmin(NBP, a->n - j0);
    float t[FEW_ROWS * 32];
#if N_HAVE_X86
    if (g->isa == NISA_AVX512)
        few_512(a->a, a->lda, panel_bytes(g, p), s, z, a->k, a->block, a->m, t);
    else
        few_avx2(a->a, a->lda, panel_bytes(g, p), s, z, a->k, a->block, a->m, t);
#endif
    for (long r = 0; r < a->m; r++) {
        float *dst = a->c + r * a->ldc + j0;
        for (long j = 0; j < w; j++) dst[j] = a->bias ? t[r * 32 + j] + a->bias[j0 + j] : t[r * 32 + j];
    }
}

static void few_part(const void *job, int part, int parts) {
    const nbjob *g = job;
    long begin, end;
    mi_pool_share(g->np, part, parts, &begin, &end);
    for (long p = begin; p < end; p++) few_unit(g, p);
}

static long f_mr(int isa) { return isa == NISA_AVX512 ? 8 : isa == NISA_AVX2 ? 6 : 4; }

/* the pair of panels u: dequantized into buf, then every tile of rows */
static void float_unit(const nbjob *g, long u, float *buf) {
    const mi_nbits_args *a = g->a;
    deq(g, 2 * u, buf);
    deq(g, 2 * u + 1, buf + NBP);
    const long mr = f_mr(g->isa), j0 = 2 * u * NBP, w = lmin(2 * NBP, a->n - j0);
    float t[8 * 32] __attribute__((aligned(64)));
    for (long i = 0; i < a->m; i += mr) {
        long rows = lmin(mr, a->m - i);
        const float *ar = a->a + i * a->lda;
        switch (g->isa) {
#if N_HAVE_X86
        case NISA_AVX512: fmul_512(ar, a->lda, buf, a->k, rows, t); break;
        case NISA_AVX2: fmul_avx2(ar, a->lda, buf, a->k, rows, t); break;
#endif
        default: fmul_plain(ar, a->lda, buf, a->k, rows, t); break;
        }
        for (long r = 0; r < rows; r++) {
            float *dst = a->c + (i + r) * a->ldc + j0;
            if (a->bias)
                for (long j = 0; j < w; j++) dst[j] = t[r * 32 + j] + a->bias[j0 + j];
            else
                memcpy(dst, t + r * 32, sizeof(float) * (size_t)w);
        }
    }
}

static void float_part(const void *job, int part, int parts) {
    const nbjob *g = job;
    float *buf = part == 0 ? g->buf0 : mi_pool_scratch(8 * g->kg * 32);
    if (!buf) return;
    long begin, end;
    mi_pool_share((g->np + 1) / 2, part, parts, &begin, &end);
    for (long u = begin; u < end; u++) float_unit(g, u, buf);
}

/* ---- int8: A quantized per block, integer dot products ------------------------------------- */

#define I8_MR 4

/* qa (rows x kp, zeros past k), sa and asum (rows x kb) */
CLONES static void quantize_rows(const float *a, long m, long k, long lda, long kb, long block,
                                 int8_t *qa, float *sa, int32_t *asum) {
    const long kp = kb * block;
    for (long i = 0; i < m; i++) {
        const float *row = a + i * lda;
        int8_t *q = qa + i * kp;
        for (long blk = 0; blk < kb; blk++) {
            long k0 = blk * block, k1 = lmin(k, k0 + block);
            float amax = 0.0f;
            for (long kk = k0; kk < k1; kk++) {
                float v = fabsf(row[kk]);
                amax = v > amax ? v : amax;
            }
            float scale = amax / 127.0f, inv = scale != 0.0f ? 1.0f / scale : 0.0f;
            int32_t s = 0;
            for (long kk = k0; kk < k1; kk++) {
                float v = rintf(row[kk] * inv);
                v = v < -127.0f ? -127.0f : (v > 127.0f ? 127.0f : v);
                q[kk] = (int8_t)(int32_t)v;
                s += q[kk];
            }
            for (long kk = k1; kk < k0 + block; kk++) q[kk] = 0;
            sa[i * kb + blk] = scale;
            asum[i * kb + blk] = s;
        }
    }
}

/* the block's sums (rows x 16, int32) into t (rows x 16 floats): t += (dot - zp * asum) *
 * (sa * scale), one fma per output */
static void i8_block_end(const nbjob *g, long i, long rows, long blk, const float *s,
                         const float *z, const int32_t *dot, float *t) {
    const long kb = g->a->kb;
    for (long r = 0; r < rows; r++) {
        float as = (float)g->asum[(i + r) * kb + blk], sa = g->sa[(i + r) * kb + blk];
        for (long j = 0; j < NBP; j++) {
            float zj = z ? z[j] : 8.0f;
            t[r * NBP + j] = fmaf((float)dot[r * NBP + j] - zj * as, sa * s[j], t[r * NBP + j]);
        }
    }
}

static void i8_plain(const nbjob *g, const uint8_t *src, long i, long rows, const float *sp,
                     const float *zp, float *t) {
    const long kp = g->kp, block = g->a->block;
    for (long blk = 0; blk < g->a->kb; blk++) {
        int32_t dot[I8_MR * NBP] = {0};
        for (long gg = blk * block / 8; gg < (blk + 1) * block / 8; gg++) {
            const uint8_t *v = src + gg * 64;
            for (long r = 0; r < rows; r++) {
                const int8_t *q = g->qa + (i + r) * kp + 8 * gg;
                for (long j = 0; j < NBP; j++) {
                    int32_t s = 0;
                    for (long tt = 0; tt < 4; tt++)
                        s += (v[j * 4 + tt] & 15) * q[tt] + (v[j * 4 + tt] >> 4) * q[4 + tt];
                    dot[r * NBP + j] += s;
                }
            }
        }
        i8_block_end(g, i, rows, blk, sp + blk * NBP, zp ? zp + blk * NBP : NULL, dot, t);
    }
}

#if N_HAVE_X86
static inline int ld4(const void *p) {
    int v;
    memcpy(&v, p, 4);
    return v;
}

/* the float update of i8_block_end, vectorized (the same operations: fma of the exact
 * difference by the product of the scales) */
#define I8_END512(R)                                                                         \
    do {                                                                                     \
        const long ix_ = (i + (R)) * kb + blk;                                               \
        __m512 d_ = _mm512_sub_ps(_mm512_cvtepi32_ps(acc[R]),                                \
                                  _mm512_mul_ps(zv, _mm512_set1_ps((float)g->asum[ix_])));   \
        __m512 m_ = _mm512_mul_ps(_mm512_set1_ps(g->sa[ix_]), sv);                           \
        _mm512_storeu_ps(t + (R) * NBP,                                                      \
                         _mm512_fmadd_ps(d_, m_, _mm512_loadu_ps(t + (R) * NBP)));            \
    } while (0)

N_AVX512 INLINE void i8_512_rows(const nbjob *g, const uint8_t *src, long i, const float *sp,
                        const float *zp, float *t, const int rows) {
    const long kp = g->kp, block = g->a->block, kb = g->a->kb;
    const __m512i m15 = _mm512_set1_epi8(15);
    const int8_t *q[I8_MR];
#pragma GCC unroll 4
    for (int r = 0; r < rows; r++) q[r] = g->qa + (i + r) * kp;
    for (long blk = 0; blk < kb; blk++) {
        __m512i acc[I8_MR];
#pragma GCC unroll 4
        for (int r = 0; r < rows; r++) acc[r] = _mm512_setzero_si512();
        for (long kk = blk * block; kk < (blk + 1) * block; kk += 8) {
            __m512i v = _mm512_loadu_si512((const void *)(src + kk * 8));
            __m512i lo = _mm512_and_si512(v, m15);
            __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m15);
#pragma GCC unroll 4
            for (int r = 0; r < rows; r++) {
                acc[r] = _mm512_dpbusd_epi32(acc[r], lo, _mm512_set1_epi32(ld4(q[r] + kk)));
                acc[r] = _mm512_dpbusd_epi32(acc[r], hi, _mm512_set1_epi32(ld4(q[r] + kk + 4)));
            }
        }
        __m512 sv = _mm512_loadu_ps(sp + blk * NBP);
        __m512 zv = zp ? _mm512_loadu_ps(zp + blk * NBP) : _mm512_set1_ps(8.0f);
#pragma GCC unroll 4
        for (int r = 0; r < rows; r++) I8_END512(r);
    }
}

N_AVX512 static void i8_512(const nbjob *g, const uint8_t *src, long i, long rows,
                            const float *sp, const float *zp, float *t) {
    switch (rows) {
    case 1: i8_512_rows(g, src, i, sp, zp, t, 1); break;
    case 2: i8_512_rows(g, src, i, sp, zp, t, 2); break;
    case 3: i8_512_rows(g, src, i, sp, zp, t, 3); break;
    case 4: i8_512_rows(g, src, i, sp, zp, t, 4); break;
    default: break;
    }
}

/* AVX2: vpmaddubsw (the nibbles unsigned, A's int8 signed: pairs of products, |sum| <= 3810,
 * no saturation) then vpmaddwd by ones: 8 columns x 4 k per instruction pair */
#define MAD4(acc, bv, av)                                                                    \
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(bv, av), ones))

N_AVX2 INLINE void i8_256_rows(const nbjob *g, const uint8_t *src, long i, const float *sp,
                               const float *zp, float *t, const int rows) {
    const long kp = g->kp, block = g->a->block, kb = g->a->kb;
    const __m256i m15 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
    const int8_t *q[I8_MR];
#pragma GCC unroll 4
    for (int r = 0; r < rows; r++) q[r] = g->qa + (i + r) * kp;
    for (long blk = 0; blk < kb; blk++)
        for (int h = 0; h < 2; h++) { /* columns 8h .. 8h + 7 */
            __m256i acc[I8_MR];
#pragma GCC unroll 4
            for (int r = 0; r < rows; r++) acc[r] = _mm256_setzero_si256();
            for (long kk = blk * block; kk < (blk + 1) * block; kk += 8) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(src + kk * 8 + 32 * h));
                __m256i lo = _mm256_and_si256(v, m15);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m15);
#pragma GCC unroll 4
                for (int r = 0; r < rows; r++) {
                    MAD4(acc[r], lo, _mm256_set1_epi32(ld4(q[r] + kk)));
                    MAD4(acc[r], hi, _mm256_set1_epi32(ld4(q[r] + kk + 4)));
                }
            }
            __m256 sv = _mm256_loadu_ps(sp + blk * NBP + 8 * h);
            __m256 zv = zp ? _mm256_loadu_ps(zp + blk * NBP + 8 * h) : _mm256_set1_ps(8.0f);
#pragma GCC unroll 4
            for (int r = 0; r < rows; r++) {
                const long ix = (i + r) * kb + blk;
                __m256 d = _mm256_sub_ps(_mm256_cvtepi32_ps(acc[r]),
                                         _mm256_mul_ps(zv, _mm256_set1_ps((float)g->asum[ix])));
                __m256 m = _mm256_mul_ps(_mm256_set1_ps(g->sa[ix]), sv);
                float *tr = t + r * NBP + 8 * h;
                _mm256_storeu_ps(tr, _mm256_fmadd_ps(d, m, _mm256_loadu_ps(tr)));
            }
        }
}

N_AVX2 static void i8_avx2(const nbjob *g, const uint8_t *src, long i, long rows,
                           const float *sp, const float *zp, float *t) {
    switch (rows) {
    case 1: i8_256_rows(g, src, i, sp, zp, t, 1); break;
    case 2: i8_256_rows(g, src, i, sp, zp, t, 2); break;
    case 3: i8_256_rows(g, src, i, sp, zp, t, 3); break;
    case 4: i8_256_rows(g, src, i, sp, zp, t, 4); break;
    default: break;
    }
}
#endif

/* panel p: every tile of rows */
static void i8_unit(const nbjob *g, long p) {
    const mi_nbits_args *a = g->a;
    const uint8_t *src = panel_bytes(g, p);
    const float *sp = a->scales + p * a->kb * NBP, *zp = a->zp ? a->zp + p * a->kb * NBP : NULL;
    const long j0 = p * NBP, w = lmin(NBP, a->n - j0);
    float t[I8_MR * NBP];
    for (long i = 0; i < a->m; i += I8_MR) {
        long rows = lmin(I8_MR, a->m - i);
        memset(t, 0, sizeof t);
        switch (g->isa) {
#if N_HAVE_X86
        case NISA_AVX512: i8_512(g, src, i, rows, sp, zp, t); break;
        case NISA_AVX2: i8_avx2(g, src, i, rows, sp, zp, t); break;
#endif
        default: i8_plain(g, src, i, rows, sp, zp, t); break;
        }
        for (long r = 0; r < rows; r++) {
            float *dst = a->c + (i + r) * a->ldc + j0;
            for (long j = 0; j < w; j++) dst[j] = a->bias ? t[r * NBP + j] + a->bias[j0 + j]
                                                          : t[r * NBP + j];
        }
    }
}

static void i8_part(const void *job, int part, int parts) {
    const nbjob *g = job;
    long begin, end;
    mi_pool_share(g->np, part, parts, &begin, &end);
    for (long p = begin; p < end; p++) i8_unit(g, p);
}

int mi_nbits_gemm_f32(const mi_nbits_args *a) {
    if (!a->a || !a->bp || !a->scales || !a->c || a->block < 16 || a->block % 16 ||
        ANY_NEGATIVE(a->m, a->n, a->k, a->kb, a->lda, a->ldc) || a->lda < a->k ||
        a->ldc < a->n || a->k > a->kb * a->block || (a->n % NBP && !a->blast))
        return MI_EARGS;
    if (a->m == 0 || a->n == 0) return MI_OK;
    nbjob g = {.a = a, .isa = mi_nbits_isa()};
    g.np = (a->n + NBP - 1) / NBP;
    g.kp = a->kb * a->block;
    g.kg = (a->k + 7) / 8;
    const long work = a->m * a->n * lmax(a->k, 1);
    if (a->int8) {
        size_t qbytes = (size_t)(a->m * g.kp), nb = (size_t)(a->m * a->kb);
        uint8_t *block = malloc(qbytes + 2 * sizeof(float) * nb + 64);
        if (!block) return MI_ENOMEM;
        float *sa = (float *)(block + (qbytes + 3) / 4 * 4);
        int32_t *asum = (int32_t *)(sa + nb);
        quantize_rows(a->a, a->m, a->k, a->lda, a->kb, a->block, (int8_t *)block, sa, asum);
        g.qa = (const int8_t *)block;
        g.sa = sa;
        g.asum = asum;
        if (work < 65536L || mi_pool_run(i8_part, &g) != 0) i8_part(&g, 0, 1);
        free(block);
        return MI_OK;
    }
    if (a->m <= FEW_ROWS && g.isa != NISA_PLAIN) {
        if (work < 65536L || mi_pool_run(few_part, &g) != 0) few_part(&g, 0, 1);
        return MI_OK;
    }
    g.buf0 = aligned_alloc(64, (size_t)(8 * g.kg * 32) * sizeof(float));
    if (!g.buf0) return MI_ENOMEM;
    if (work < 65536L || mi_pool_run(float_part, &g) != 0) float_part(&g, 0, 1);
    free(g.buf0);
    return MI_OK;
}
