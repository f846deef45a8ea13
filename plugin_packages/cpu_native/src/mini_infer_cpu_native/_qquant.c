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
 * ReLU6): the same pass per plane, one call for the tensor, by runs of 16 Ki values. */

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

static void qq_run_sz(const mi_qquant_args *a, const float *x, uint8_t *y, long n, float s,
                      int zp) {
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
