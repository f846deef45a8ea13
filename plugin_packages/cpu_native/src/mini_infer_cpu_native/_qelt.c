/* com.microsoft's QLinearAdd and QLinearMul on 8-bit tensors (qelementwise.py): one pass (on
 * the pool from 64 KiB on: rows, or pieces of a row where there are few), in float32 as
 * onnxruntime's x86 kernels compute them (and cpu_basic's NumPy kernel, so that all three give
 * the same bits):
 *
 *   add: y = sat(rint(fma(a, ra, fma(b, rb, fixed))))     ra = sa / sc, rb = sb / sc,
 *                                                          fixed = zy - fma(ra, za, rb * zb)
 *   mul: y = sat(rint((a - za) * (b - zb) * ra + zy))      ra = sa * sb / sc
 *
 * Add's zero points inside the fixed part (the caller's), each fma rounded once (fmaf; the
 * AVX2 and AVX-512 paths vfmadd); Mul's products and sums rounded apart (-std=c11 keeps the
 * compiler from contracting them); rounding half to even (rintf in the default rounding mode,
 * vroundps / vrndscaleps to nearest), saturation to uint8 or int8. The broadcast operand is B
 * (onnxruntime's too: its kernel takes the operand that is one value along a span as B).
 * A is (outer, inner); B's value for A's (o, p) is b[o * b_outer_step + p * b_step]: B the
 * same shape (b_step 1, b_outer_step inner), one value per outer index (0, 1: a
 * squeeze-and-excitation's scale against NCHW), one row for every outer index (1, 0: that
 * scale against one image in NHWC), or one value (0, 0). */

#include <math.h>
#include <stdint.h>

#include "_args.h"
#include "_common.h"
#include "_pool.h"

/* one value of A (x) and of B (z), as float, into the rounded and saturated float */
static inline float qbin_one(const mi_qbinary_args *a, float x, float z, float lo, float hi) {
    float v = a->op == 0 ? fmaf(x, a->ra, fmaf(z, a->rb, a->fixed))
                         : (x - (float)a->za) * (z - (float)a->zb) * a->ra + (float)a->zy;
    v = rintf(v);
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
}

/* elements [p0, p1) of row o, one at a time */
static void qbin_span(const mi_qbinary_args *a, long o, long p0, long p1) {
    const long bs = a->b_step;
    const float lo = a->is_signed ? -128.0f : 0.0f, hi = a->is_signed ? 127.0f : 255.0f;
    if (a->is_signed) {
        const int8_t *x = (const int8_t *)a->a + o * a->inner;
        const int8_t *z = (const int8_t *)a->b + o * a->b_outer_step;
        int8_t *y = (int8_t *)a->y + o * a->inner;
        for (long p = p0; p < p1; p++)
            y[p] = (int8_t)(int32_t)qbin_one(a, (float)x[p], (float)z[p * bs], lo, hi);
    } else {
        const uint8_t *x = (const uint8_t *)a->a + o * a->inner;
        const uint8_t *z = (const uint8_t *)a->b + o * a->b_outer_step;
        uint8_t *y = (uint8_t *)a->y + o * a->inner;
        for (long p = p0; p < p1; p++)
            y[p] = (uint8_t)(int32_t)qbin_one(a, (float)x[p], (float)z[p * bs], lo, hi);
    }
}

static void qbin_plain(const mi_qbinary_args *a) {
    for (long o = 0; o < a->outer; o++) qbin_span(a, o, 0, a->inner);
}

int mi_qgemm_isa(void); /* _qgemm.c: 3 is AVX-512 VNNI (the tests cap it) */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QBIN_512 1
/* AVX2 with FMA: 8 values a step, the last few one at a time (fmaf inlined here) */
__attribute__((target("avx2,fma"))) static inline __m256 qbin_ld8(const void *p, int sgn) {
    const __m128i b = _mm_loadl_epi64((const __m128i *)p);
    return _mm256_cvtepi32_ps(sgn ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b));
}

__attribute__((target("avx2,fma"))) static void qbin_avx2(const mi_qbinary_args *a) {
    const long inner = a->inner, bs = a->b_step;
    const int sgn = a->is_signed, add = a->op == 0;
    const __m256 za = _mm256_set1_ps((float)a->za), zb = _mm256_set1_ps((float)a->zb);
    const __m256 zy = _mm256_set1_ps((float)a->zy), ra = _mm256_set1_ps(a->ra);
    const __m256 rb = _mm256_set1_ps(a->rb), fx = _mm256_set1_ps(a->fixed);
    const __m256 lo = _mm256_set1_ps(sgn ? -128.0f : 0.0f);
    const __m256 hi = _mm256_set1_ps(sgn ? 127.0f : 255.0f);
    for (long o = 0; o < a->outer; o++) {
        const uint8_t *x = (const uint8_t *)a->a + o * inner;
        const uint8_t *z = (const uint8_t *)a->b + o * a->b_outer_step;
        uint8_t *y = (uint8_t *)a->y + o * inner;
        const __m256 z0 = _mm256_set1_ps(sgn ? (float)*(const int8_t *)z : (float)*z);
        long p = 0;
        for (; p + 8 <= inner; p += 8) {
            const __m256 vx = qbin_ld8(x + p, sgn), vz = bs ? qbin_ld8(z + p, sgn) : z0;
            __m256 v = add ? _mm256_fmadd_ps(vx, ra, _mm256_fmadd_ps(vz, rb, fx))
                           : _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(vx, za),
                                                                       _mm256_sub_ps(vz, zb)),
                                                         ra),
                                           zy);
            v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            const __m256i i = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
            const __m128i s16 = _mm_packs_epi32(_mm256_castsi256_si128(i),
                                                _mm256_extracti128_si256(i, 1));
            _mm_storel_epi64((__m128i *)(y + p),
                             sgn ? _mm_packs_epi16(s16, s16) : _mm_packus_epi16(s16, s16));
        }
        qbin_span(a, o, p, inner);
    }
}

/* AVX-512, where the integer GEMM's level is AVX-512 VNNI: 16 values a step, the last ones
 * masked */
#define Q512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))
Q512 static inline __m512 qbin_ld(const void *p, __mmask16 k, int sgn) {
    const __m128i b = _mm_maskz_loadu_epi8(k, p);
    return _mm512_cvtepi32_ps(sgn ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b));
}

Q512 static void qbin_512(const mi_qbinary_args *a) {
    const long outer = a->outer, inner = a->inner, bs = a->b_step, ostep = a->b_outer_step;
    const int sgn = a->is_signed, add = a->op == 0;
    const __m512 za = _mm512_set1_ps((float)a->za), zb = _mm512_set1_ps((float)a->zb);
    const __m512 zy = _mm512_set1_ps((float)a->zy), ra = _mm512_set1_ps(a->ra);
    const __m512 rb = _mm512_set1_ps(a->rb), fx = _mm512_set1_ps(a->fixed);
    const __m512 lo = _mm512_set1_ps(sgn ? -128.0f : 0.0f), hi = _mm512_set1_ps(sgn ? 127.0f : 255.0f);
    for (long o = 0; o < outer; o++) {
        const uint8_t *x = (const uint8_t *)a->a + o * inner;
        const uint8_t *z = (const uint8_t *)a->b + o * ostep;
        uint8_t *y = (uint8_t *)a->y + o * inner;
        const __m512 z0 = _mm512_set1_ps(sgn ? (float)*(const int8_t *)z : (float)*z);
        for (long p = 0; p < inner; p += 16) {
            const __mmask16 k = inner - p >= 16 ? (__mmask16)0xFFFF
                                                : (__mmask16)((1u << (inner - p)) - 1);
            const __m512 vx = qbin_ld(x + p, k, sgn), vz = bs ? qbin_ld(z + p, k, sgn) : z0;
            __m512 v = add ? _mm512_fmadd_ps(vx, ra, _mm512_fmadd_ps(vz, rb, fx))
                           : _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(vx, za),
                                                                       _mm512_sub_ps(vz, zb)),
                                                         ra),
                                           zy);
            v = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
            _mm_mask_storeu_epi8(y + p, k, _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
        }
    }
}
#undef Q512
#endif

/* one pass at the level chosen */
static void qbin_any(const mi_qbinary_args *a) {
#ifdef QBIN_512
    const int isa = mi_qgemm_isa();
    if (isa >= 3) {
        qbin_512(a);
        return;
    }
    if (isa >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        qbin_avx2(a);
        return;
    }
#endif
    qbin_plain(a);
}

/* rows [r0, r1) of A's outer index: A, B and Y moved to row r0 (B by b_outer_step) */
static void qbin_rows(const mi_qbinary_args *a, long r0, long r1) {
    if (r0 >= r1) return;
    mi_qbinary_args part = *a;
    part.a = (const uint8_t *)a->a + r0 * a->inner;
    part.b = (const uint8_t *)a->b + r0 * a->b_outer_step;
    part.y = (uint8_t *)a->y + r0 * a->inner;
    part.outer = r1 - r0;
    qbin_any(&part);
}

/* the pool's parts: rows of the outer index, or (one row: an NHWC image against its
 * per-channel B, or one tensor) pieces of the row, B's step permitting */
static void qbin_part(const void *job, int part, int parts) {
    const mi_qbinary_args *a = job;
    if (a->outer >= parts || a->b_step == 0) {
        long r0, r1;
        mi_pool_share(a->outer, part, parts, &r0, &r1);
        qbin_rows(a, r0, r1);
        return;
    }
    for (long o = 0; o < a->outer; o++) { /* B the same shape: pieces of each row */
        long p0, p1;
        mi_pool_share(a->inner / 64 + 1, part, parts, &p0, &p1);
        p0 = lmin(p0 * 64, a->inner), p1 = lmin(p1 * 64, a->inner);
        if (p0 >= p1) continue;
        mi_qbinary_args piece = *a;
        piece.a = (const uint8_t *)a->a + o * a->inner + p0;
        piece.b = (const uint8_t *)a->b + o * a->b_outer_step + p0;
        piece.y = (uint8_t *)a->y + o * a->inner + p0;
        piece.outer = 1, piece.inner = p1 - p0;
        qbin_any(&piece);
    }
}

int mi_qbinary_i8(const mi_qbinary_args *a) {
    if (!a->a || !a->b || !a->y || ANY_NEGATIVE(a->outer, a->inner, a->b_outer_step) ||
        a->b_step < 0 || a->b_step > 1 || a->op < 0 || a->op > 1 ||
        a->is_signed < 0 || a->is_signed > 1)
        return MI_EARGS;
    if (a->outer * a->inner < 65536L || mi_pool_run(qbin_part, a) != 0) qbin_rows(a, 0, a->outer);
    return MI_OK;
}

/* QLinearSigmoid, QLinearLeakyRelu (and any function of one 8-bit value): y[i] =
 * table[x[i]] over the 256 bit patterns of x, the table made by the caller. Where the integer
 * GEMM's level is AVX-512 VNNI (mi_qgemm_isa: the tests cap both) and the CPU has VBMI, 64
 * bytes a step: the table in four registers, two vpermi2b (x's low 7 bits) and a blend on its
 * top bit; else the plain loop. Shared out on the pool from 64 KiB on, in 64-byte pieces. */
#if defined(__x86_64__) && defined(__GNUC__)
#define QLOOKUP_VBMI 1
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static void lookup_vbmi(
    const uint8_t *x, const uint8_t *t, uint8_t *y, long n) {
    const __m512i t0 = _mm512_loadu_si512(t), t1 = _mm512_loadu_si512(t + 64);
    const __m512i t2 = _mm512_loadu_si512(t + 128), t3 = _mm512_loadu_si512(t + 192);
    for (long i = 0; i < n; i += 64) {
        const __mmask64 k = n - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - i)) - 1;
        const __m512i v = _mm512_maskz_loadu_epi8(k, x + i);
        const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);
        const __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);
        _mm512_mask_storeu_epi8(y + i, k,
                                _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
    }
}
#endif

typedef struct {
    const mi_qlookup_args *a;
    int vbmi;
} lookup_job;

static void lookup_part(const void *job, int part, int parts) {
    const lookup_job *j = job;
    const uint8_t *restrict x = j->a->x, *restrict t = j->a->table;
    uint8_t *restrict y = j->a->y;
    const long pieces = (j->a->n + 63) / 64;
    long p0, p1;
    mi_pool_share(pieces, part, parts, &p0, &p1);
    const long i0 = p0 * 64, i1 = lmin(j->a->n, p1 * 64);
#ifdef QLOOKUP_VBMI
    if (j->vbmi) {
        if (i1 > i0) lookup_vbmi(x + i0, t, y + i0, i1 - i0);
        return;
    }
#endif
    for (long i = i0; i < i1; i++) y[i] = t[x[i]];
}

static int lookup_vbmi_on(void) {
#ifdef QLOOKUP_VBMI
    return mi_qgemm_isa() >= 3 && __builtin_cpu_supports("avx512vbmi");
#else
    return 0;
#endif
}

int mi_qlookup_i8(const mi_qlookup_args *a) {
    if (!a->x || !a->table || !a->y || a->n < 0) return MI_EARGS;
    lookup_job j = {a, lookup_vbmi_on()};
    if (a->n < 65536L || mi_pool_run(lookup_part, &j) != 0) lookup_part(&j, 0, 1);
    return MI_OK;
}

/* QLinearChannelLookup (an inference BatchNormalization, a per-channel activation between QDQ
 * pairs): each channel's own 256-byte table, the channels the middle axis of outer x c x inner.
 * Shared out on the pool in one dispatch (rows of outer x c x inner: the outer index for NHWC,
 * inner = 1; each (outer, channel) plane otherwise) where there are 64 KiB or more of it. */
static void chlookup_rows(const mi_qchlookup_args *a, long r0, long r1) {
    const uint8_t *restrict x = a->x, *restrict t = a->table;
    uint8_t *restrict y = a->y;
    const long c = a->c, inner = a->inner;
    if (inner == 1) {
        for (long o = r0; o < r1; o++) {
            const uint8_t *restrict xo = x + o * c;
            uint8_t *restrict yo = y + o * c;
            for (long ch = 0; ch < c; ch++) yo[ch] = t[ch * 256 + xo[ch]];
        }
        return;
    }
    for (long r = r0; r < r1; r++) {
        const uint8_t *restrict tab = t + (r % c) * 256;
        const long base = r * inner;
        for (long i = 0; i < inner; i++) y[base + i] = tab[x[base + i]];
    }
}

static void chlookup_part(const void *job, int part, int parts) {
    const mi_qchlookup_args *a = job;
    const long rows = a->inner == 1 ? a->outer : a->outer * a->c;
    long r0, r1;
    mi_pool_share(rows, part, parts, &r0, &r1);
    chlookup_rows(a, r0, r1);
}

int mi_qchlookup_i8(const mi_qchlookup_args *a) {
    if (!a->x || !a->table || !a->y || a->outer < 0 || a->c < 0 || a->inner < 0)
        return MI_EARGS;
    if (a->outer * a->c * a->inner < 65536L || mi_pool_run(chlookup_part, a) != 0)
        chlookup_part(a, 0, 1);
    return MI_OK;
}

/* MaxPool of an 8-bit NHWC tensor (the 8-bit MaxPool between equal QDQ parameters, qpool.py):
 * each output pixel's channels the maximum over the window's taps inside the image; output
 * rows (b, oy) [r0, r1), so that the pool shares them out */
#define QMAXPOOL(T, LOWEST)                                                                  \
    do {                                                                                     \
        const T *restrict x = (const T *)a->x;                                               \
        T *restrict y = (T *)a->y;                                                           \
        for (long r = r0; r < r1; r++) {                                                     \
            const long b = r / a->oh, oy = r % a->oh;                                        \
            for (long ox = 0; ox < a->ow; ox++) {                                            \
                T *restrict out = y + (r * a->ow + ox) * c;                                  \
                for (long ch = 0; ch < c; ch++) out[ch] = LOWEST;                            \
                for (long ky = 0; ky < a->kh; ky++) {                                        \
                    long iy = oy * a->sh - a->pt + ky * a->dh;                               \
                    if (iy < 0 || iy >= a->h) continue;                                      \
                    for (long kx = 0; kx < a->kw; kx++) {                                    \
                        long ix = ox * a->sw - a->pl + kx * a->dw;                           \
                        if (ix < 0 || ix >= a->w) continue;                                  \
                        const T *restrict in = x + ((b * a->h + iy) * a->w + ix) * c;        \
                        for (long ch = 0; ch < c; ch++)                                      \
                            out[ch] = in[ch] > out[ch] ? in[ch] : out[ch];                   \
                    }                                                                        \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    } while (0)

static void qmaxpool_rows(const mi_qmaxpool_args *a, long r0, long r1) {
    const long c = a->c;
    if (a->is_signed)
        QMAXPOOL(int8_t, INT8_MIN);
    else
        QMAXPOOL(uint8_t, 0);
}

#ifdef QBIN_512
/* AVX-512BW, where the integer GEMM's level is AVX-512 VNNI: 64 channels a vector, the
 * maximum kept in a register over the window's taps (the last block masked; masked-off lanes
 * read nothing); the same maxima as the loop above */
__attribute__((target("avx512f,avx512bw"))) static void qmaxpool_rows_512(
    const mi_qmaxpool_args *a, long r0, long r1) {
    const long c = a->c;
    const int sgn = a->is_signed;
    const __m512i lowest = _mm512_set1_epi8(sgn ? (char)INT8_MIN : 0);
    const uint8_t *x = (const uint8_t *)a->x;
    uint8_t *y = (uint8_t *)a->y;
    for (long r = r0; r < r1; r++) {
        const long b = r / a->oh, oy = r % a->oh;
        long ky0 = 0, ky1 = a->kh;  /* the taps inside the image: a window's rows */
        while (ky0 < ky1 && oy * a->sh - a->pt + ky0 * a->dh < 0) ky0++;
        while (ky1 > ky0 && oy * a->sh - a->pt + (ky1 - 1) * a->dh >= a->h) ky1--;
        for (long ox = 0; ox < a->ow; ox++) {
            long kx0 = 0, kx1 = a->kw;
            while (kx0 < kx1 && ox * a->sw - a->pl + kx0 * a->dw < 0) kx0++;
            while (kx1 > kx0 && ox * a->sw - a->pl + (kx1 - 1) * a->dw >= a->w) kx1--;
            uint8_t *out = y + (r * a->ow + ox) * c;
            for (long ch = 0; ch < c; ch += 64) {
                const __mmask64 k = c - ch >= 64 ? ~(__mmask64)0
                                                 : (((__mmask64)1 << (c - ch)) - 1);
                __m512i m = lowest;
                for (long ky = ky0; ky < ky1; ky++) {
                    const long iy = oy * a->sh - a->pt + ky * a->dh;
                    const uint8_t *row = x + (b * a->h + iy) * a->w * c + ch;
                    for (long kx = kx0; kx < kx1; kx++) {
                        const long ix = ox * a->sw - a->pl + kx * a->dw;
                        const __m512i v = _mm512_maskz_loadu_epi8(k, row + ix * c);
                        m = sgn ? _mm512_max_epi8(m, v) : _mm512_max_epu8(m, v);
                    }
                }
                _mm512_mask_storeu_epi8(out + ch, k, m);
            }
        }
    }
}
#endif

static void qmaxpool_part(const void *job, int part, int parts) {
    const mi_qmaxpool_args *a = job;
    long r0, r1;
    mi_pool_share(a->n * a->oh, part, parts, &r0, &r1);
    if (r0 >= r1) return;
#ifdef QBIN_512
    if (mi_qgemm_isa() >= 3) {
        qmaxpool_rows_512(a, r0, r1);
        return;
    }
#endif
    qmaxpool_rows(a, r0, r1);
}

int mi_qmaxpool_i8(const mi_qmaxpool_args *a) {
    if (!a->x || !a->y || a->n < 0 || a->h < 0 || a->w < 0 || a->c < 0 || a->kh < 1 ||
        a->kw < 1 || a->sh < 1 || a->sw < 1 || a->dh < 1 || a->dw < 1 || a->oh < 0 ||
        a->ow < 0 || a->is_signed < 0 || a->is_signed > 1)
        return MI_EARGS;
    /* the pool from 64 KiB of output, as the lookups */
    if (a->n * a->oh * a->ow * a->c < 65536L || mi_pool_run(qmaxpool_part, a) != 0)
        qmaxpool_part(a, 0, 1);
    return MI_OK;
}
