/*
 * MaxPool's AVX2 path (included by _kernels.c where MI_ACT_X86): horizontal stride 1 or 2,
 * dilation 1 across, kernels up to MP_TAPS wide, output rows up to 8 MP_VECS columns. Each
 * vector of 8 outputs of a row is made in registers: the input rows under it maxed together
 * (each read as whole vectors, the lanes outside the row set to -inf by masks that depend
 * on the column only, made once per call; masked loads where a read could leave the input
 * tensor), stride 2's even and odd columns then split by shuffles (16 inputs -> 8 + 8), the
 * taps maxed, one store. pool2d's separable passes went through a row buffer and read it
 * back with scalar stride-2 loops: 256 planes of 27x27 (3x3 stride 2) took 0.35 ms at one
 * thread, onnxruntime 0.17.
 * max(new, acc): acc where either is NaN, as pool2d's `in > out ? in : out`.
 */
#ifndef MI_POOL_AVX2_H
#define MI_POOL_AVX2_H

#include "_act.h"

#if MI_ACT_X86
#define MP_VECS 16 /* output columns <= 128 */
#define MP_TAPS 5  /* kernel columns <= 5: stride 2 reads pairs at 0, 2, 4 */

/* [a0 a2 b0 b2 | a4 a6 b4 b6] -> a0 a2 a4 a6 b0 b2 b4 b6 (and the odd ones) */
#define MP_EVEN(lo, hi)                                                                     \
    _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xD8))
#define MP_ODD(lo, hi)                                                                      \
    _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xDD)), 0xD8))

/* source lanes s .. s + 7 inside [0, wd) */
__attribute__((target("avx2,fma"))) static inline __m256 mp_inside(long s, long wd) {
    __m256i ix = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                  _mm256_set1_epi32((int)s));
    return _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), ix),
                                                   _mm256_cmpgt_epi32(_mm256_set1_epi32((int)wd), ix)));
}

/* 8 floats from src, -inf in the lanes `in` leaves out */
#define MP_LOAD(src, in, whole)                                                             \
    _mm256_blendv_ps(ninf, (whole) ? _mm256_loadu_ps(src)                                  \
                                   : _mm256_maskload_ps(src, _mm256_castps_si256(in)),      \
                     in)

/* planes [p0, p1) of x (h x wd) into y (oh x ow); 0: not this path's shape (pool2d's) */
__attribute__((target("avx2,fma"))) static int maxpool_avx2(
    const float *restrict x, float *restrict y, long p0, long p1, long h, long wd, long kh,
    long kw, long sh, long sw, long dh, long dw, long pt, long pl, long oh, long ow,
    const float *xlo, const float *xhi) {
    long nvec = (ow + 7) / 8, npair = sw == 2 ? (kw + 1) / 2 : kw;
    if ((sw != 1 && sw != 2) || dw != 1 || kw > MP_TAPS || kh > 16 || nvec > MP_VECS) return 0;
    __m256 mlo[MP_VECS][MP_TAPS], mhi[MP_VECS][MP_TAPS]; /* per (vector, read): lanes in */
    for (long v = 0; v < nvec; v++)
        for (long m = 0; m < npair; m++) {
            long s = 8 * v * sw - pl + (sw == 2 ? 2 * m : m);
            mlo[v][m] = mp_inside(s, wd);
            mhi[v][m] = mp_inside(s + 8, wd);
        }
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(ow - 8 * (nvec - 1))),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    /* reads reach 8 sw floats past a vector's first column, plus the taps */
    long reach = 8 * nvec * sw + 2 * npair + 8;
    for (long p = p0; p < p1; p++) {
        const float *src = x + p * h * wd;
        float *dst = y + p * oh * ow;
        for (long r = 0; r < oh; r++) {
            const float *rows[16];
            long nr = 0;
            for (long k = 0; k < kh; k++) {
                long i = r * sh + k * dh - pt;
                if (i >= 0 && i < h) rows[nr++] = src + i * wd - pl;
            }
            int whole = nr > 0 && rows[0] >= xlo && rows[nr - 1] + reach <= xhi;
            for (long v = 0; v < nvec; v++) {
                long o = 8 * v * sw;
                __m256 out = ninf;
                for (long m = 0; m < npair; m++) {
                    long d = o + (sw == 2 ? 2 * m : m);
                    __m256 lo = ninf, hi = ninf;
                    for (long k = 0; k < nr; k++) {
                        lo = _mm256_max_ps(MP_LOAD(rows[k] + d, mlo[v][m], whole), lo);
                        if (sw == 2)
                            hi = _mm256_max_ps(MP_LOAD(rows[k] + d + 8, mhi[v][m], whole), hi);
                    }
                    if (sw == 1) {
                        out = _mm256_max_ps(lo, out);
                    } else {
                        out = _mm256_max_ps(MP_EVEN(lo, hi), out);
                        if (2 * m + 1 < kw) out = _mm256_max_ps(MP_ODD(lo, hi), out);
                    }
                }
                float *yp = dst + r * ow + 8 * v;
                /* a row's last vector spills into the next rows, written after it; where
                 * it would leave the plane it is masked (AMD's masked stores: ~10x a store) */
                if (v == nvec - 1 && r * ow + 8 * nvec > oh * ow) _mm256_maskstore_ps(yp, tail, out);
                else _mm256_storeu_ps(yp, out);
            }
        }
    }
    return 1;
}
#endif

#endif
