/* ---- depthwise QLinearConv on NHWC tensors (mi_qdwconv_i8, qconv.py) ----------------------
 * One input and one output channel per group: each output pixel's C sums over the taps inside
 * the image (a tap in the padding reads x's zero point: it adds nothing), exact in int32, the
 * bias added, then onnxruntime's requantization (MlasRequantizeOutput: float(acc) * mult[c] in
 * float32, clamped to the type's range less zy, rounded half to even, plus zy).
 *
 * The kernel of the integer GEMM's level (mi_qgemm_isa, _qgemm.c: MINI_INFER_QGEMM_ISA and
 * mi_qgemm_set_isa cap both), all exact, so all give the same bytes:
 *   avx512vnni: 16 channels a vector, 64 a block held in four accumulators over every tap:
 *               x widened to int32 less zx, times w (widened once a call, its high half 0)
 *               by vpdpwssd; the epilogue in registers (cvtdq2ps, mulps, max/min, cvtps2dq
 *               rounding half to even, vpmovdb), the last channels masked;
 *   avx2/avxvnni: the same with vpmaddwd on 8 channels a vector, 32 a block;
 *   plain:      the scalar loops (int32 sums, the epilogue's magic constant).
 *   the avx512vnni kernel takes the columns whose window is inside the image 6 pixels at a
 *   time (then 4, 2, 1), each weight vector loaded once a tap for all of them, starting from
 *   bias - zx * the sum of w over the window's rows inside (x then read raw);
 * One pool dispatch: the work items are (output row, block of channels), so a 7x7 map of 960
 * channels is shared out as well as a 112x112 map of 32.
 *
 * cg 4, 8 or 16 (mi_qdwconv_args): a grouped convolution of cg inputs and outputs a group
 * (RegNet's), _qgconv.h. */

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_args.h"
#include "_common.h"
#include "_pool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QDW_X86 1
#endif

int mi_qgemm_isa(void); /* _qgemm.c: 0 plain, 1 avx2, 2 avxvnni, 3 avx512vnni */

enum { QDW_PLAIN = 0, QDW_AVX2 = 1, QDW_AVX512 = 2 };
#define QDW_BLOCK 64 /* channels per work item (and per AVX-512 register block) */

typedef struct {
    const mi_qdwconv_args *a;
    const int32_t *w32; /* (kh*kw, c) weights widened to int32 lanes, high half 0 */
    const int32_t *wsum; /* (c) each channel's sum of w - zw over its taps */
    long cblocks;       /* ceil(c / QDW_BLOCK) */
    int kernel;
    const int32_t *gsum; /* grouped: (kh*kw + 1, ceil(c / 16) * 16) each tap's sum of w over
                          * each output's inputs, then the sum over every tap */
} qdw_job;

/* the taps ty in [*t0, *t1) whose row iy = o * s - p + t * d lies in [0, n) */
static inline void tap_range(long o, long s, long p, long d, long k, long n, long *t0, long *t1) {
    long b = o * s - p;
    long lo = b >= 0 ? 0 : (-b + d - 1) / d;
    long hi = b >= n ? 0 : (n - 1 - b) / d + 1;
    *t0 = lo;
    *t1 = hi < k ? hi : k;
}

/* ---- plain ------------------------------------------------------------------------------ */

/* one output row, channels [c0, c1) (at most QDW_BLOCK): per pixel, the sums in acc across
 * the channels (the inner loops: they vectorize), then the requantization */
CLONES static void qdw_plain(const qdw_job *j, long r, long c0, long c1) {
    const mi_qdwconv_args *a = j->a;
    const long c = a->c, ow = a->ow, oh = a->oh, h = a->h, w = a->w, kw = a->kw;
    const long step = a->mult_step, nc = c1 - c0;
    const int32_t zx = a->zx, zy = a->zy;
    const int xs = a->x_signed;
    const int qmin = a->y_signed ? -128 : 0, qmax = a->y_signed ? 127 : 255;
    const float lo = (float)(qmin - zy), hi = (float)(qmax - zy);
    const float magic = 12582912.0f; /* 1.5 * 2^23: rounds half to even for |v| <= 255 */
    const long n = r / oh, oy = r % oh;
    long ty0, ty1;
    tap_range(oy, a->sh, a->ph, a->dh, a->kh, h, &ty0, &ty1);
    const uint8_t *xrow = (const uint8_t *)a->x + n * h * w * c + c0;
    const float *restrict mult = a->mult + c0 * step;
    int32_t acc[QDW_BLOCK];
    for (long ox = 0; ox < ow; ox++) {
        long tx0, tx1;
        tap_range(ox, a->sw, a->pw, a->dw, kw, w, &tx0, &tx1);
        for (long ch = 0; ch < nc; ch++) acc[ch] = a->bias ? a->bias[c0 + ch] : 0;
        for (long ty = ty0; ty < ty1; ty++) {
            const long iy = oy * a->sh - a->ph + ty * a->dh;
            const long xi = (iy * w + ox * a->sw - a->pw) * c;
            for (long tx = tx0; tx < tx1; tx++) {
                const uint8_t *restrict xu = xrow + (xi + tx * a->dw * c);
                const int8_t *restrict xv = (const int8_t *)xu;
                const int16_t *restrict wt = a->wt + (ty * kw + tx) * c + c0;
                if (xs)
                    for (long ch = 0; ch < nc; ch++) acc[ch] += ((int32_t)xv[ch] - zx) * wt[ch];
                else
                    for (long ch = 0; ch < nc; ch++) acc[ch] += ((int32_t)xu[ch] - zx) * wt[ch];
            }
        }
        uint8_t *restrict yp = (uint8_t *)a->y + ((n * oh + oy) * ow + ox) * c + c0;
        for (long ch = 0; ch < nc; ch++) {
            float v = (float)acc[ch] * mult[ch * step];
            v = v < lo ? lo : v;
            v = v > hi ? hi : v;
            yp[ch] = (uint8_t)((int32_t)((v + magic) - magic) + zy);
        }
    }
}

#ifdef QDW_X86

/* ---- AVX-512 (VNNI) --------------------------------------------------------------------- */

#define Q512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

Q512 static inline __m512i ld512(const uint8_t *p, __mmask16 m, int xs) {
    __m128i b = _mm_maskz_loadu_epi8(m, p);
    return xs ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
}

/* requantize 16 sums and store the (masked) bytes */
Q512 static inline void st512(uint8_t *y, __m512i acc, __m512 m, __m512 lo, __m512 hi,
                              __m512i zy, __mmask16 k) {
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), m);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(v), zy); /* round half to even */
    _mm_mask_storeu_epi8(y, k, _mm512_cvtepi32_epi8(q));
}

/* NP output pixels pstep bytes apart (one row's, the same taps inside the image for each:
 * rows [ty0, ty1) of the window, every column), channels [c0, c0 + 16 * NV): the sums of x
 * (raw: the caller's init holds bias - zx * the taps' sum of w) times w over those taps in
 * NP * NV chains of vpdpwssd, each weight vector loaded once a tap for the NP pixels (one
 * widening of x per product: vpmovzxbd is the bound, not the weights' loads); then the
 * epilogue in registers. x0 points at the first pixel's first tap (row ty0); w at row ty0's
 * weights. FULL: every channel of the block is there (c0 + 16 * NV <= c), else the last
 * vector's bytes are loaded under km (nothing read past the block). NV, NP, SX and FULL are
 * constants where it is inlined. */
#define QDW_LD(p, SX) (SX ? _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p))) \
                          : _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p))))
#define QDW_LDM(p, m, SX) (SX ? _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p)) \
                              : _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, p)))
Q512 __attribute__((always_inline)) static inline void blk512(
    uint8_t *y, const uint8_t *x0, long ys, long xs_, long pstep, const int32_t *w, long nty,
    long kw, long c, __mmask16 kl, const __m512i *init, const __m512 *mv, __m512 lo, __m512 hi,
    __m512i zy, int NV, int NP, int SX, int FULL) {
    __m512i acc[6][4];
    for (int p = 0; p < NP; p++)
        for (int v = 0; v < NV; v++) acc[p][v] = init[v];
    for (long ty = 0; ty < nty; ty++) {
        const uint8_t *xr = x0 + ty * ys;
        const int32_t *wr = w + ty * kw * c;
        for (long tx = 0; tx < kw; tx++) {
            const uint8_t *xt = xr + tx * xs_;
            const int32_t *wt = wr + tx * c;
            for (int v = 0; v < NV; v++) {
                const __m512i wv = _mm512_loadu_si512(wt + 16 * v);
                for (int p = 0; p < NP; p++) {
                    const uint8_t *xp = xt + p * pstep + 16 * v;
                    const __m512i xv = (FULL || v < NV - 1) ? QDW_LD(xp, SX)
                                                            : QDW_LDM(xp, kl, SX);
                    acc[p][v] = _mm512_dpwssd_epi32(acc[p][v], xv, wv);
                }
            }
        }
    }
    for (int p = 0; p < NP; p++)
        for (int v = 0; v < NV; v++)
            st512(y + p * c + 16 * v, acc[p][v], mv[v], lo, hi, zy,
                  (FULL || v < NV - 1) ? (__mmask16)0xFFFF : kl);
}
#undef QDW_LD
#undef QDW_LDM

/* blk512 for NP pixels at run-time NV, SX and FULL */
#define QDW_BLK(NP)                                                                            \
    Q512 static void blk512_##NP(uint8_t *y, const uint8_t *x0, long ys, long xs_, long pstep, \
                                 const int32_t *w, long nty, long kw, long c, __mmask16 kl,    \
                                 const __m512i *init, const __m512 *mv, __m512 lo, __m512 hi,  \
                                 __m512i zy, int nv, int sx, int full) {                      \
        switch (nv * 4 + sx * 2 + full) {                                                      \
        QDW_CASE(NP, 1, 0, 0) QDW_CASE(NP, 1, 0, 1) QDW_CASE(NP, 1, 1, 0) QDW_CASE(NP, 1, 1, 1) \
        QDW_CASE(NP, 2, 0, 0) QDW_CASE(NP, 2, 0, 1) QDW_CASE(NP, 2, 1, 0) QDW_CASE(NP, 2, 1, 1) \
        QDW_CASE(NP, 3, 0, 0) QDW_CASE(NP, 3, 0, 1) QDW_CASE(NP, 3, 1, 0) QDW_CASE(NP, 3, 1, 1) \
        QDW_CASE(NP, 4, 0, 0) QDW_CASE(NP, 4, 0, 1) QDW_CASE(NP, 4, 1, 0) QDW_CASE(NP, 4, 1, 1) \
        default: break;                                                                        \
        }                                                                                      \
    }
#define QDW_CASE(NP, NV, SX, FULL)                                                             \
    case NV * 4 + SX * 2 + FULL:                                                               \
        blk512(y, x0, ys, xs_, pstep, w, nty, kw, c, kl, init, mv, lo, hi, zy, NV, NP, SX,     \
               FULL);                                                                          \
        break;
QDW_BLK(6)
QDW_BLK(4)
QDW_BLK(2)
QDW_BLK(1)
#undef QDW_CASE
#undef QDW_BLK

/* one output row, channels [c0, c1) (c1 - c0 <= 64, c0 a multiple of 64): the columns whose
 * window's columns are all inside the image by blk512, 6 pixels at a time (then 4, 2, 1),
 * their rows those of the window inside the image (a row at the top or bottom starts from
 * bias - zx * the sum of its taps' w); the other columns one pixel at a time, x less zx over
 * the taps inside */
Q512 static void qdw_512(const qdw_job *j, long r, long c0, long c1) {
    const mi_qdwconv_args *a = j->a;
    const long c = a->c, ow = a->ow, oh = a->oh, h = a->h, w = a->w, kw = a->kw;
    const int xs = a->x_signed;
    const int zyi = a->zy;
    const int qmin = a->y_signed ? -128 : 0, qmax = a->y_signed ? 127 : 255;
    const __m512 lo = _mm512_set1_ps((float)(qmin - zyi)), hi = _mm512_set1_ps((float)(qmax - zyi));
    const __m512i zx = _mm512_set1_epi32(a->zx), zy = _mm512_set1_epi32(zyi);
    const long n = r / oh, oy = r % oh;
    const long nc = c1 - c0;
    const int nv = (int)((nc + 15) / 16), full = nc % 16 == 0;
    __mmask16 km[4];
    for (int v = 0; v < 4; v++) {
        long left = nc - 16 * v;
        km[v] = left >= 16 ? (__mmask16)0xFFFF : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
    }
    long ty0, ty1;
    tap_range(oy, a->sh, a->ph, a->dh, a->kh, h, &ty0, &ty1);
    const uint8_t *xrow = (const uint8_t *)a->x + n * h * w * c + c0;
    const int32_t *wb = j->w32 + c0;
    uint8_t *yrow = (uint8_t *)a->y + (n * oh + oy) * ow * c + c0;
    __m512 mv[4];
    __m512i bv[4], bz[4];
    for (int v = 0; v < 4; v++) {
        mv[v] = a->mult_step ? _mm512_maskz_loadu_ps(km[v], a->mult + c0 + 16 * v)
                             : _mm512_set1_ps(a->mult[0]);
        bv[v] = a->bias ? _mm512_maskz_loadu_epi32(km[v], a->bias + c0 + 16 * v)
                        : _mm512_setzero_si512();
        __m512i ws;
        if (ty0 == 0 && ty1 == a->kh) {
            ws = _mm512_maskz_loadu_epi32(km[v], j->wsum + c0 + 16 * v);
        } else { /* the sum of w over the window's rows inside the image */
            ws = _mm512_setzero_si512();
            for (long t = ty0 * kw; t < ty1 * kw; t++)
                ws = _mm512_add_epi32(ws, _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(
                                              km[v], a->wt + t * c + c0 + 16 * v)));
        }
        bz[v] = _mm512_sub_epi32(bv[v], _mm512_mullo_epi32(zx, ws));
    }
    /* the columns [oxa, oxb) whose window's columns are all inside */
    const long span = (kw - 1) * a->dw;
    long oxa = (a->pw + a->sw - 1) / a->sw;
    long oxb = w - 1 - span + a->pw < 0 ? 0 : (w - 1 - span + a->pw) / a->sw + 1;
    if (oxb > ow) oxb = ow;
    if (oxa > oxb) oxa = oxb;
    const long ys = a->dh * w * c, xs_ = a->dw * c, pstep = a->sw * c;
    const long nty = ty1 - ty0;
    if (nty > 0) {
        const long iy0 = oy * a->sh - a->ph + ty0 * a->dh;
        const int32_t *w0 = wb + ty0 * kw * c;
        for (long ox = oxa; ox < oxb;) {
            const long left = oxb - ox;
            const uint8_t *x0 = xrow + (iy0 * w + ox * a->sw - a->pw) * c;
            uint8_t *yp = yrow + ox * c;
#define QDW_RUN(NP)                                                                            \
    blk512_##NP(yp, x0, ys, xs_, pstep, w0, nty, kw, c, km[nv - 1], bz, mv, lo, hi, zy, nv, xs, \
                full);                                                                         \
    ox += NP
            if (left >= 6) { QDW_RUN(6); }
            else if (left >= 4) { QDW_RUN(4); }
            else if (left >= 2) { QDW_RUN(2); }
            else { QDW_RUN(1); }
#undef QDW_RUN
        }
    }
    for (long ox = 0; ox < ow; ox++) {
        if (ox == oxa && oxa < oxb && nty > 0) { /* done above */
            ox = oxb - 1;
            continue;
        }
        long tx0, tx1;
        tap_range(ox, a->sw, a->pw, a->dw, kw, w, &tx0, &tx1);
        __m512i s0 = bv[0], s1 = bv[1], s2 = bv[2], s3 = bv[3];
        for (long ty = ty0; ty < ty1; ty++) {
            const long iy = oy * a->sh - a->ph + ty * a->dh;
            const long xi = (iy * w + ox * a->sw - a->pw) * c;
            const int32_t *wp = wb + ty * kw * c;
            for (long tx = tx0; tx < tx1; tx++) {
                /* masked (a lane past c reads nothing and adds 0), less zx */
                const uint8_t *xt = xrow + (xi + tx * a->dw * c);
                const int32_t *wt = wp + tx * c;
                s0 = _mm512_dpwssd_epi32(s0, _mm512_sub_epi32(ld512(xt, km[0], xs), zx),
                                         _mm512_maskz_loadu_epi32(km[0], wt));
                if (nv > 1)
                    s1 = _mm512_dpwssd_epi32(
                        s1, _mm512_sub_epi32(ld512(xt + 16, km[1], xs), zx),
                        _mm512_maskz_loadu_epi32(km[1], wt + 16));
                if (nv > 2)
                    s2 = _mm512_dpwssd_epi32(
                        s2, _mm512_sub_epi32(ld512(xt + 32, km[2], xs), zx),
                        _mm512_maskz_loadu_epi32(km[2], wt + 32));
                if (nv > 3)
                    s3 = _mm512_dpwssd_epi32(
                        s3, _mm512_sub_epi32(ld512(xt + 48, km[3], xs), zx),
                        _mm512_maskz_loadu_epi32(km[3], wt + 48));
            }
        }
        uint8_t *yp = yrow + ox * c;
        st512(yp, s0, mv[0], lo, hi, zy, km[0]);
        if (nv > 1) st512(yp + 16, s1, mv[1], lo, hi, zy, km[1]);
        if (nv > 2) st512(yp + 32, s2, mv[2], lo, hi, zy, km[2]);
        if (nv > 3) st512(yp + 48, s3, mv[3], lo, hi, zy, km[3]);
    }
}

/* ---- AVX2 ------------------------------------------------------------------------------- */

#define Q256 __attribute__((target("avx2")))

Q256 static inline __m256i ld256(const uint8_t *p, int xs) {
    __m128i b = _mm_loadl_epi64((const __m128i *)p);
    return xs ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
}

Q256 static inline void st256(uint8_t *y, __m256i acc, __m256 m, __m256 lo, __m256 hi,
                              __m256i zy, int ys) {
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), m);
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), zy);
    __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    __m128i b = ys ? _mm_packs_epi16(w16, w16) : _mm_packus_epi16(w16, w16);
    _mm_storel_epi64((__m128i *)y, b);
}

/* one output row, channels [c0, c1): 32 at a time in four accumulators, then 8 at a time,
 * the last c % 8 on the plain loops */
Q256 static void qdw_256(const qdw_job *j, long r, long c0, long c1) {
    const mi_qdwconv_args *a = j->a;
    const long c = a->c, ow = a->ow, oh = a->oh, h = a->h, w = a->w, kw = a->kw;
    const int xs = a->x_signed, ys = a->y_signed;
    const int zyi = a->zy;
    const int qmin = ys ? -128 : 0, qmax = ys ? 127 : 255;
    const __m256 lo = _mm256_set1_ps((float)(qmin - zyi)), hi = _mm256_set1_ps((float)(qmax - zyi));
    const __m256i zx = _mm256_set1_epi32(a->zx), zy = _mm256_set1_epi32(zyi);
    const long n = r / oh, oy = r % oh;
    const long cv = c0 + (c1 - c0) / 8 * 8;
    long ty0, ty1;
    tap_range(oy, a->sh, a->ph, a->dh, a->kh, h, &ty0, &ty1);
    const uint8_t *xrow = (const uint8_t *)a->x + n * h * w * c;
    uint8_t *yrow = (uint8_t *)a->y + (n * oh + oy) * ow * c;
    for (long cb = c0; cb < cv; cb += 32) {
        const int nv = (int)((cv - cb) / 8 < 4 ? (cv - cb) / 8 : 4);
        __m256 mv[4];
        __m256i bv[4];
        for (int v = 0; v < 4; v++) {
            const long ch = cb + 8 * (v < nv ? v : 0);
            mv[v] = a->mult_step ? _mm256_loadu_ps(a->mult + ch) : _mm256_set1_ps(a->mult[0]);
            bv[v] = a->bias ? _mm256_loadu_si256((const __m256i *)(a->bias + ch))
                            : _mm256_setzero_si256();
        }
        for (long ox = 0; ox < ow; ox++) {
            long tx0, tx1;
            tap_range(ox, a->sw, a->pw, a->dw, kw, w, &tx0, &tx1);
            __m256i s0 = bv[0], s1 = bv[1], s2 = bv[2], s3 = bv[3];
            for (long ty = ty0; ty < ty1; ty++) {
                const long iy = oy * a->sh - a->ph + ty * a->dh;
                const long xi = (iy * w + ox * a->sw - a->pw) * c + cb;
                const int32_t *wp = j->w32 + ty * kw * c + cb;
                for (long tx = tx0; tx < tx1; tx++) {
                    const uint8_t *xt = xrow + (xi + tx * a->dw * c);
                    const __m256i *wt = (const __m256i *)(wp + tx * c);
                    s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(
                        _mm256_sub_epi32(ld256(xt, xs), zx), _mm256_loadu_si256(wt)));
                    if (nv > 1)
                        s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(
                            _mm256_sub_epi32(ld256(xt + 8, xs), zx), _mm256_loadu_si256(wt + 1)));
                    if (nv > 2)
                        s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(
                            _mm256_sub_epi32(ld256(xt + 16, xs), zx), _mm256_loadu_si256(wt + 2)));
                    if (nv > 3)
                        s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(
                            _mm256_sub_epi32(ld256(xt + 24, xs), zx), _mm256_loadu_si256(wt + 3)));
                }
            }
            uint8_t *yp = yrow + ox * c + cb;
            st256(yp, s0, mv[0], lo, hi, zy, ys);
            if (nv > 1) st256(yp + 8, s1, mv[1], lo, hi, zy, ys);
            if (nv > 2) st256(yp + 16, s2, mv[2], lo, hi, zy, ys);
            if (nv > 3) st256(yp + 24, s3, mv[3], lo, hi, zy, ys);
        }
    }
    if (cv < c1) qdw_plain(j, r, cv, c1);
}
#endif

#include "_qgconv.h" /* the grouped kernels: qg_plain, qg_sums, qg_512 */

static void qdw_part(const void *job, int part, int parts) {
    const qdw_job *j = job;
    const long items = j->a->n * j->a->oh * j->cblocks;
    long i0, i1;
    mi_pool_share(items, part, parts, &i0, &i1);
    for (long i = i0; i < i1; i++) {
        const long r = i / j->cblocks, c0 = (i % j->cblocks) * QDW_BLOCK;
        const long c1 = lmin(j->a->c, c0 + QDW_BLOCK);
        if (j->a->cg > 1) {
#ifdef QDW_X86
            if (j->kernel == QDW_AVX512) {
                qg_512(j, r, c0, c1);
                continue;
            }
#endif
            qg_plain(j, r, c0, c1);
            continue;
        }
#ifdef QDW_X86
        if (j->kernel == QDW_AVX512) {
            qdw_512(j, r, c0, c1);
            continue;
        }
        if (j->kernel == QDW_AVX2) {
            qdw_256(j, r, c0, c1);
            continue;
        }
#endif
        qdw_plain(j, r, c0, c1);
    }
}

int mi_qdwconv_i8(const mi_qdwconv_args *a) {
    if (!a->x || !a->wt || !a->mult || !a->y ||
        ANY_NEGATIVE(a->n, a->h, a->w, a->c, a->kh, a->kw, a->ph, a->pw, a->oh, a->ow) ||
        a->sh < 1 || a->sw < 1 || a->dh < 1 || a->dw < 1 || a->mult_step < 0 ||
        a->mult_step > 1 || a->cg < 0 || a->cg == 2 || a->cg == 3 ||
        (a->cg > 1 && (16 % a->cg || a->c % a->cg)))
        return MI_EARGS;
    if (a->n * a->oh * a->ow * a->c == 0) return MI_OK;
    qdw_job j = {.a = a, .cblocks = (a->c + QDW_BLOCK - 1) / QDW_BLOCK, .kernel = QDW_PLAIN};
    if (a->cg > 1) { /* grouped */
        int32_t *gsum = NULL;
#ifdef QDW_X86
        if (mi_qgemm_isa() >= 3) {
            j.kernel = QDW_AVX512;
            gsum = malloc(sizeof(int32_t) * (size_t)((a->kh * a->kw + 1) * ((a->c + 15) / 16) * 16));
            if (!gsum) return MI_ENOMEM;
            qg_sums(a, gsum);
            j.gsum = gsum;
        }
#endif
        if (a->n * a->oh * a->ow * a->c * a->kh * a->kw * a->cg < 32768L ||
            mi_pool_run(qdw_part, &j) != 0)
            qdw_part(&j, 0, 1);
        free(gsum);
        return MI_OK;
    }
    int32_t *w32 = NULL;
#ifdef QDW_X86
    const int isa = mi_qgemm_isa();
    j.kernel = isa >= 3 ? QDW_AVX512 : isa >= 1 ? QDW_AVX2 : QDW_PLAIN;
    if (j.kernel != QDW_PLAIN) {
        /* w - zw (int16) as int32 lanes with a high half of 0: vpmaddwd's second product,
         * (x - zx)'s sign bits times 0, adds nothing */
        const long taps = a->kh * a->kw;
        /* then the sums, then 64 zeros: the last block's vectors read whole */
        w32 = malloc(sizeof(int32_t) * (size_t)((taps + 1) * a->c + QDW_BLOCK));
        if (!w32) return MI_ENOMEM;
        int32_t *wsum = w32 + taps * a->c;
        memset(wsum, 0, sizeof(int32_t) * (size_t)(a->c + QDW_BLOCK));
        for (long t = 0; t < taps; t++)
            for (long ch = 0; ch < a->c; ch++) {
                const int16_t v = a->wt[t * a->c + ch];
                w32[t * a->c + ch] = (int32_t)(uint16_t)v;
                wsum[ch] += v;
            }
        j.w32 = w32;
        j.wsum = wsum;
    }
#endif
    if (a->n * a->oh * a->ow * a->c * a->kh * a->kw < 32768L || mi_pool_run(qdw_part, &j) != 0)
        qdw_part(&j, 0, 1);
    free(w32);
    return MI_OK;
}
