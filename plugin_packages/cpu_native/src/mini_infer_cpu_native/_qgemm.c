/* Integer GEMM: 8-bit A (uint8 or int8) times 8-bit B (int8 or uint8) with int32 accumulation,
 * the zero-point terms from row and column sums, and an epilogue that writes int32
 * (MatMulInteger), dequantizes to float32 (scale per column, bias, clamp) or requantizes to
 * uint8/int8 (round half to even, saturation: QLinearMatMul), on the library's thread pool.
 *
 *   acc[i, j] = sum_k (a[i, k] - za) * (b[k, j] - zb[j])
 *             = sum_k a'b' - za' * colsum'[j] - zb'[j] * rowsum'[i] + K * za' * zb'[j]
 *
 * Every kernel multiplies unsigned 8-bit A by signed 8-bit B (vpdpbusd's operands): an int8 A
 * is read as a' = a + 128 (a ^ 0x80) with za' = za + 128, a uint8 B is stored as b' = b - 128
 * with zb' = zb - 128 (the caller passes zb'); colsum' and rowsum' are sums of a' and b'. The
 * result is exact (int32 arithmetic modulo 2^32, as the ONNX operators accumulate).
 *
 * B is packed once (mi_qpack_b_i8: by the build for constant weights, stored so in the
 * engine) in exactly k * n bytes, so that the array keeps its shape: panels of QNB = 16
 * columns; panel p (width w = min(16, n - 16p)) at byte 16p * k holds k / 4 quads of
 * [w columns][4 k] (16 columns x 4 k = one 64-byte line per quad in a full panel), then the
 * k % 4 last rows as [row][w]. The same layout is read by every kernel, so an engine packed on
 * one CPU runs on any other. Per call, the last rows of each full panel and the whole last
 * partial panel are copied into zero-padded quads (a few KiB), so that the kernels only ever
 * see whole 16 x 4 quads.
 *
 * A (its rows are activations) is handled inside the product's one dispatch on the thread
 * pool: each part takes a block of rows (and, where the blocks are too few for the threads, a
 * chunk of B's columns), packs the block into its thread's kept scratch with the row sums
 * (only where a zero point of B is not 0), runs the micro-kernels over it and the epilogue of
 * each tile. For a convolution (mi_qconv_i8) the rows are read from the windows of an NHWC
 * image as they are packed (no im2col matrix: a window row inside the image and across every
 * channel is one copy). Kernels, chosen once by the CPU's features (mi_qgemm_isa;
 * MINI_INFER_QGEMM_ISA=plain|avx2|avxvnni|avx512vnni|amx caps the choice, as
 * mi_qgemm_set_isa does in tests):
 * - AMX (where the OS grants the tile state): the AVX-512 VNNI kernels below, with tdpbusd
 *   tiles for groups of 16 or 32 whole rows x 32 columns, K of 64 or more (_qamx.h).
 * - AVX-512 VNNI: vpdpbusd, 8 rows x 32 columns (two full panels, 16 zmm accumulators; one
 *   panel: 8 x 16); up to 4 rows (a decoding step's one) row by row, four chains of
 *   vpdpbusd over k each. A is read row-major (each row's quad broadcast from rows lda bytes
 *   apart), so a uint8 A of whole quads with B's zero points 0 (symmetric weights) is read in
 *   place: a MatMulInteger's A, a 1 x 1 stride-1 convolution's NHWC image (only a last
 *   partial panel of 8 rows is copied); otherwise rows are copied (windows gathered, int8
 *   flipped, k padded to whole quads) into the part's buffer. Those 8 x 32 tiles requantize
 *   their uint8/int8 outputs straight from the registers (micro_512_8x2_q). Where K is long
 *   (over 1024) a column pair runs in slices of K over all the block's row panels, so that
 *   its slice stays in L1 (q_pair_kblocked).
 * - AVX-VNNI (the VEX form, Alder Lake and later): vpdpbusd on ymm, 4 rows x 16 columns.
 * - AVX2: exact, by widening instead of vpmaddubsw. vpmaddubsw adds two u8 x s8 products into
 *   a saturating int16 (255 * 127 * 2 > 32767), which changes results unless weights are cut
 *   to 7 bits (onnxruntime's reduce_range). Here A is packed as int16 (zero-extended a') and
 *   each B quad widened with vpmovsxbw (16 bytes: 4 columns x 4 k) once for every row of the
 *   tile; vpmaddwd then adds pairs of int16 x int16 products into int32, exact (|sum| <=
 *   2 * 255 * 128). The accumulators hold two partial sums per column, added by one vphaddd
 *   when the tile is done. Tiles of 4 rows x 8 columns (8 accumulators), two per panel; the
 *   last rows of A (M % 4) one by one over the whole panel.
 * - plain C loops elsewhere (and in tests): the same sums, the same epilogue.
 * The epilogue is the same arithmetic for every kernel (q_epilogue_row in C, q_epi_512 and
 * q_epi_avx2 16 columns at once in vectors): float32 as onnxruntime's (float(acc) *
 * scale[j], then + bias[j]; no FMA), clamped, then rounded half to even (rintf, or the
 * vector conversion in the default rounding mode) and the zero point added. Results are bit-identical across
 * kernels and thread counts (each output is one thread's exact integer sum).
 */
#define _GNU_SOURCE /* syscall: the AMX level asks the OS for the tile state */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_args.h"
#include "_common.h"
#include "_pool.h"

#define QNB 16
#define QMR_MAX 8

enum { QISA_PLAIN = 0, QISA_AVX2 = 1, QISA_AVXVNNI = 2, QISA_AVX512VNNI = 3, QISA_AMX = 4 };

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define Q_AVX2 __attribute__((target("avx2")))
#define Q_AVXVNNI __attribute__((target("avx2,avxvnni")))
#define Q_AVX512VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define Q_HAVE_X86 1
#else
#define Q_HAVE_X86 0
#endif

/* ---- packing B ------------------------------------------------------------------------- */

int mi_qpack_b_i8(const mi_qpack_b_args *p) {
    const uint8_t *b = p->b;
    uint8_t *out = p->out;
    const long k = p->k, n = p->n, rs = p->rs, cs = p->cs;
    const uint8_t flip = p->flip ? 0x80 : 0;
    if (!b || !out || ANY_NEGATIVE(k, n)) return MI_EARGS;
    const long kq = k / 4, r = k % 4;
    for (long j0 = 0; j0 < n; j0 += QNB) {
        long w = lmin(QNB, n - j0);
        uint8_t *dst = out + j0 * k;
        for (long q = 0; q < kq; q++)
            for (long j = 0; j < w; j++)
                for (long t = 0; t < 4; t++)
                    dst[(q * w + j) * 4 + t] = b[(4 * q + t) * rs + (j0 + j) * cs] ^ flip;
        uint8_t *tail = dst + kq * 4 * w;
        for (long t = 0; t < r; t++)
            for (long j = 0; j < w; j++) tail[t * w + j] = b[(4 * kq + t) * rs + (j0 + j) * cs] ^ flip;
    }
    return MI_OK;
}

/* the sum of each column of a packed B (its stored, signed values) */
int mi_qcolsum_i8(const mi_qcolsum_args *p) {
    const int8_t *bp = p->bp;
    int *colsum = p->colsum;
    const long k = p->k, n = p->n;
    if (!bp || !colsum || ANY_NEGATIVE(k, n)) return MI_EARGS;
    const long kq = k / 4, r = k % 4;
    for (long j0 = 0; j0 < n; j0 += QNB) {
        long w = lmin(QNB, n - j0);
        const int8_t *src = bp + j0 * k;
        for (long j = 0; j < w; j++) {
            int32_t s = 0;
            for (long q = 0; q < kq; q++)
                for (long t = 0; t < 4; t++) s += src[(q * w + j) * 4 + t];
            for (long t = 0; t < r; t++) s += src[kq * 4 * w + t * w + j];
            colsum[j0 + j] = s;
        }
    }
    return MI_OK;
}

/* ---- the kernels chosen at load --------------------------------------------------------- */

static int q_amx_usable(void); /* _qamx.h */

static int q_supported(int level) {
#if Q_HAVE_X86
    __builtin_cpu_init();
    switch (level) {
    case QISA_AVX2: return __builtin_cpu_supports("avx2");
    case QISA_AVXVNNI: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avxvnni");
    case QISA_AVX512VNNI:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vnni");
    case QISA_AMX: return q_supported(QISA_AVX512VNNI) && q_amx_usable();
    default: return level == QISA_PLAIN;
    }
#else
    return level == QISA_PLAIN;
#endif
}

static int q_detect(void) {
    int best = QISA_PLAIN;
#if Q_HAVE_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) best = QISA_AVX2;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("avxvnni")) best = QISA_AVXVNNI;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vnni"))
        best = QISA_AVX512VNNI;
    if (best == QISA_AVX512VNNI && q_amx_usable()) best = QISA_AMX;
#endif
    /* a cap for tests and comparisons (the kernels the CPU lacks are never chosen) */
    const char *cap = getenv("MINI_INFER_QGEMM_ISA");
    if (cap) {
        static const char *names[] = {"plain", "avx2", "avxvnni", "avx512vnni", "amx"};
        for (int i = 0; i < 5; i++)
            if (strcmp(cap, names[i]) == 0 && i < best) {
                /* avxvnni is not below avx512vnni on every CPU: a cap of avxvnni on a CPU
                 * with AVX-512 VNNI but no AVX-VNNI takes AVX2 */
                if (i == QISA_AVXVNNI && !q_supported(QISA_AVXVNNI)) i = QISA_AVX2;
                best = i;
                break;
            }
    }
    return best;
}

static atomic_int q_isa = -1;

/* the kernels in use: 0 plain C, 1 AVX2, 2 AVX-VNNI, 3 AVX-512 VNNI, 4 AMX (AVX-512 VNNI
 * with AMX tiles for the products of whole 16- and 32-row groups: _qamx.h) */
int mi_qgemm_isa(void) { return cached_isa(&q_isa, q_detect); }

/* tests: run the kernels of `level` where the CPU has them (else the detected ones; level
 * < 0: the detected ones); returns the level now in use */
int mi_qgemm_set_isa(int level) {
    int use = level >= 0 && q_supported(level) ? level : q_detect();
    atomic_store_explicit(&q_isa, use, memory_order_relaxed);
    return use;
}

/* whether the kernels of `level` can run on this CPU */
int mi_qgemm_supported(int level) { return q_supported(level); }

/* ---- packing A (per thread, inside the product's one dispatch) -------------------------- */

/* rows per panel and bytes per element of packed A */
static int q_mr(int isa) { return isa >= QISA_AVX512VNNI ? 8 : 4; }
static int q_esize(int isa) { return isa == QISA_AVX2 ? 2 : 1; }

/* where A's rows come from: rows of a matrix (lda bytes apart), or a convolution's windows
 * over an NHWC image (implicit im2col: row (b, oy, ox), k in the order (ty, tx, channel);
 * taps outside the image read the zero point's byte) */
typedef struct {
    const uint8_t *a;          /* rows, or NULL for the image below */
    long lda;
    const mi_qconv_args *conv; /* the image and window, or NULL */
    int direct;                /* conv: a 1 x 1 window without padding (rows read in place) */
} qsrc;

/* n bytes copied: runs of 8 to 32 bytes (a few channels times a window row: the stem's 21) as
 * two overlapping fixed-size copies, inlined, where memcpy would be a call per run */
static inline void q_copy_run(uint8_t *d, const uint8_t *s, size_t n) {
    if (n >= 16 && n <= 32) {
        memcpy(d, s, 16);
        memcpy(d + n - 16, s + n - 16, 16);
    } else if (n >= 8 && n < 16) {
        memcpy(d, s, 8);
        memcpy(d + n - 8, s + n - 8, 8);
    } else {
        memcpy(d, s, n);
    }
}

/* row i of A (k bytes) from an image: a pointer into the image where the row is one run of
 * it (a 1 x 1 window inside the image), else the taps' cg channels copied into `row`, the
 * zero point outside */
static const uint8_t *q_conv_row(const mi_qconv_args *v, int direct, long i, uint8_t *row) {
    long per = v->oh * v->ow, b = i / per, p = i % per, oy = p / v->ow, ox = p % v->ow;
    const uint8_t *img = (const uint8_t *)v->x + b * v->h * v->w * v->c + v->c0;
    if (direct) return img + (oy * v->sh * v->w + ox * v->sw) * v->c;
    const uint8_t zero = (uint8_t)v->gemm.za;
    long at = 0;
    const long ix0 = ox * v->sw - v->pw, run = v->kw * v->cg;
    /* a window row inside the image, dense (dilation 1, every channel): one copy */
    const int dense = v->dw == 1 && v->cg == v->c && ix0 >= 0 && ix0 + v->kw <= v->w;
    for (long ty = 0; ty < v->kh; ty++) {
        long iy = oy * v->sh - v->ph + ty * v->dh;
        if (iy < 0 || iy >= v->h) {
            memset(row + at, zero, (size_t)run);
            at += run;
            continue;
        }
        if (dense) {
            q_copy_run(row + at, img + (iy * v->w + ix0) * v->c, (size_t)run);
            at += run;
            continue;
        }
        for (long tx = 0; tx < v->kw; tx++, at += v->cg) {
            long ix = ox * v->sw - v->pw + tx * v->dw;
            if (ix < 0 || ix >= v->w)
                memset(row + at, zero, (size_t)v->cg);
            else
                q_copy_run(row + at, img + (iy * v->w + ix) * v->c, (size_t)v->cg);
        }
    }
    return row;
}

/* one row (k bytes at src; ^flip: uint8 a') into row r of its panel `out` (kq4 quads of mr
 * rows: [quad][row][4] of uint8 (esize 1) or int16 (esize 2), zeros past k); returns the sum
 * of a' over the row where `sum` is set (else 0) */
CLONES static int32_t q_pack_row(const uint8_t *src, long r, long k, uint8_t flip, int mr,
                                 int esize, int sum, void *out) {
    const long kq = k / 4, step = (long)mr * 4;
    const uint32_t flip4 = 0x01010101u * flip;
    uint32_t s = 0;
    if (sum)
        for (long kk = 0; kk < k; kk++) s += (uint8_t)(src[kk] ^ flip);
    if (esize == 1) { /* one 4-byte copy per quad */
        uint8_t *dst = (uint8_t *)out + r * 4;
        for (long q = 0; q < kq; q++) {
            uint32_t v;
            memcpy(&v, src + 4 * q, 4);
            v ^= flip4;
            memcpy(dst + q * step, &v, 4);
        }
        if (k > 4 * kq) {
            uint8_t t[4] = {0, 0, 0, 0};
            for (long kk = 4 * kq; kk < k; kk++) t[kk % 4] = src[kk] ^ flip;
            memcpy(dst + kq * step, t, 4);
        }
    } else {
        int16_t *dst = (int16_t *)out + r * 4;
        for (long q = 0; q < kq; q++)
            for (int t = 0; t < 4; t++) dst[q * step + t] = (int16_t)(uint8_t)(src[4 * q + t] ^ flip);
        if (k > 4 * kq) {
            int16_t t[4] = {0, 0, 0, 0};
            for (long kk = 4 * kq; kk < k; kk++) t[kk % 4] = (int16_t)(uint8_t)(src[kk] ^ flip);
            memcpy(dst + kq * step, t, sizeof t);
        }
    }
    return (int32_t)s;
}

/* ---- the job ----------------------------------------------------------------------------- */

/* One dispatch on the pool: the product is cut into units (a block of row panels, a run of
 * column-panel pairs); a part packs its block of A (the activation's rows, or a
 * convolution's windows) into its thread's buffer (mi_pool_scratch: kept from call to call,
 * so no page is touched for the first time per call), with the row sums, then runs the
 * micro-kernels over it column pair by column pair (each pair of B panels read from L1/L2
 * once per row panel, the block of A from L2) and the epilogue of each tile. A part's
 * consecutive units of one block pack it once. */
typedef struct {
    qsrc src;
    const int8_t *bp;      /* packed B */
    const int8_t *btail;   /* 64 bytes per full panel: its k % 4 last rows, padded; or NULL */
    const int8_t *blast;   /* the last partial panel, kq4 padded quads; or NULL */
    const int32_t *colterm; /* (n): K * za' * zb'[j] - za' * colsum'[j] (+ an int32 bias) */
    const int *zb;
    long zb_step;
    const float *mult, *bias;
    long mult_step;
    void *c;
    long m, n, k, kq, kq4, ldc, mp, np;
    long bpanels, nblocks, nchunks; /* row panels per block, blocks, column chunks */
    size_t panel_bytes, buf_bytes;  /* one packed panel; a part's buffer (A, sums, a row) */
    long kpad;       /* AVX-512 VNNI: bytes per row of A in a part's buffer (k rounded to 4) */
    const uint8_t *abase; /* direct: row i of A at abase + i * alda, read in place */
    long alda;
    int rowmajor, direct; /* A row-major (AVX-512 VNNI); and read in place (no copy) */
    int fused;            /* AVX-512 VNNI's 8 x 32 tiles requantized in registers */
    int kblock;           /* AVX-512 VNNI, K long: in slices of Q_KCQ quads (q_pair_kblocked) */
    size_t acc_off;       /* where a part's buffer keeps those sums */
    uint8_t *own;                   /* the caller's buffer when it runs the job alone */
    int isa, mr, esize, out, zy, rowsums;
    uint8_t flip;
    float lo, hi;
} qjob;

/* plain C: acc (mr x 16) += A panel (nq quads, u8) . B quads (64 bytes apart) */
static void micro_plain(const uint8_t *ap, const int8_t *b, long nq, int mr, int32_t *acc) {
    for (long q = 0; q < nq; q++, ap += mr * 4, b += 64)
        for (int r = 0; r < mr; r++)
            for (int j = 0; j < QNB; j++) {
                int32_t s = 0;
                for (int t = 0; t < 4; t++) s += (int32_t)ap[r * 4 + t] * b[j * 4 + t];
                acc[r * QNB + j] += s;
            }
}

#if Q_HAVE_X86
/* The accumulators are named variables, not arrays: with arrays GCC copied every accumulator
 * to another register on each k step (and spilled one). */

static inline long long q_ld8(const void *p) {
    long long v;
    memcpy(&v, p, 8);
    return v;
}
static inline int q_ld4(const void *p) {
    int v;
    memcpy(&v, p, 4);
    return v;
}

/* AVX2, exact (see the top of the file): the row's int16 quad times 4 columns x 4 k */
#define MADD(acc, av, bv) acc = _mm256_add_epi32(acc, _mm256_madd_epi16(av, bv))
/* [c0 c1 c4 c5 | c2 c3 c6 c7] of two accumulators (pairs per column) -> 8 columns in order,
 * added to dst */
#define FOLD8(dst, x, y)                                                                     \
    do {                                                                                     \
        __m256i s_ = _mm256_permute4x64_epi64(_mm256_hadd_epi32(x, y), 0xD8);                \
        _mm256_storeu_si256((__m256i *)(dst),                                                \
                            _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(dst)), s_)); \
    } while (0)

/* the 4 x 16 tiles' step for two rows (broadcasts x and y of A) and the two 8-column halves
 * of B (b0, b1): OP(acc, a, b) into each of the four accumulators */
#define ROWS2(OP, cx0, cx1, cy0, cy1, x, y)                                                  \
    do {                                                                                     \
        OP(cx0, x, b0);                                                                      \
        OP(cx1, x, b1);                                                                      \
        OP(cy0, y, b0);                                                                      \
        OP(cy1, y, b1);                                                                      \
    } while (0)

/* 4 rows x 8 columns (half h of the panel) */
Q_AVX2 static void micro_avx2_4(const int16_t *ap, const int8_t *b, long nq, int32_t *acc,
                                int h) {
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00,
            c21 = c00, c30 = c00, c31 = c00;
    const int8_t *bq = b + 32 * h;
    for (long q = 0; q < nq; q++, bq += 64, ap += 16) {
        __m256i b0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)bq));
        __m256i b1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(bq + 16)));
        __m256i a0 = _mm256_set1_epi64x(q_ld8(ap)), a1 = _mm256_set1_epi64x(q_ld8(ap + 4));
        ROWS2(MADD, c00, c01, c10, c11, a0, a1);
        __m256i a2 = _mm256_set1_epi64x(q_ld8(ap + 8)), a3 = _mm256_set1_epi64x(q_ld8(ap + 12));
        ROWS2(MADD, c20, c21, c30, c31, a2, a3);
        /* the accumulators stay in their registers (GCC otherwise moved each one to another
         * register on every step, and spilled one) */
        __asm__("" : "+x"(c00), "+x"(c01), "+x"(c10), "+x"(c11), "+x"(c20), "+x"(c21),
                "+x"(c30), "+x"(c31));
    }
    FOLD8(acc + 8 * h, c00, c01);
    FOLD8(acc + QNB + 8 * h, c10, c11);
    FOLD8(acc + 2 * QNB + 8 * h, c20, c21);
    FOLD8(acc + 3 * QNB + 8 * h, c30, c31);
}

/* one row (r of the panel's mr) x 16 columns */
Q_AVX2 static void micro_avx2_1(const int16_t *ap, int mr, const int8_t *b, long nq,
                                int32_t *acc) {
    __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;
    for (long q = 0; q < nq; q++, b += 64, ap += 4 * mr) {
        __m256i a = _mm256_set1_epi64x(q_ld8(ap));
        MADD(c0, a, _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b)));
        MADD(c1, a, _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 16))));
        MADD(c2, a, _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 32))));
        MADD(c3, a, _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 48))));
    }
    FOLD8(acc, c0, c1);
    FOLD8(acc + 8, c2, c3);
}

/* rows of the panel: 4 at once, or one by one for the last rows of A (M % 4) */
Q_AVX2 static void micro_avx2(const int16_t *ap, const int8_t *b, long nq, long rows,
                              int32_t *acc) {
    if (rows == 4) {
        micro_avx2_4(ap, b, nq, acc, 0);
        micro_avx2_4(ap, b, nq, acc, 1);
        return;
    }
    for (long r = 0; r < rows; r++) micro_avx2_1(ap + 4 * r, 4, b, nq, acc + r * QNB);
}

/* AVX-VNNI: 4 rows x 16 columns, two ymm per row */
#define DPV(acc, av, bv) acc = _mm256_dpbusd_avx_epi32(acc, av, bv)
#define ADD8(dst, x)                                                                         \
    _mm256_storeu_si256((__m256i *)(dst),                                                    \
                        _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(dst)), x))
Q_AVXVNNI static void micro_avxvnni(const uint8_t *ap, const int8_t *b, long nq, long rows,
                                    int32_t *acc) {
    (void)rows; /* rows past M are zeros in A */
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00,
            c21 = c00, c30 = c00, c31 = c00;
    for (long q = 0; q < nq; q++, ap += 16, b += 64) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 32));
        __m256i a0 = _mm256_set1_epi32(q_ld4(ap)), a1 = _mm256_set1_epi32(q_ld4(ap + 4));
        ROWS2(DPV, c00, c01, c10, c11, a0, a1);
        __m256i a2 = _mm256_set1_epi32(q_ld4(ap + 8)), a3 = _mm256_set1_epi32(q_ld4(ap + 12));
        ROWS2(DPV, c20, c21, c30, c31, a2, a3);
    }
    ADD8(acc, c00);
    ADD8(acc + 8, c01);
    ADD8(acc + QNB, c10);
    ADD8(acc + QNB + 8, c11);
    ADD8(acc + 2 * QNB, c20);
    ADD8(acc + 2 * QNB + 8, c21);
    ADD8(acc + 3 * QNB, c30);
    ADD8(acc + 3 * QNB + 8, c31);
}

/* AVX-512 VNNI: 8 rows x 16 columns, one zmm per row. A is read row-major here (no panels):
 * row r's quad q at a[r] + 4q, the rows `lda` bytes apart, straight from the activation (a
 * 1 x 1 convolution's image, a MatMulInteger's A) or from a part's copy of its rows. */
#define DP(acc, r) acc = _mm512_dpbusd_epi32(acc, _mm512_set1_epi32(q_ld4(a##r + 4 * q)), bv)
/* an 8-row x 16-column VNNI tile: accumulators c0..c7 declared, then nq quads of K (rows
 * a0..a7, 64 bytes of b a quad) summed into them */
#define DP_TILE8(b, nq)                                                                      \
    __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, \
            c7 = c0;                                                                         \
    for (long q = 0; q < (nq); q++, (b) += 64) {                                             \
        __m512i bv = _mm512_loadu_si512((const void *)(b));                                  \
        DP(c0, 0);                                                                           \
        DP(c1, 1);                                                                           \
        DP(c2, 2);                                                                           \
        DP(c3, 3);                                                                           \
        DP(c4, 4);                                                                           \
        DP(c5, 5);                                                                           \
        DP(c6, 6);                                                                           \
        DP(c7, 7);                                                                           \
    }
#define ADD16(dst, x)                                                                        \
    _mm512_storeu_si512((void *)(dst), _mm512_add_epi32(_mm512_loadu_si512((const void *)(dst)), x))
/* an 8-row tile's accumulators (x0..x7) added into its rows of `acc`, QNB apart */
#define ADD16_ROWS8(acc, x0, x1, x2, x3, x4, x5, x6, x7)                                     \
    do {                                                                                     \
        ADD16(acc, x0);                                                                      \
        ADD16((acc) + QNB, x1);                                                              \
        ADD16((acc) + 2 * QNB, x2);                                                          \
        ADD16((acc) + 3 * QNB, x3);                                                          \
        ADD16((acc) + 4 * QNB, x4);                                                          \
        ADD16((acc) + 5 * QNB, x5);                                                          \
        ADD16((acc) + 6 * QNB, x6);                                                          \
        ADD16((acc) + 7 * QNB, x7);                                                          \
    } while (0)
/* the same, stored (the tile's first product) */
#define STORE16_ROWS8(acc, x0, x1, x2, x3, x4, x5, x6, x7)                                   \
    do {                                                                                     \
        _mm512_storeu_si512((void *)(acc), x0);                                              \
        _mm512_storeu_si512((void *)((acc) + QNB), x1);                                      \
        _mm512_storeu_si512((void *)((acc) + 2 * QNB), x2);                                  \
        _mm512_storeu_si512((void *)((acc) + 3 * QNB), x3);                                  \
        _mm512_storeu_si512((void *)((acc) + 4 * QNB), x4);                                  \
        _mm512_storeu_si512((void *)((acc) + 5 * QNB), x5);                                  \
        _mm512_storeu_si512((void *)((acc) + 6 * QNB), x6);                                  \
        _mm512_storeu_si512((void *)((acc) + 7 * QNB), x7);                                  \
    } while (0)
/* the 8 rows' pointers */
#define ROWS8(ap, lda)                                                                       \
    const uint8_t *a0 = (ap), *a1 = a0 + (lda), *a2 = a1 + (lda), *a3 = a2 + (lda),          \
                  *a4 = a3 + (lda), *a5 = a4 + (lda), *a6 = a5 + (lda), *a7 = a6 + (lda)
Q_AVX512VNNI static void micro_512_8(const uint8_t *ap, long lda, const int8_t *b, long nq,
                                     int32_t *acc) {
    ROWS8(ap, lda);
    DP_TILE8(b, nq);
    ADD16_ROWS8(acc, c0, c1, c2, c3, c4, c5, c6, c7);
}

/* 8 rows x 32 columns: two full panels at once (16 accumulators: each broadcast of A serves
 * two vpdpbusd, half the loads of A per product of the 8 x 16 tile); the sums stored into
 * acc0 and acc1, or added to them (`add`: a later slice of K) */
#define DP2(x, y, r)                                                                         \
    do {                                                                                     \
        __m512i av_ = _mm512_set1_epi32(q_ld4(a##r + 4 * q));                                \
        x = _mm512_dpbusd_epi32(x, av_, b0);                                                 \
        y = _mm512_dpbusd_epi32(y, av_, b1);                                                 \
    } while (0)
Q_AVX512VNNI static void micro_512_8x2(const uint8_t *ap, long lda, const int8_t *p0,
                                       const int8_t *p1, long nq, int32_t *acc0,
                                       int32_t *acc1, int add) {
    ROWS8(ap, lda);
    __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0,
            c7 = c0, d0 = c0, d1 = c0, d2 = c0, d3 = c0, d4 = c0, d5 = c0, d6 = c0, d7 = c0;
    for (long q = 0; q < nq; q++, p0 += 64, p1 += 64) {
        __m512i b0 = _mm512_loadu_si512((const void *)p0);
        __m512i b1 = _mm512_loadu_si512((const void *)p1);
        DP2(c0, d0, 0);
        DP2(c1, d1, 1);
        DP2(c2, d2, 2);
        DP2(c3, d3, 3);
        DP2(c4, d4, 4);
        DP2(c5, d5, 5);
        DP2(c6, d6, 6);
        DP2(c7, d7, 7);
        /* the accumulators stay in their registers (as in micro_avx2_4) */
        __asm__("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5), "+v"(c6),
                "+v"(c7));
        __asm__("" : "+v"(d0), "+v"(d1), "+v"(d2), "+v"(d3), "+v"(d4), "+v"(d5), "+v"(d6),
                "+v"(d7));
    }
    if (add) {
        ADD16_ROWS8(acc0, c0, c1, c2, c3, c4, c5, c6, c7);
        ADD16_ROWS8(acc1, d0, d1, d2, d3, d4, d5, d6, d7);
        return;
    }
    STORE16_ROWS8(acc0, c0, c1, c2, c3, c4, c5, c6, c7);
    STORE16_ROWS8(acc1, d0, d1, d2, d3, d4, d5, d6, d7);
}

/* one row: four accumulators over k (one chain of vpdpbusd each) */
#define DP1(acc, at) \
    acc = _mm512_dpbusd_epi32(acc, _mm512_set1_epi32(q_ld4(ap + (at))), bv)
Q_AVX512VNNI static void micro_512_1(const uint8_t *ap, const int8_t *b, long nq,
                                     int32_t *acc) {
    __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, bv;
    long q = 0;
    for (; q + 4 <= nq; q += 4, ap += 16, b += 256) {
        bv = _mm512_loadu_si512((const void *)b);
        DP1(c0, 0);
        bv = _mm512_loadu_si512((const void *)(b + 64));
        DP1(c1, 4);
        bv = _mm512_loadu_si512((const void *)(b + 128));
        DP1(c2, 8);
        bv = _mm512_loadu_si512((const void *)(b + 192));
        DP1(c3, 12);
    }
    for (; q < nq; q++, ap += 4, b += 64) {
        bv = _mm512_loadu_si512((const void *)b);
        DP1(c0, 0);
    }
    ADD16(acc, _mm512_add_epi32(_mm512_add_epi32(c0, c1), _mm512_add_epi32(c2, c3)));
}

/* rows of the panel: 8 at once (a full panel, or one padded in a part's buffer) from 5 rows
 * up, else one by one (a decoding step's row) */
Q_AVX512VNNI static void micro_512(const uint8_t *ap, long lda, const int8_t *b, long nq,
                                   long rows, int32_t *acc) {
    if (rows > 4) {
        micro_512_8(ap, lda, b, nq, acc);
        return;
    }
    for (long r = 0; r < rows; r++) micro_512_1(ap + r * lda, b, nq, acc + r * QNB);
}
#endif

/* acc (mr x 16) += the A panel's quads [q0, q0 + nq) . B quads at b (AVX-512 VNNI: the
 * panel's rows lda bytes apart) */
static void micro(const qjob *g, const void *apanel, long lda, long q0, const int8_t *b,
                  long nq, long rows, int32_t *acc) {
    if (nq <= 0) return;
    long off = q0 * g->mr * 4; /* elements */
#if Q_HAVE_X86
    switch (g->isa) {
    case QISA_AVX2: micro_avx2((const int16_t *)apanel + off, b, nq, rows, acc); return;
    case QISA_AVXVNNI: micro_avxvnni((const uint8_t *)apanel + off, b, nq, rows, acc); return;
    case QISA_AVX512VNNI:
    case QISA_AMX:
        micro_512((const uint8_t *)apanel + 4 * q0, lda, b, nq, rows, acc);
        return;
    default: break;
    }
#endif
    (void)rows;
    (void)lda;
    micro_plain((const uint8_t *)apanel + off, b, nq, g->mr, acc);
}

/* the epilogue of one row: v[j] = acc + colterm[j] - zb[j] * rs (modulo 2^32; rs the row's
 * sum of a'), then by the output's kind; w columns written from column j0 of row i */
CLONES static void q_epilogue_row(const qjob *g, const int32_t *acc, long i, int32_t rsum,
                                  long j0, long w) {
    uint32_t rs = (uint32_t)rsum;
    int32_t v[QNB];
    for (long j = 0; j < w; j++) {
        uint32_t zb = (uint32_t)g->zb[(j0 + j) * g->zb_step];
        v[j] = (int32_t)((uint32_t)acc[j] + (uint32_t)g->colterm[j0 + j] - zb * rs);
    }
    if (g->out == MI_Q_INT32) {
        memcpy((int32_t *)g->c + i * g->ldc + j0, v, sizeof(int32_t) * (size_t)w);
        return;
    }
    float f[QNB];
    const float *mult = g->mult + j0 * g->mult_step;
    for (long j = 0; j < w; j++) f[j] = (float)v[j] * mult[j * g->mult_step];
    if (g->out == MI_Q_FLOAT) {
        if (g->bias)
            for (long j = 0; j < w; j++) f[j] = f[j] + g->bias[j0 + j];
        float *dst = (float *)g->c + i * g->ldc + j0;
        for (long j = 0; j < w; j++) {
            float x = f[j] < g->lo ? g->lo : f[j];
            dst[j] = x > g->hi ? g->hi : x;
        }
        return;
    }
    /* requantize: round half to even (rintf under the default rounding mode), add the zero
     * point, clamp to [lo, hi] (the type's range, narrowed by a fused Relu) */
    int32_t q[QNB];
    const float lo = g->lo - (float)g->zy, hi = g->hi - (float)g->zy;
    for (long j = 0; j < w; j++) {
        float x = f[j] < lo ? lo : f[j];
        x = x > hi ? hi : x;
        q[j] = (int32_t)rintf(x) + g->zy;
    }
    if (g->out == MI_Q_U8) {
        uint8_t *dst = (uint8_t *)g->c + i * g->ldc + j0;
        for (long j = 0; j < w; j++) dst[j] = (uint8_t)q[j];
    } else {
        int8_t *dst = (int8_t *)g->c + i * g->ldc + j0;
        for (long j = 0; j < w; j++) dst[j] = (int8_t)q[j];
    }
}

#if Q_HAVE_X86
/* The epilogue of one row's 16 columns in vectors: the same float32 operations in the same
 * order as q_epilogue_row (no FMA; max/min with the bound first, so a NaN passes as there;
 * the conversion rounds half to even as rintf; the stores truncate as the casts), so the
 * results are bit-identical. */
Q_AVX512VNNI static void q_epi_512(const qjob *g, const int32_t *acc, long i, int32_t rsum,
                                   long j0) {
    __m512i v = _mm512_add_epi32(_mm512_loadu_si512((const void *)acc),
                                 _mm512_loadu_si512((const void *)(g->colterm + j0)));
    if (rsum) {
        __m512i zb = g->zb_step ? _mm512_loadu_si512((const void *)(g->zb + j0))
                                : _mm512_set1_epi32(g->zb[0]);
        v = _mm512_sub_epi32(v, _mm512_mullo_epi32(zb, _mm512_set1_epi32(rsum)));
    }
    if (g->out == MI_Q_INT32) {
        _mm512_storeu_si512((void *)((int32_t *)g->c + i * g->ldc + j0), v);
        return;
    }
    __m512 m = g->mult_step ? _mm512_loadu_ps(g->mult + j0) : _mm512_set1_ps(g->mult[0]);
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), m);
    if (g->out == MI_Q_FLOAT) {
        if (g->bias) f = _mm512_add_ps(f, _mm512_loadu_ps(g->bias + j0));
        f = _mm512_min_ps(_mm512_set1_ps(g->hi), _mm512_max_ps(_mm512_set1_ps(g->lo), f));
        _mm512_storeu_ps((float *)g->c + i * g->ldc + j0, f);
        return;
    }
    const float lo = g->lo - (float)g->zy, hi = g->hi - (float)g->zy;
    f = _mm512_min_ps(_mm512_set1_ps(hi), _mm512_max_ps(_mm512_set1_ps(lo), f));
    __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(g->zy));
    _mm_storeu_si128((__m128i *)((uint8_t *)g->c + i * g->ldc + j0), _mm512_cvtepi32_epi8(q));
}

Q_AVX2 static void q_epi_avx2(const qjob *g, const int32_t *acc, long i, int32_t rsum,
                              long j0) {
    __m256i v[2];
    __m256 f[2];
    for (int h = 0; h < 2; h++) {
        const long j = j0 + 8 * h;
        v[h] = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(acc + 8 * h)),
                                _mm256_loadu_si256((const __m256i *)(g->colterm + j)));
        if (rsum) {
            __m256i zb = g->zb_step ? _mm256_loadu_si256((const __m256i *)(g->zb + j))
                                    : _mm256_set1_epi32(g->zb[0]);
            v[h] = _mm256_sub_epi32(v[h], _mm256_mullo_epi32(zb, _mm256_set1_epi32(rsum)));
        }
        if (g->out == MI_Q_INT32) {
            _mm256_storeu_si256((__m256i *)((int32_t *)g->c + i * g->ldc + j), v[h]);
            continue;
        }
        __m256 m = g->mult_step ? _mm256_loadu_ps(g->mult + j) : _mm256_set1_ps(g->mult[0]);
        f[h] = _mm256_mul_ps(_mm256_cvtepi32_ps(v[h]), m);
        if (g->out == MI_Q_FLOAT) {
            if (g->bias) f[h] = _mm256_add_ps(f[h], _mm256_loadu_ps(g->bias + j));
            f[h] = _mm256_min_ps(_mm256_set1_ps(g->hi),
                                 _mm256_max_ps(_mm256_set1_ps(g->lo), f[h]));
            _mm256_storeu_ps((float *)g->c + i * g->ldc + j, f[h]);
        }
    }
    if (g->out == MI_Q_INT32 || g->out == MI_Q_FLOAT) return;
    const float lo = g->lo - (float)g->zy, hi = g->hi - (float)g->zy;
    __m256i q[2];
    for (int h = 0; h < 2; h++) {
        __m256 x = _mm256_min_ps(_mm256_set1_ps(hi), _mm256_max_ps(_mm256_set1_ps(lo), f[h]));
        q[h] = _mm256_add_epi32(_mm256_cvtps_epi32(x), _mm256_set1_epi32(g->zy));
    }
    /* 16 values in the output type's range: packed to 16 bytes in order */
    __m256i p16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[0], q[1]), 0xD8);
    __m256i p8 = g->out == MI_Q_U8 ? _mm256_packus_epi16(p16, p16) : _mm256_packs_epi16(p16, p16);
    p8 = _mm256_permute4x64_epi64(p8, 0x08);
    _mm_storeu_si128((__m128i *)((uint8_t *)g->c + i * g->ldc + j0), _mm256_castsi256_si128(p8));
}

/* 8 rows x 32 columns requantized in registers (uint8/int8 C, no row sums: B's zero points
 * 0; K's last quad, if partial, from B's padded tails): micro_512_8x2's sums, then q_epi_512's operations on each accumulator
 * (the same float32 operations in the same order: bit-identical), the bytes stored into the
 * rows of C (ldc apart) from column j0 */
#define REQ16(x, ct, m, row, col)                                                            \
    do {                                                                                     \
        __m512 f_ = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(x, ct)), m);            \
        f_ = _mm512_min_ps(hiv, _mm512_max_ps(lov, f_));                                     \
        __m512i q_ = _mm512_add_epi32(_mm512_cvtps_epi32(f_), zyv);                          \
        _mm_storeu_si128((__m128i *)(c + (row) * ldc + (col)), _mm512_cvtepi32_epi8(q_));     \
    } while (0)
#define REQ_ROW(x, y, row)                                                                   \
    do {                                                                                     \
        REQ16(x, ct0, m0, row, 0);                                                           \
        REQ16(y, ct1, m1, row, QNB);                                                         \
    } while (0)
Q_AVX512VNNI static void micro_512_8x2_q(const qjob *g, const uint8_t *ap, long lda,
                                         long i0, long j0) {
    ROWS8(ap, lda);
    const int8_t *p0 = g->bp + j0 * g->k, *p1 = g->bp + (j0 + QNB) * g->k;
    __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0,
            c7 = c0, d0 = c0, d1 = c0, d2 = c0, d3 = c0, d4 = c0, d5 = c0, d6 = c0, d7 = c0;
    for (long q = 0; q < g->kq; q++, p0 += 64, p1 += 64) {
        __m512i b0 = _mm512_loadu_si512((const void *)p0);
        __m512i b1 = _mm512_loadu_si512((const void *)p1);
        DP2(c0, d0, 0);
        DP2(c1, d1, 1);
        DP2(c2, d2, 2);
        DP2(c3, d3, 3);
        DP2(c4, d4, 4);
        DP2(c5, d5, 5);
        DP2(c6, d6, 6);
        DP2(c7, d7, 7);
        __asm__("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5), "+v"(c6),
                "+v"(c7));
        __asm__("" : "+v"(d0), "+v"(d1), "+v"(d2), "+v"(d3), "+v"(d4), "+v"(d5), "+v"(d6),
                "+v"(d7));
    }
    if (g->btail) { /* K % 4 last rows: A's rows are zero-padded in the part's buffer */
        const long q = g->kq;
        __m512i b0 = _mm512_loadu_si512((const void *)(g->btail + j0 / QNB * 64));
        __m512i b1 = _mm512_loadu_si512((const void *)(g->btail + (j0 / QNB + 1) * 64));
        DP2(c0, d0, 0);
        DP2(c1, d1, 1);
        DP2(c2, d2, 2);
        DP2(c3, d3, 3);
        DP2(c4, d4, 4);
        DP2(c5, d5, 5);
        DP2(c6, d6, 6);
        DP2(c7, d7, 7);
    }
    const __m512i ct0 = _mm512_loadu_si512((const void *)(g->colterm + j0)),
                  ct1 = _mm512_loadu_si512((const void *)(g->colterm + j0 + QNB));
    const __m512 m0 = g->mult_step ? _mm512_loadu_ps(g->mult + j0) : _mm512_set1_ps(g->mult[0]);
    const __m512 m1 =
        g->mult_step ? _mm512_loadu_ps(g->mult + j0 + QNB) : _mm512_set1_ps(g->mult[0]);
    const __m512 lov = _mm512_set1_ps(g->lo - (float)g->zy),
                 hiv = _mm512_set1_ps(g->hi - (float)g->zy);
    const __m512i zyv = _mm512_set1_epi32(g->zy);
    uint8_t *c = (uint8_t *)g->c + i0 * g->ldc + j0;
    const long ldc = g->ldc;
    REQ_ROW(c0, d0, 0);
    REQ_ROW(c1, d1, 1);
    REQ_ROW(c2, d2, 2);
    REQ_ROW(c3, d3, 3);
    REQ_ROW(c4, d4, 4);
    REQ_ROW(c5, d5, 5);
    REQ_ROW(c6, d6, 6);
    REQ_ROW(c7, d7, 7);
}

/* 8 rows x w columns (w <= 16: one panel, full or the last partial one) requantized in
 * registers, as micro_512_8x2_q does two panels (uint8/int8 C, no row sums): the narrow 1x1
 * layers of mobile networks (16-24 outputs) and a layer's odd last panel. B from the full
 * panel jp (its K % 4 tail from btail) or the partial one (blast, kq4 padded quads); the
 * column terms and multipliers read and C written under a mask of w columns. */
Q_AVX512VNNI static void micro_512_8_q(const qjob *g, const uint8_t *ap, long lda, long i0,
                                       long jp, long w) {
    ROWS8(ap, lda);
    const long j0 = jp * QNB;
    const int full = w == QNB;
    const int8_t *b = full ? g->bp + j0 * g->k : g->blast;
    const long nq = full ? g->kq : g->kq4;
    DP_TILE8(b, nq);
    if (full && g->btail) { /* K % 4 last rows: A's rows are zero-padded in the part's buffer */
        const long q = g->kq;
        __m512i bv = _mm512_loadu_si512((const void *)(g->btail + jp * 64));
        DP(c0, 0);
        DP(c1, 1);
        DP(c2, 2);
        DP(c3, 3);
        DP(c4, 4);
        DP(c5, 5);
        DP(c6, 6);
        DP(c7, 7);
    }
    const __mmask16 k = full ? (__mmask16)0xFFFF : (__mmask16)((1u << w) - 1);
    const __m512i ct0 = _mm512_maskz_loadu_epi32(k, g->colterm + j0);
    const __m512 m0 = g->mult_step ? _mm512_maskz_loadu_ps(k, g->mult + j0)
                                   : _mm512_set1_ps(g->mult[0]);
    const __m512 lov = _mm512_set1_ps(g->lo - (float)g->zy),
                 hiv = _mm512_set1_ps(g->hi - (float)g->zy);
    const __m512i zyv = _mm512_set1_epi32(g->zy);
    uint8_t *c = (uint8_t *)g->c + i0 * g->ldc + j0;
    const long ldc = g->ldc;
#define REQ16M(x, row)                                                                       \
    do {                                                                                     \
        __m512 f_ = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(x, ct0)), m0);          \
        f_ = _mm512_min_ps(hiv, _mm512_max_ps(lov, f_));                                     \
        __m512i q_ = _mm512_add_epi32(_mm512_cvtps_epi32(f_), zyv);                          \
        _mm512_mask_cvtepi32_storeu_epi8(c + (row) * ldc, k, q_);                            \
    } while (0)
    REQ16M(c0, 0);
    REQ16M(c1, 1);
    REQ16M(c2, 2);
    REQ16M(c3, 3);
    REQ16M(c4, 4);
    REQ16M(c5, 5);
    REQ16M(c6, 6);
    REQ16M(c7, 7);
#undef REQ16M
}
#endif

#include "_qamx.h"

/* the epilogue of w columns of row i from j0: 16 at once in vectors where the kernels are
 * SIMD ones, else q_epilogue_row */
static inline void q_epilogue(const qjob *g, const int32_t *acc, long i, int32_t rsum, long j0,
                              long w) {
#if Q_HAVE_X86
    if (w == QNB && g->isa >= QISA_AVX512VNNI) {
        q_epi_512(g, acc, i, rsum, j0);
        return;
    }
    if (w == QNB && g->isa != QISA_PLAIN) {
        q_epi_avx2(g, acc, i, rsum, j0);
        return;
    }
#endif
    q_epilogue_row(g, acc, i, rsum, j0, w);
}

/* the rows of row panel ip (its packed panel `apanel`, its row sums `rs`) times column
 * panel jp: the sums, then the epilogue */
static void q_unit(const qjob *g, const void *apanel, long lda, const int32_t *rs, long ip,
                   long jp) {
    long j0 = jp * QNB, w = lmin(QNB, g->n - j0);
    long rows = lmin(g->mr, g->m - ip * g->mr);
#if Q_HAVE_X86
    if (g->isa >= QISA_AVX512VNNI && g->fused && rows == g->mr) {
        micro_512_8_q(g, (const uint8_t *)apanel, lda, ip * g->mr, jp, w);
        return;
    }
#endif
    int32_t acc[QMR_MAX * QNB];
    memset(acc, 0, sizeof acc);
    if (w == QNB) {
        micro(g, apanel, lda, 0, g->bp + j0 * g->k, g->kq, rows, acc);
        if (g->btail) micro(g, apanel, lda, g->kq, g->btail + jp * 64, 1, rows, acc);
    } else {
        micro(g, apanel, lda, 0, g->blast, g->kq4, rows, acc);
    }
    for (long r = 0; r < rows; r++) q_epilogue(g, acc + r * QNB, ip * g->mr + r, rs[r], j0, w);
}

/* row panel ip times column panels 2 jq and 2 jq + 1: AVX-512 VNNI runs two full panels of 5
 * rows or more as one 8 x 32 tile; everything else panel by panel */
static void q_unit2(const qjob *g, const void *apanel, long lda, const int32_t *rs, long ip,
                    long jq) {
    long jp = 2 * jq;
#if Q_HAVE_X86
    long rows = lmin(g->mr, g->m - ip * g->mr);
    if (g->isa >= QISA_AVX512VNNI && rows > 4 && (jp + 2) * QNB <= g->n) {
        if (g->fused && rows == g->mr) {
            micro_512_8x2_q(g, (const uint8_t *)apanel, lda, ip * g->mr, jp * QNB);
            return;
        }
        int32_t acc[2][QMR_MAX * QNB]; /* written by micro_512_8x2 */
        long j0 = jp * QNB;
        micro_512_8x2((const uint8_t *)apanel, lda, g->bp + j0 * g->k,
                      g->bp + (j0 + QNB) * g->k, g->kq, acc[0], acc[1], 0);
        for (int h = 0; h < 2; h++) {
            if (g->btail)
                micro(g, apanel, lda, g->kq, g->btail + (jp + h) * 64, 1, rows, acc[h]);
            for (long r = 0; r < rows; r++)
                q_epilogue(g, acc[h] + r * QNB, ip * g->mr + r, rs[r], j0 + h * QNB, QNB);
        }
        return;
    }
#endif
    q_unit(g, apanel, lda, rs, ip, jp);
    if (jp + 1 < g->np) q_unit(g, apanel, lda, rs, ip, jp + 1);
}

/* one row of A row-major (k bytes at src, or already at dst) into dst: ^flip (uint8 a'),
 * zeros up to kpad; returns the sum of a' where `sum` is set (else 0) */
CLONES static int32_t q_copy_row(const uint8_t *src, uint8_t *dst, long k, long kpad,
                                 uint8_t flip, int sum) {
    if (src != dst) memcpy(dst, src, (size_t)k);
    if (flip)
        for (long kk = 0; kk < k; kk++) dst[kk] ^= flip;
    for (long kk = k; kk < kpad; kk++) dst[kk] = 0;
    uint32_t s = 0;
    if (sum)
        for (long kk = 0; kk < k; kk++) s += dst[kk];
    return (int32_t)s;
}

/* A's rows [i0, i1) packed into `ap` (their panels, from the first) with their row sums */
static void q_pack_rows(const qjob *g, long i0, long i1, uint8_t *ap, int32_t *rs,
                        uint8_t *row) {
    const mi_qconv_args *conv = g->src.conv;
    for (long i = i0; i < i1; i++) {
        const long li = i - i0;
        if (g->rowmajor) {
            uint8_t *dst = ap + li * g->kpad;
            const uint8_t *src = conv ? q_conv_row(conv, g->src.direct, i, dst)
                                      : g->src.a + i * g->src.lda;
            rs[li] = q_copy_row(src, dst, g->k, g->kpad, g->flip, g->rowsums);
            continue;
        }
        const uint8_t *src = conv ? q_conv_row(conv, g->src.direct, i, row)
                                  : g->src.a + i * g->src.lda;
        rs[li] = q_pack_row(src, li % g->mr, g->k, g->flip, g->mr, g->esize, g->rowsums,
                            ap + (li / g->mr) * g->panel_bytes);
    }
    /* the last panel's rows past m: zeros (their sums are never written out) */
    const long end = (i1 - i0 + g->mr - 1) / g->mr * g->mr;
    for (long li = i1 - i0; li < end; li++) {
        rs[li] = 0;
        if (g->rowmajor) {
            memset(ap + li * g->kpad, 0, (size_t)g->kpad);
            continue;
        }
        uint8_t *p = ap + (li / g->mr) * g->panel_bytes + (li % g->mr) * 4 * g->esize;
        for (long q = 0; q < g->kq4; q++)
            memset(p + q * g->mr * 4 * g->esize, 0, 4 * (size_t)g->esize);
    }
}

/* bytes of B's panels that a part runs row panel by row panel across (in L2) */
#define Q_B_CHUNK_BYTES (384 * 1024)

/* the quads of K per slice where K is blocked: a column pair's slice (32 x 4 x Q_KCQ bytes,
 * 16 KiB) stays in L1 across the block's row panels */
#define Q_KCQ 128

/* row panel ip's packed rows, their stride and row sums, for a part whose block starts at
 * panel p0 (its copy at ap; in place: only a partial last panel is copied) */
static const void *q_panel(const qjob *g, long ip, long p0, const uint8_t *ap, int partial,
                           long *lda, const int32_t **rs, const int32_t *rsums,
                           const int32_t *zeros) {
    if (!g->direct) {
        *lda = g->rowmajor ? g->kpad : 0;
        *rs = rsums + (ip - p0) * g->mr;
        return ap + (ip - p0) * g->panel_bytes;
    }
    *rs = zeros;
    if (partial && ip == g->mp - 1) {
        *lda = g->kpad;
        return ap;
    }
    *lda = g->alda;
    return g->abase + ip * g->mr * g->alda;
}

#if Q_HAVE_X86
/* AVX-512 VNNI, K long: the full column pair jq over the block's row panels [p0, p1), K in
 * slices of Q_KCQ quads (each slice of the pair read from L1 by every panel), the sums kept
 * in `acc` (2 x 8 x 16 per panel), then K's padded last quad and the epilogue */
static void q_pair_kblocked(const qjob *g, long p0, long p1, long jq, const uint8_t *ap,
                            int partial, const int32_t *rsums, const int32_t *zeros,
                            int32_t *acc) {
    const long jp = 2 * jq, j0 = jp * QNB;
    const int8_t *b0 = g->bp + j0 * g->k, *b1 = g->bp + (j0 + QNB) * g->k;
    for (long q0 = 0; q0 < g->kq; q0 += Q_KCQ) {
        const long nq = lmin(Q_KCQ, g->kq - q0);
        for (long ip = p0; ip < p1; ip++) {
            long lda;
            const int32_t *rs;
            const uint8_t *a = q_panel(g, ip, p0, ap, partial, &lda, &rs, rsums, zeros);
            int32_t *t = acc + (ip - p0) * 2 * QMR_MAX * QNB;
            micro_512_8x2(a + 4 * q0, lda, b0 + q0 * 64, b1 + q0 * 64, nq, t,
                          t + QMR_MAX * QNB, q0 > 0);
        }
    }
    for (long ip = p0; ip < p1; ip++) {
        long lda;
        const int32_t *rs;
        const uint8_t *a = q_panel(g, ip, p0, ap, partial, &lda, &rs, rsums, zeros);
        const long rows = lmin(g->mr, g->m - ip * g->mr);
        for (int h = 0; h < 2; h++) {
            int32_t *t = acc + (ip - p0) * 2 * QMR_MAX * QNB + h * QMR_MAX * QNB;
            if (g->btail) micro(g, a, lda, g->kq, g->btail + (jp + h) * 64, 1, rows, t);
            for (long r = 0; r < rows; r++)
                q_epilogue(g, t + r * QNB, ip * g->mr + r, rs[r], j0 + h * QNB, QNB);
        }
    }
}
#endif

#if Q_HAVE_AMX
/* AMX: the column pairs [q0, q1) over the block's row panels [p0, p1): groups of 4 (else 2)
 * whole panels by tiles (q_amx_group) where the pair is full, the rest as AVX-512 VNNI does */
static void q_part_amx(const qjob *g, long p0, long p1, long q0, long q1, const uint8_t *ap,
                       int partial, const int32_t *rsums, const int32_t *zeros) {
    q_amx_begin();
    for (long jq = q0; jq < q1; jq++) {
        long ip = p0;
        /* K under one chunk (a mobile network's 1x1 layers of 16-48 channels): the VNNI
         * tiles, which requantize in registers */
        while (g->kq >= 16 && (2 * jq + 2) * QNB <= g->n && ip < p1) {
            const long panels = ip + 4 <= p1 && (ip + 4) * g->mr <= g->m   ? 4
                                : ip + 2 <= p1 && (ip + 2) * g->mr <= g->m ? 2
                                                                           : 0;
            if (!panels) break;
            long lda, lda2;
            const int32_t *rs[4];
            const uint8_t *a = q_panel(g, ip, p0, ap, partial, &lda, &rs[0], rsums, zeros);
            for (long p = 1; p < panels; p++)
                q_panel(g, ip + p, p0, ap, partial, &lda2, &rs[p], rsums, zeros);
            q_amx_group(g, ip, panels, a, lda, rs, jq);
            ip += panels;
        }
        for (; ip < p1; ip++) {
            long lda;
            const int32_t *rs;
            const void *a = q_panel(g, ip, p0, ap, partial, &lda, &rs, rsums, zeros);
            q_unit2(g, a, lda, rs, ip, jq);
        }
    }
    q_amx_end();
}
#endif

/* the units [begin, end) of a part: unit u is block u / nchunks, column chunk u % nchunks */
static void q_part(const void *job, int part, int parts) {
    static const int32_t zeros[QMR_MAX] = {0};
    const qjob *g = job;
    long begin, end;
    mi_pool_share(g->nblocks * g->nchunks, part, parts, &begin, &end);
    if (begin >= end) return;
    uint8_t *buf = g->own ? g->own : (uint8_t *)mi_pool_scratch((long)(g->buf_bytes / 4 + 16));
    if (!buf) return; /* the pool says so: the caller runs the job again alone */
    uint8_t *ap = (uint8_t *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
    const size_t a_bytes = (size_t)g->bpanels * g->panel_bytes;
    int32_t *rs = (int32_t *)(ap + a_bytes);
    uint8_t *row = (uint8_t *)(rs + g->bpanels * g->mr);
    int32_t *kacc = (int32_t *)(ap + g->acc_off); /* K blocked: the block's sums of a pair */
    (void)kacc;
    const long pairs = (g->np + 1) / 2;
    const long blda = g->rowmajor ? g->kpad : 0; /* the buffer's row stride */
    long packed = -1;
    for (long u = begin; u < end; u++) {
        const long blk = u / g->nchunks, ch = u % g->nchunks;
        const long p0 = blk * g->bpanels, p1 = lmin(g->mp, p0 + g->bpanels);
        /* in place: only a last partial panel is copied (its rows padded to a whole panel) */
        const int partial = g->direct && p1 == g->mp && g->m % g->mr;
        if (blk != packed && (!g->direct || partial)) {
            long i0 = g->direct ? (g->mp - 1) * g->mr : p0 * g->mr;
            q_pack_rows(g, i0, lmin(g->m, p1 * g->mr), ap, rs, row);
            packed = blk;
        }
        long q0, q1;
        mi_pool_share(pairs, (int)ch, (int)g->nchunks, &q0, &q1);
        /* B's panels of the chunk within L2: row panel by row panel, each across the chunk
         * (its rows of C written together, the panel of A in L1); else column pair by pair
         * (the pair in L1 across the block's panels) */
#if Q_HAVE_AMX
        if (g->isa == QISA_AMX) {
            q_part_amx(g, p0, p1, q0, q1, ap, partial, rs, zeros);
            continue;
        }
#endif
#if Q_HAVE_X86
        if (g->kblock) { /* column pair by pair, K in slices */
            for (long jq = q0; jq < q1; jq++) {
                if ((2 * jq + 2) * QNB <= g->n) {
                    q_pair_kblocked(g, p0, p1, jq, ap, partial, rs, zeros, kacc);
                    continue;
                }
                for (long ip = p0; ip < p1; ip++) {
                    long lda;
                    const int32_t *rsp;
                    const void *a = q_panel(g, ip, p0, ap, partial, &lda, &rsp, rs, zeros);
                    q_unit2(g, a, lda, rsp, ip, jq);
                }
            }
            continue;
        }
#endif
        const int rows_first = (q1 - q0) * 2 * QNB * g->k <= Q_B_CHUNK_BYTES;
        const long outer = rows_first ? p1 - p0 : q1 - q0, inner = rows_first ? q1 - q0 : p1 - p0;
        for (long o = 0; o < outer; o++)
            for (long in = 0; in < inner; in++) {
                const long ip = p0 + (rows_first ? o : in), jq = q0 + (rows_first ? in : o);
                if (!g->direct)
                    q_unit2(g, ap + (ip - p0) * g->panel_bytes, blda, rs + (ip - p0) * g->mr,
                            ip, jq);
                else if (partial && ip == g->mp - 1)
                    q_unit2(g, ap, blda, zeros, ip, jq);
                else
                    q_unit2(g, g->abase + ip * g->mr * g->alda, g->alda, zeros, ip, jq);
            }
    }
}

/* bytes of packed A per block: a budget that leaves L2 room for B's panels and C */
#define Q_BLOCK_BYTES (96 * 1024)

static int q_gemm(const mi_qgemm_args *a, const qsrc *src) {
    if (!a->bp || !a->colsum || !a->c || !a->zb ||
        ANY_NEGATIVE(a->m, a->n, a->k, a->lda, a->ldc, a->zb_step, a->mult_step) ||
        a->zb_step > 1 || a->mult_step > 1 || a->out < MI_Q_INT32 || a->out > MI_Q_S8 ||
        (a->out != MI_Q_INT32 && !a->mult))
        return MI_EARGS;
    if (a->m == 0 || a->n == 0) return MI_OK;
    qjob g = {.src = *src, .bp = a->bp, .zb = a->zb, .zb_step = a->zb_step, .mult = a->mult,
              .bias = a->bias, .mult_step = a->mult_step, .c = a->c, .m = a->m, .n = a->n,
              .k = a->k, .ldc = a->ldc, .out = a->out, .zy = a->zy, .lo = a->lo, .hi = a->hi};
    g.isa = mi_qgemm_isa();
    g.mr = q_mr(g.isa);
    g.esize = q_esize(g.isa);
    g.kq = g.k / 4;
    g.kq4 = (g.k + 3) / 4;
    g.mp = (g.m + g.mr - 1) / g.mr;
    g.np = (g.n + QNB - 1) / QNB;
    g.flip = a->a_signed ? 0x80 : 0;
    /* the row sums only matter where a zero point of B is not 0 */
    for (long j = 0; j < (g.zb_step ? g.n : 1) && !g.rowsums; j++) g.rowsums = a->zb[j] != 0;
    g.panel_bytes = (size_t)(g.kq4 * g.mr * 4 * g.esize);
    /* AVX-512 VNNI reads A row-major: in place where the rows need no change (uint8, whole
     * quads, no row sums) and are evenly spaced (a matrix, a 1 x 1 stride-1 convolution) */
    g.rowmajor = g.isa >= QISA_AVX512VNNI;
    g.kpad = g.kq4 * 4;
    g.fused = g.rowmajor && !g.rowsums && (g.out == MI_Q_U8 || g.out == MI_Q_S8);
    if (g.rowmajor && !g.flip && g.k % 4 == 0 && !g.rowsums) {
        const mi_qconv_args *v = src->conv;
        if (!v) {
            g.direct = 1;
            g.abase = src->a;
            g.alda = src->lda;
        } else if (src->direct && v->sh == 1 && v->sw == 1) {
            g.direct = 1;
            g.abase = (const uint8_t *)v->x + v->c0;
            g.alda = v->c;
        }
    }
    /* blocks of row panels within the budget, and at least two per thread where the rows
     * allow; column chunks where the blocks are still fewer than four units per thread */
    const long threads = g.m * g.n * lmax(g.k, 1) < 65536L ? 1 : lmax(1, mi_pool_get_threads());
    g.bpanels = lmax(1, (long)(Q_BLOCK_BYTES / (g.panel_bytes ? g.panel_bytes : 1)));
    if (threads > 1) g.bpanels = lmin(g.bpanels, (g.mp + 2 * threads - 1) / (2 * threads));
    g.nblocks = (g.mp + g.bpanels - 1) / g.bpanels;
    g.nchunks = threads == 1 ? 1
                             : lmax(1, lmin((g.np + 1) / 2,
                                            (4 * threads + g.nblocks - 1) / g.nblocks));
    g.kblock = g.rowmajor && g.kq > 2 * Q_KCQ && g.isa != QISA_AMX;
    /* AMX: blocks of whole 32-row groups */
    if (g.isa == QISA_AMX && g.bpanels > 4) {
        g.bpanels &= ~3L;
        g.nblocks = (g.mp + g.bpanels - 1) / g.bpanels;
        g.nchunks = threads == 1 ? 1
                                 : lmax(1, lmin((g.np + 1) / 2,
                                                (4 * threads + g.nblocks - 1) / g.nblocks));
    }
    g.acc_off = ((size_t)g.bpanels * g.panel_bytes + sizeof(int32_t) * (size_t)(g.bpanels * g.mr) +
                 (src->conv && !src->direct ? (size_t)g.k : 0) + 63) / 64 * 64;
    g.buf_bytes = 64 + g.acc_off +
                  (g.kblock ? sizeof(int32_t) * (size_t)(g.bpanels * 2 * QMR_MAX * QNB) : 0);
    const long r = g.k % 4, full = g.n / QNB, w_last = g.n - full * QNB;
    const uint32_t za = (uint32_t)a->za + (a->a_signed ? 128u : 0u);
    /* one block: column terms, B's padded tails */
    size_t sizes[3] = {sizeof(int32_t) * (size_t)g.n, r ? (size_t)(64 * full) : 0,
                       w_last ? (size_t)(64 * g.kq4) : 0};
    size_t offs[3], total = 0;
    for (int i = 0; i < 3; i++) {
        offs[i] = total;
        total += (sizes[i] + 63) / 64 * 64;
    }
    uint8_t *block = aligned_alloc(64, total ? total : 64);
    if (!block) return MI_ENOMEM;
    int32_t *colterm = (int32_t *)(block + offs[0]);
    for (long j = 0; j < g.n; j++)
        colterm[j] = (int32_t)((uint32_t)g.k * za * (uint32_t)a->zb[j * g.zb_step] -
                               za * (uint32_t)a->colsum[j]);
    if (a->bias && (a->out == MI_Q_U8 || a->out == MI_Q_S8)) /* int32 bias: into the sums */
        for (long j = 0; j < g.n; j++)
            colterm[j] = (int32_t)((uint32_t)colterm[j] + (uint32_t)((const int32_t *)a->bias)[j]);
    const int8_t *bp = a->bp;
    if (r) { /* the k % 4 last rows of each full panel, as one padded quad */
        int8_t *t = (int8_t *)(block + offs[1]);
        memset(t, 0, sizes[1]);
        for (long p = 0; p < full; p++)
            for (long tt = 0; tt < r; tt++)
                for (long j = 0; j < QNB; j++)
                    t[p * 64 + j * 4 + tt] = bp[p * QNB * g.k + g.kq * 4 * QNB + tt * QNB + j];
        g.btail = t;
    }
    if (w_last) { /* the partial last panel, as kq4 padded quads */
        int8_t *t = (int8_t *)(block + offs[2]);
        const int8_t *last = bp + full * QNB * g.k;
        memset(t, 0, sizes[2]);
        for (long q = 0; q < g.kq; q++)
            for (long j = 0; j < w_last; j++)
                for (long tt = 0; tt < 4; tt++)
                    t[q * 64 + j * 4 + tt] = last[(q * w_last + j) * 4 + tt];
        for (long tt = 0; tt < r; tt++)
            for (long j = 0; j < w_last; j++)
                t[g.kq * 64 + j * 4 + tt] = last[g.kq * 4 * w_last + tt * w_last + j];
        g.blast = t;
    }
    g.colterm = colterm;
    int rc = MI_OK;
    /* small products are not worth waking the pool; a part without scratch: all alone */
    if (threads == 1 || mi_pool_run(q_part, &g) != 0) {
        g.own = malloc(g.buf_bytes);
        if (g.own)
            q_part(&g, 0, 1);
        else
            rc = MI_ENOMEM;
        free(g.own);
    }
    free(block);
    return rc;
}

int mi_qgemm_i8(const mi_qgemm_args *a) {
    if (!a->a) return MI_EARGS;
    qsrc src = {.a = a->a, .lda = a->lda, .conv = NULL, .direct = 0};
    return q_gemm(a, &src);
}

/* a convolution's product: A's rows the windows of an NHWC image (gemm.a unused), so that no
 * im2col matrix is made; a 1 x 1 window without padding reads its rows in place */
int mi_qconv_i8(const mi_qconv_args *v) {
    if (!v->x || ANY_NEGATIVE(v->n, v->h, v->w, v->c, v->c0, v->cg, v->kh, v->kw, v->ph, v->pw,
                              v->oh, v->ow) ||
        v->sh < 1 || v->sw < 1 || v->dh < 1 || v->dw < 1 || v->c0 + v->cg > v->c ||
        v->gemm.m != v->n * v->oh * v->ow || v->gemm.k != v->kh * v->kw * v->cg)
        return MI_EARGS;
    const int direct = v->kh == 1 && v->kw == 1 && v->ph == 0 && v->pw == 0 &&
                       (v->oh - 1) * v->sh < v->h && (v->ow - 1) * v->sw < v->w;
    qsrc src = {.a = NULL, .lda = 0, .conv = v, .direct = direct};
    return q_gemm(&v->gemm, &src);
}

/* ---- DynamicQuantizeLinear --------------------------------------------------------------- */

static void q_minmax_c(const float *x, long n, float *lo, float *hi) {
    float a = *lo, b = *hi;
    for (long i = 0; i < n; i++) {
        a = x[i] < a ? x[i] : a;
        b = x[i] > b ? x[i] : b;
    }
    *lo = a;
    *hi = b;
}

#if defined(__x86_64__)
/* four 8-lane accumulators (the scalar chain is latency bound: ~10x slower); vminps(x, a)
 * gives a where x is NaN or both are zeros, as the scalar comparison does */
__attribute__((target("avx2"))) static void q_minmax_avx2(const float *x, long n, float *lo,
                                                         float *hi) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    long i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
        __m256 x2 = _mm256_loadu_ps(x + i + 16), x3 = _mm256_loadu_ps(x + i + 24);
        a0 = _mm256_min_ps(x0, a0), a1 = _mm256_min_ps(x1, a1);
        a2 = _mm256_min_ps(x2, a2), a3 = _mm256_min_ps(x3, a3);
        b0 = _mm256_max_ps(x0, b0), b1 = _mm256_max_ps(x1, b1);
        b2 = _mm256_max_ps(x2, b2), b3 = _mm256_max_ps(x3, b3);
    }
    float la[8], hb[8];
    _mm256_storeu_ps(la, _mm256_min_ps(_mm256_min_ps(a0, a1), _mm256_min_ps(a2, a3)));
    _mm256_storeu_ps(hb, _mm256_max_ps(_mm256_max_ps(b0, b1), _mm256_max_ps(b2, b3)));
    float a = 0.0f, b = 0.0f;
    for (int j = 0; j < 8; j++) {
        a = la[j] < a ? la[j] : a;
        b = hb[j] > b ? hb[j] : b;
    }
    *lo = a;
    *hi = b;
    q_minmax_c(x + i, n - i, lo, hi);
}
#endif

static void q_minmax(const float *x, long n, float *lo, float *hi) {
    *lo = 0.0f, *hi = 0.0f; /* the range always includes 0 */
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2")) {
        q_minmax_avx2(x, n, lo, hi);
        return;
    }
#endif
    q_minmax_c(x, n, lo, hi);
}

CLONES static void q_quantize_u8(const float *x, uint8_t *y, long n, float scale, float zp) {
    for (long i = 0; i < n; i++) {
        float v = rintf(x[i] / scale) + zp;
        v = v < 0.0f ? 0.0f : v;
        y[i] = (uint8_t)(int32_t)(v > 255.0f ? 255.0f : v);
    }
}

/* y = saturate(round(x / scale) + zp) with scale = (max(0, max x) - min(0, min x)) / 255 and
 * zp = saturate(round(0 - min / scale)), round half to even, in float32 as onnxruntime
 * (scale 1 where the range is empty, x all zeros; the ONNX reference gives 1 / 255 there:
 * y and the zero point, all zeros, are the same) */
int mi_dql_f32(const mi_dql_args *a) {
    if (!a->x || !a->y || !a->scale || !a->zp || a->n < 0) return MI_EARGS;
    float lo, hi;
    q_minmax(a->x, a->n, &lo, &hi);
    float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    float zp = 0.0f - lo / scale;
    zp = zp < 0.0f ? 0.0f : (zp > 255.0f ? 255.0f : zp);
    zp = rintf(zp);
    q_quantize_u8(a->x, a->y, a->n, scale, zp);
    *a->scale = scale;
    *a->zp = (unsigned char)zp;
    return MI_OK;
}
