/* QuantizeLinear of float32 with one scale and one zero point (quantize_linear.py), from an
 * NCHW x (n, c, hw) into y NCHW or NHWC (hwc: (n, hw, c)), uint8 or int8 (is_signed):
 *
 *   y = sat(rint(x / scale) + zp)
 *
 * in float32 as ONNX writes it and onnxruntime's MLAS computes it (a division, not a multiply
 * by 1 / scale; round half to even in the default rounding mode), the same float32 operations
 * as cpu_native's NumPy blocks, so the same bytes; NaN gives 0 as NumPy's cast does. NHWC
 * output is what the integer convolutions take: a network's first QuantizeLinear writes it
 * straight away instead of a Reformat after it. */

#include <math.h>
#include <stdint.h>

#include "_args.h"
#include "_common.h"

/* pixels a channel is read for at a time (NHWC): a block's c runs of floats stay in L1 */
#define QQ_BLOCK 256

static inline float qq_one(float x, float scale, float zp, float lo, float hi) {
    float v = rintf(x / scale) + zp;
    v = v != v ? 0.0f : v; /* NaN */
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
}

CLONES static void qq_u8(const float *restrict x, uint8_t *restrict y, long n, float scale,
                         float zp) {
    for (long i = 0; i < n; i++) y[i] = (uint8_t)(int32_t)qq_one(x[i], scale, zp, 0.0f, 255.0f);
}

CLONES static void qq_s8(const float *restrict x, int8_t *restrict y, long n, float scale,
                         float zp) {
    for (long i = 0; i < n; i++)
        y[i] = (int8_t)(int32_t)qq_one(x[i], scale, zp, -128.0f, 127.0f);
}

/* one image, NHWC: a block of pixels of each channel quantized in a vector loop into t (the
 * channel's row), then the rows interleaved; 16 channels of rows at a time */
#define QQ_ROWS 16

CLONES static void qq_hwc(const float *restrict x, uint8_t *restrict y, long c, long hw,
                          float scale, float zp, int is_signed) {
    uint8_t t[QQ_ROWS][QQ_BLOCK];
    for (long p0 = 0; p0 < hw; p0 += QQ_BLOCK) {
        const long m = hw - p0 < QQ_BLOCK ? hw - p0 : QQ_BLOCK;
        for (long c0 = 0; c0 < c; c0 += QQ_ROWS) {
            const long r = c - c0 < QQ_ROWS ? c - c0 : QQ_ROWS;
            for (long k = 0; k < r; k++) {
                const float *in = x + (c0 + k) * hw + p0;
                if (is_signed)
                    qq_s8(in, (int8_t *)t[k], m, scale, zp);
                else
                    qq_u8(in, t[k], m, scale, zp);
            }
            uint8_t *restrict o = y + p0 * c + c0;
            if (r == 3) /* an image's three colours: the stem's case */
                for (long p = 0; p < m; p++)
                    o[p * c] = t[0][p], o[p * c + 1] = t[1][p], o[p * c + 2] = t[2][p];
            else
                for (long p = 0; p < m; p++)
                    for (long k = 0; k < r; k++) o[p * c + k] = t[k][p];
        }
    }
}

int mi_quantize_f32(const mi_quantize_args *a) {
    if (!a->x || !a->y || a->n < 0 || a->c < 0 || a->hw < 0 || a->is_signed < 0 ||
        a->is_signed > 1 || a->hwc < 0 || a->hwc > 1 || !(a->scale > 0.0f) ||
        !isfinite(a->scale) || a->zp < (a->is_signed ? -128 : 0) ||
        a->zp > (a->is_signed ? 127 : 255))
        return MI_EARGS;
    const long per = a->c * a->hw;
    const float zp = (float)a->zp;
    for (long b = 0; b < a->n; b++) {
        const float *x = a->x + b * per;
        if (a->hwc)
            qq_hwc(x, (uint8_t *)a->y + b * per, a->c, a->hw, a->scale, zp, a->is_signed);
        else if (a->is_signed)
            qq_s8(x, (int8_t *)a->y + b * per, per, a->scale, zp);
        else
            qq_u8(x, (uint8_t *)a->y + b * per, per, a->scale, zp);
    }
    return MI_OK;
}
