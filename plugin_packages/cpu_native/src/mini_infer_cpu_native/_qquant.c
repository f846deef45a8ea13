/* QuantizeLinear of float32 x per tensor into uint8 or int8 y (quantize_linear.py), in one
 * pass, NCHW x written NCHW or NHWC (hwc: the NHWC region of a quantized CNN begins at its
 * input's QuantizeLinear, with no Reformat after it):
 *
 *   y = sat(rint(x / scale) + zp)
 *
 * the float32 operations of cpu_basic's NumPy kernel in its order (a division, rintf: half to
 * even in the default rounding mode, the zero point added, then the clamp to the type's range;
 * the conversion truncates an integral value), so the bytes are the same. NHWC: a tile of
 * pixels is quantized channel by channel into a buffer (the loop vectorizes), then its bytes
 * interleaved. Shared out on the pool by (image, tile of pixels) from 64 KiB of x on. Per
 * channel (NCHW, a scale and zero point per channel: NNCF's activations after a per-channel
 * ReLU6): the same pass per plane, one call for the tensor, by runs of 16 Ki values. And
 * DequantizeLinear per channel (mi_qdequant_i8), the same way. */

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_args.h"
#include "_common.h"
#include "_pool.h"

/* bytes of a tile's channel-by-channel buffer (NHWC) */
#define QQ_TILE_BYTES 8192L

CLONES static void qq_u8(const float *x, uint8_t *y, long n, float s, float z) {
    for (long i = 0; i < n; i++) {
        float v = rintf(x[i] / s) + z;
        v = v < 0.0f ? 0.0f : v;
        y[i] = (uint8_t)(int32_t)(v > 255.0f ? 255.0f : v);
    }
}

CLONES static void qq_s8(const float *x, int8_t *y, long n, float s, float z) {
    for (long i = 0; i < n; i++) {
        float v = rintf(x[i] / s) + z;
        v = v < -128.0f ? -128.0f : v;
        y[i] = (int8_t)(int32_t)(v > 127.0f ? 127.0f : v);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QQ_X86 1
int mi_qgemm_isa(void); /* _qgemm.c: 3 and up is AVX-512 (the tests cap it) */

/* the same operations 16 values a step with AVX-512: the division, rounding to nearest even
 * (vrndscaleps, as rintf in the default mode), the zero point, the clamp with the bound first
 * (a NaN passes, as the C comparisons let it), the conversion (integral values; a NaN becomes
 * INT_MIN as the C cast's cvttss2si) and the truncation to bytes (vpmovdb, as the casts) */
__attribute__((target("avx512f"))) static void qq_512(const float *x, uint8_t *y, long n,
                                                       float s, float z, float lo, float hi) {
    const __m512 sv = _mm512_set1_ps(s), zv = _mm512_set1_ps(z), lov = _mm512_set1_ps(lo),
                 hiv = _mm512_set1_ps(hi);
    long i = 0;
    for (; i < n; i += 16) {
        const __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(k, x + i), sv);
        v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                          zv);
        v = _mm512_min_ps(hiv, _mm512_max_ps(lov, v));
        _mm512_mask_cvtepi32_storeu_epi8(y + i, k, _mm512_cvttps_epi32(v));
    }
}
#else
#define QQ_X86 0
#endif

static void qq_run_sz(const mi_qquant_args *a, const float *x, uint8_t *y, long n, float s,
                      int zp) {
#if QQ_X86
    if (mi_qgemm_isa() >= 3) {
        qq_512(x, y, n, s, (float)zp, a->is_signed ? -128.0f : 0.0f,
               a->is_signed ? 127.0f : 255.0f);
        return;
    }
#endif
    if (a->is_signed)
        qq_s8(x, (int8_t *)y, n, s, (float)zp);
    else
        qq_u8(x, y, n, s, (float)zp);
}

static void qq_run(const mi_qquant_args *a, const float *x, uint8_t *y, long n) {
    qq_run_sz(a, x, y, n, a->scale, a->zp);
}

/* per channel: runs of QQ_RUN values within each (image, channel) plane */
#define QQ_RUN 16384L
static long qq_runs(const mi_qquant_args *a) { return a->hw ? (a->hw + QQ_RUN - 1) / QQ_RUN : 0; }

/* pixels per NHWC tile */
static long qq_tile(const mi_qquant_args *a) {
    long t = QQ_TILE_BYTES / (a->c ? a->c : 1);
    return t < 1 ? 1 : t;
}

/* units [u0, u1): NCHW, runs of 16 KiB of the flat tensor; NHWC, (image, tile) */
static void qq_units(const mi_qquant_args *a, long u0, long u1) {
    const long chw = a->c * a->hw;
    if (a->scales) {
        const long runs = qq_runs(a);
        for (long u = u0; u < u1; u++) {
            const long plane = u / runs, i0 = u % runs * QQ_RUN, ch = plane % a->c;
            const long w = a->hw - i0 < QQ_RUN ? a->hw - i0 : QQ_RUN, at = plane * a->hw + i0;
            qq_run_sz(a, a->x + at, (uint8_t *)a->y + at, w, a->scales[ch], a->zps[ch]);
        }
        return;
    }
    if (!a->hwc) {
        const long run = 16384, total = a->n * chw;
        for (long u = u0; u < u1; u++) {
            long i0 = u * run, w = total - i0 < run ? total - i0 : run;
            qq_run(a, a->x + i0, (uint8_t *)a->y + i0, w);
        }
        return;
    }
    const long tile = qq_tile(a), tiles = (a->hw + tile - 1) / tile;
    uint8_t buf[QQ_TILE_BYTES];
    for (long u = u0; u < u1; u++) {
        const long img = u / tiles, p0 = u % tiles * tile;
        const long w = a->hw - p0 < tile ? a->hw - p0 : tile;
        const float *x = a->x + img * chw + p0;
        uint8_t *y = (uint8_t *)a->y + (img * a->hw + p0) * a->c;
        if (a->c == 1) {
            qq_run(a, x, y, w);
            continue;
        }
        for (long ch = 0; ch < a->c; ch++) qq_run(a, x + ch * a->hw, buf + ch * w, w);
        if (a->c == 3) {
            const uint8_t *b0 = buf, *b1 = buf + w, *b2 = buf + 2 * w;
            for (long p = 0; p < w; p++, y += 3) y[0] = b0[p], y[1] = b1[p], y[2] = b2[p];
            continue;
        }
        for (long p = 0; p < w; p++, y += a->c)
            for (long ch = 0; ch < a->c; ch++) y[ch] = buf[ch * w + p];
    }
}

static long qq_count(const mi_qquant_args *a) {
    if (a->scales) return a->n * a->c * qq_runs(a);
    if (!a->hwc) return (a->n * a->c * a->hw + 16383) / 16384;
    const long tile = qq_tile(a);
    return a->n * ((a->hw + tile - 1) / tile);
}

static void qq_part(const void *job, int part, int parts) {
    const mi_qquant_args *a = job;
    long u0, u1;
    mi_pool_share(qq_count(a), part, parts, &u0, &u1);
    qq_units(a, u0, u1);
}

int mi_qquant_f32(const mi_qquant_args *a) {
    if (!a->x || !a->y || ANY_NEGATIVE(a->n, a->c, a->hw) || a->is_signed < 0 ||
        a->is_signed > 1 || a->hwc < 0 || a->hwc > 1 || a->zp < (a->is_signed ? -128 : 0) ||
        a->zp > (a->is_signed ? 127 : 255) || (a->scales && (a->hwc || !a->zps)))
        return MI_EARGS;
    if (a->scales)
        for (long ch = 0; ch < a->c; ch++)
            if (a->zps[ch] < (a->is_signed ? -128 : 0) || a->zps[ch] > (a->is_signed ? 127 : 255))
                return MI_EARGS;
    if (a->n * a->c * a->hw * 4L < 65536L || mi_pool_run(qq_part, a) != 0)
        qq_units(a, 0, qq_count(a));
    return MI_OK;
}

/* ---- DequantizeLinear per channel ---------------------------------------------------------- */

/* y = (float(x) - z) * s: cpu_basic's float32 operations in its order (the conversion exact,
 * a subtraction, a multiplication: nothing to contract), so the same bits */
CLONES static void qdq_u8(const uint8_t *x, float *y, long n, float s, float z) {
    for (long i = 0; i < n; i++) y[i] = ((float)x[i] - z) * s;
}

CLONES static void qdq_s8(const int8_t *x, float *y, long n, float s, float z) {
    for (long i = 0; i < n; i++) y[i] = ((float)x[i] - z) * s;
}

static void qdq_units(const mi_qdequant_args *a, long u0, long u1) {
    const long runs = (a->hw + QQ_RUN - 1) / QQ_RUN;
    for (long u = u0; u < u1; u++) {
        const long plane = u / runs, i0 = u % runs * QQ_RUN, ch = plane % a->c;
        const long w = a->hw - i0 < QQ_RUN ? a->hw - i0 : QQ_RUN, at = plane * a->hw + i0;
        const float s = a->scales[ch], z = a->zps ? (float)a->zps[ch] : 0.0f;
        if (a->is_signed)
            qdq_s8((const int8_t *)a->x + at, a->y + at, w, s, z);
        else
            qdq_u8((const uint8_t *)a->x + at, a->y + at, w, s, z);
    }
}

static void qdq_part(const void *job, int part, int parts) {
    const mi_qdequant_args *a = job;
    long u0, u1;
    mi_pool_share(a->n * a->c * ((a->hw + QQ_RUN - 1) / QQ_RUN), part, parts, &u0, &u1);
    qdq_units(a, u0, u1);
}

int mi_qdequant_i8(const mi_qdequant_args *a) {
    if (!a->x || !a->y || !a->scales || ANY_NEGATIVE(a->n, a->c, a->hw) || a->is_signed < 0 ||
        a->is_signed > 1)
        return MI_EARGS;
    if (a->n * a->c * a->hw == 0) return MI_OK;
    if (a->n * a->c * a->hw < 65536L || mi_pool_run(qdq_part, a) != 0)
        qdq_units(a, 0, a->n * a->c * ((a->hw + QQ_RUN - 1) / QQ_RUN));
    return MI_OK;
}
