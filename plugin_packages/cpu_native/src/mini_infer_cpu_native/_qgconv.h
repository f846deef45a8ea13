/* Grouped QLinearConv on NHWC tensors (included by _qdw.c, which defines qdw_job, tap_range,
 * st512 and the AVX-512 target): cg inputs and cg outputs a group, cg 4, 8 or 16 (RegNet's
 * 3x3 layers of 8: 55 groups over 440 channels, one GEMM call a group before). W - zw comes
 * as int8 quads (mi_qdwconv_args, _args.h), so that output lane l of a 16-output vector takes
 * the quad j of its group's inputs from one 16-byte load of x: the same requantization as the
 * depthwise kernels, exact int32 sums, the same bytes at every level. */
#ifndef MI_QGCONV_H
#define MI_QGCONV_H

/* ---- grouped: cg (4, 8 or 16) inputs and as many outputs a group ------------------------ */

/* w - zw of output o, its group's input ci, tap t (wt's quads, _args.h) */
static inline int qg_w(const mi_qdwconv_args *a, long t, long o, long ci) {
    const long nvec = (a->c + 15) / 16, nj = a->cg / 4;
    return ((const int8_t *)a->wt)[((t * nvec + o / 16) * nj + ci / 4) * 64 + o % 16 * 4 + ci % 4];
}

/* one output row, channels [c0, c1): the plain loops (the levels below AVX-512) */
static void qg_plain(const qdw_job *j, long r, long c0, long c1) {
    const mi_qdwconv_args *a = j->a;
    const long c = a->c, ow = a->ow, oh = a->oh, h = a->h, w = a->w, kw = a->kw, g = a->cg;
    const int32_t zx = a->zx, zy = a->zy;
    const int qmin = a->y_signed ? -128 : 0, qmax = a->y_signed ? 127 : 255;
    const float lo = (float)(qmin - zy), hi = (float)(qmax - zy);
    const float magic = 12582912.0f; /* 1.5 * 2^23: rounds half to even for |v| <= 255 */
    const long n = r / oh, oy = r % oh;
    long ty0, ty1;
    tap_range(oy, a->sh, a->ph, a->dh, a->kh, h, &ty0, &ty1);
    for (long ox = 0; ox < ow; ox++) {
        long tx0, tx1;
        tap_range(ox, a->sw, a->pw, a->dw, kw, w, &tx0, &tx1);
        uint8_t *yp = (uint8_t *)a->y + ((n * oh + oy) * ow + ox) * c;
        for (long o = c0; o < c1; o++) {
            int32_t acc = a->bias ? a->bias[o] : 0;
            const long i0 = o / g * g;
            for (long ty = ty0; ty < ty1; ty++)
                for (long tx = tx0; tx < tx1; tx++) {
                    const long iy = oy * a->sh - a->ph + ty * a->dh;
                    const long ix = ox * a->sw - a->pw + tx * a->dw;
                    const uint8_t *xp = (const uint8_t *)a->x + ((n * h + iy) * w + ix) * c + i0;
                    for (long ci = 0; ci < g; ci++) {
                        const int32_t xv = a->x_signed ? (int32_t)(int8_t)xp[ci] : xp[ci];
                        acc += (xv - zx) * qg_w(a, ty * kw + tx, o, ci);
                    }
                }
            float v = (float)acc * a->mult[o * a->mult_step];
            v = v < lo ? lo : v;
            v = v > hi ? hi : v;
            yp[o] = (uint8_t)((int32_t)((v + magic) - magic) + zy);
        }
    }
}

#ifdef QDW_X86
/* the sums of each tap's w (gsum, qdw_job), 16 outputs a vector: vpdpbusd of ones */
Q512 static void qg_sums(const mi_qdwconv_args *a, int32_t *gsum) {
    const long taps = a->kh * a->kw, nvec = (a->c + 15) / 16, nj = a->cg / 4;
    const __m512i ones = _mm512_set1_epi8(1);
    for (long v = 0; v < nvec; v++) {
        __m512i all = _mm512_setzero_si512();
        for (long t = 0; t < taps; t++) {
            __m512i s = _mm512_setzero_si512();
            for (long jj = 0; jj < nj; jj++)
                s = _mm512_dpbusd_epi32(s, ones, _mm512_loadu_si512(
                                                     (const int8_t *)a->wt + ((t * nvec + v) * nj + jj) * 64));
            _mm512_storeu_si512(gsum + t * nvec * 16 + v * 16, s);
            all = _mm512_add_epi32(all, s);
        }
        _mm512_storeu_si512(gsum + taps * nvec * 16 + v * 16, all);
    }
}

/* one output row, channels [c0, c1) (at most 64, c0 a multiple of 64), one pixel at a time:
 * per tap and vector of 16 outputs, its 16 inputs' bytes (the groups of those outputs)
 * broadcast to the four 128-bit lanes, each output lane's quad j of its group's inputs
 * gathered by vpshufb, times its quad of w by vpdpbusd (x as uint8: int8 x flipped by 0x80,
 * 128 more counted in the zero point); the start bias - zx * the taps' w inside the image
 * (gsum), the epilogue in registers */
Q512 static void qg_512(const qdw_job *j, long r, long c0, long c1) {
    const mi_qdwconv_args *a = j->a;
    const long c = a->c, ow = a->ow, oh = a->oh, h = a->h, w = a->w, kw = a->kw, g = a->cg;
    const long nvec = (c + 15) / 16, nj = g / 4, taps = a->kh * kw;
    const int xs = a->x_signed;
    const int zyi = a->zy;
    const int qmin = a->y_signed ? -128 : 0, qmax = a->y_signed ? 127 : 255;
    const __m512 lo = _mm512_set1_ps((float)(qmin - zyi)), hi = _mm512_set1_ps((float)(qmax - zyi));
    const __m512i zy = _mm512_set1_epi32(zyi), zx = _mm512_set1_epi32(a->zx + (xs ? 128 : 0));
    const __m512i flip = _mm512_set1_epi8(xs ? (char)0x80 : 0);
    const long n = r / oh, oy = r % oh, nc = c1 - c0, v0 = c0 / 16;
    const int nv = (int)((nc + 15) / 16);
    __mmask16 km[4];
    __m512 mv[4];
    __m512i bv[4], bz[4], idx[4];
    for (int v = 0; v < 4; v++) {
        long left = nc - 16 * v;
        km[v] = left >= 16 ? (__mmask16)0xFFFF : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
        mv[v] = a->mult_step ? _mm512_maskz_loadu_ps(km[v], a->mult + c0 + 16 * v)
                             : _mm512_set1_ps(a->mult[0]);
        bv[v] = a->bias ? _mm512_maskz_loadu_epi32(km[v], a->bias + c0 + 16 * v)
                        : _mm512_setzero_si512();
        bz[v] = _mm512_sub_epi32(bv[v], _mm512_mullo_epi32(zx, _mm512_maskz_loadu_epi32(
                                            km[v], j->gsum + taps * nvec * 16 + c0 + 16 * v)));
    }
    /* lane l's byte b of quad jj: its group's first input + 4 jj + b, within the 16 */
    for (long jj = 0; jj < nj; jj++) {
        _Alignas(64) uint8_t ix[64];
        for (int l = 0; l < 16; l++)
            for (int b = 0; b < 4; b++)
                ix[4 * (l % 4) + b + 16 * (l / 4)] = (uint8_t)((l & ~(int)(g - 1)) + 4 * jj + b);
        idx[jj] = _mm512_load_si512(ix);
    }
    long ty0, ty1;
    tap_range(oy, a->sh, a->ph, a->dh, a->kh, h, &ty0, &ty1);
    const uint8_t *xb = (const uint8_t *)a->x + n * h * w * c + c0;
    const int8_t *wq = (const int8_t *)a->wt;
    uint8_t *yrow = (uint8_t *)a->y + (n * oh + oy) * ow * c + c0;
    for (long ox = 0; ox < ow; ox++) {
        long tx0, tx1;
        tap_range(ox, a->sw, a->pw, a->dw, kw, w, &tx0, &tx1);
        __m512i acc[4];
        if (ty0 == 0 && ty1 == a->kh && tx0 == 0 && tx1 == kw) {
            for (int v = 0; v < 4; v++) acc[v] = bz[v];
        } else {
            for (int v = 0; v < nv; v++) {
                __m512i s = _mm512_setzero_si512();
                for (long ty = ty0; ty < ty1; ty++)
                    for (long tx = tx0; tx < tx1; tx++)
                        s = _mm512_add_epi32(s, _mm512_loadu_si512(
                                                    j->gsum + (ty * kw + tx) * nvec * 16 + c0 + 16 * v));
                acc[v] = _mm512_sub_epi32(bv[v], _mm512_mullo_epi32(zx, s));
            }
        }
        for (long ty = ty0; ty < ty1; ty++) {
            const long iy = oy * a->sh - a->ph + ty * a->dh;
            for (long tx = tx0; tx < tx1; tx++) {
                const long ix = ox * a->sw - a->pw + tx * a->dw;
                const uint8_t *xp = xb + (iy * w + ix) * c;
                const int8_t *wt = wq + ((ty * kw + tx) * nvec + v0) * nj * 64;
                for (int v = 0; v < nv; v++) {
                    __m512i xv = _mm512_broadcast_i32x4(_mm_maskz_loadu_epi8(km[v], xp + 16 * v));
                    xv = _mm512_xor_si512(xv, flip);
                    for (long jj = 0; jj < nj; jj++)
                        acc[v] = _mm512_dpbusd_epi32(acc[v], _mm512_shuffle_epi8(xv, idx[jj]),
                                                     _mm512_loadu_si512(wt + (v * nj + jj) * 64));
                }
            }
        }
        uint8_t *yp = yrow + ox * c;
        for (int v = 0; v < nv; v++) st512(yp + 16 * v, acc[v], mv[v], lo, hi, zy, km[v]);
    }
}
#endif

#endif
