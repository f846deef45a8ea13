/* QLinearConv's requantization of sums computed in float32 (the depthwise convolutions of
 * qconv.py, whose sums with their bias are exact integers there): onnxruntime's
 * MlasRequantizeOutput arithmetic, per channel plane,
 *
 *   y = clamp(x * mult[ch], min - zy, max - zy) rounded half to even, + zy
 *
 * in float32 (no FMA: one product), the type's range [min, max] of uint8 or int8. The rounding
 * adds and subtracts 1.5 * 2^23 (exact, round half to even in the default rounding mode, for
 * the clamped |v| <= 255), which vectorizes where rintf would be a call. */

#include <stdatomic.h>
#include <stdint.h>

#include "_args.h"

/* one channel's row (in mi_qrequant_f32): x * m clamped to the type's range less zy, rounded
 * half to even (the magic constant), plus zy, stored as T */
#define REQUANT_ROW(T)                                                                      \
    do {                                                                                    \
        T *restrict y = (T *)a->y + off;                                                    \
        for (long p = 0; p < hw; p++) {                                                     \
            float v = x[p] * m;                                                             \
            v = v < lo ? lo : v;                                                            \
            v = v > hi ? hi : v;                                                            \
            y[p] = (T)((int32_t)((v + magic) - magic) + zy);                                \
        }                                                                                   \
    } while (0)

int mi_qrequant_f32(const mi_qrequant_args *a) {
    if (!a->x || !a->y || !a->mult || a->n < 0 || a->c < 0 || a->hw < 0 || a->mult_step < 0 ||
        a->mult_step > 1)
        return MI_EARGS;
    const float magic = 12582912.0f; /* 1.5 * 2^23 */
    const int qmin = a->y_signed ? -128 : 0, qmax = a->y_signed ? 127 : 255;
    const float lo = (float)(qmin - a->zy), hi = (float)(qmax - a->zy);
    /* locals: the stores through a char type could alias the arguments otherwise, and no
     * loop would vectorize */
    const long n = a->n, c = a->c, hw = a->hw, step = a->mult_step;
    const int zy = a->zy;
    for (long i = 0; i < n; i++)
        for (long ch = 0; ch < c; ch++) {
            const float m = a->mult[ch * step];
            const long off = (i * c + ch) * hw;
            const float *restrict x = a->x + off;
            if (a->y_signed)
                REQUANT_ROW(int8_t);
            else
                REQUANT_ROW(uint8_t);
        }
    return MI_OK;
}

/* ---- depthwise QLinearConv on NHWC tensors ------------------------------------------------
 * One input and one output channel per group: each output pixel's C sums over the taps inside
 * the image (a tap in the padding reads x's zero point: it adds nothing), exact in int32, the
 * bias added, then onnxruntime's requantization as above (float(acc) * mult[c], clamped to the
 * type's range less zy, rounded half to even, plus zy). The channels are the inner loop, so
 * it vectorizes across them; output rows are shared out on the pool. */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "_common.h"
#include "_pool.h"

/* acc[ch] += (x[ch] - zx) * w[ch] over c channels (restrict, all locals: vectorizes) */
static inline void dw_tap_u8(int32_t *restrict acc, const uint8_t *restrict x,
                             const int16_t *restrict w, long c, int32_t zx) {
    for (long ch = 0; ch < c; ch++) acc[ch] += ((int32_t)x[ch] - zx) * (int32_t)w[ch];
}

static inline void dw_tap_s8(int32_t *restrict acc, const int8_t *restrict x,
                             const int16_t *restrict w, long c, int32_t zx) {
    for (long ch = 0; ch < c; ch++) acc[ch] += ((int32_t)x[ch] - zx) * (int32_t)w[ch];
}

/* y[ch] = requantize(acc[ch]) (the epilogue above) for c channels */
static inline void dw_store_u8(uint8_t *restrict y, const int32_t *restrict acc,
                               const float *restrict mult, long step, long c, float lo,
                               float hi, int32_t zy) {
    const float magic = 12582912.0f; /* 1.5 * 2^23 */
    for (long ch = 0; ch < c; ch++) {
        float v = (float)acc[ch] * mult[ch * step];
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        y[ch] = (uint8_t)((int32_t)((v + magic) - magic) + zy);
    }
}

static inline void dw_store_s8(int8_t *restrict y, const int32_t *restrict acc,
                               const float *restrict mult, long step, long c, float lo,
                               float hi, int32_t zy) {
    const float magic = 12582912.0f;
    for (long ch = 0; ch < c; ch++) {
        float v = (float)acc[ch] * mult[ch * step];
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        y[ch] = (int8_t)((int32_t)((v + magic) - magic) + zy);
    }
}

/* output rows [r0, r1) (of n * oh): per pixel, the bias, each tap inside the image, the
 * requantization; acc holds one pixel's c sums */
CLONES static void dw_rows(const mi_qdwconv_args *a, long r0, long r1, int32_t *acc) {
    const long c = a->c, ow = a->ow, oh = a->oh, h = a->h, w = a->w, kh = a->kh, kw = a->kw;
    const long sh = a->sh, sw = a->sw, dh = a->dh, dw = a->dw, ph = a->ph, pw = a->pw;
    const long step = a->mult_step;
    const int32_t zx = a->zx, zy = a->zy;
    const int xs = a->x_signed, ys = a->y_signed;
    const int qmin = ys ? -128 : 0, qmax = ys ? 127 : 255;
    const float lo = (float)(qmin - zy), hi = (float)(qmax - zy);
    const int32_t *bias = a->bias;
    const int16_t *wt = a->wt;
    const float *mult = a->mult;
    const uint8_t *xb = a->x;
    uint8_t *yb = a->y;
    for (long r = r0; r < r1; r++) {
        const long n = r / oh, oy = r % oh;
        for (long ox = 0; ox < ow; ox++) {
            if (bias)
                memcpy(acc, bias, sizeof(int32_t) * (size_t)c);
            else
                memset(acc, 0, sizeof(int32_t) * (size_t)c);
            for (long ty = 0; ty < kh; ty++) {
                const long iy = oy * sh - ph + ty * dh;
                if (iy < 0 || iy >= h) continue;
                for (long tx = 0; tx < kw; tx++) {
                    const long ix = ox * sw - pw + tx * dw;
                    if (ix < 0 || ix >= w) continue;
                    const uint8_t *xp = xb + ((n * h + iy) * w + ix) * c;
                    const int16_t *wp = wt + (ty * kw + tx) * c;
                    if (xs)
                        dw_tap_s8(acc, (const int8_t *)xp, wp, c, zx);
                    else
                        dw_tap_u8(acc, xp, wp, c, zx);
                }
            }
            uint8_t *yp = yb + ((n * oh + oy) * ow + ox) * c;
            if (ys)
                dw_store_s8((int8_t *)yp, acc, mult, step, c, lo, hi, zy);
            else
                dw_store_u8(yp, acc, mult, step, c, lo, hi, zy);
        }
    }
}

typedef struct {
    const mi_qdwconv_args *a;
    atomic_int failed;
} dw_job;

static void dw_part(const void *job, int part, int parts) {
    dw_job *j = (dw_job *)job;
    long r0, r1;
    mi_pool_share(j->a->n * j->a->oh, part, parts, &r0, &r1);
    if (r0 >= r1) return;
    int32_t *acc = malloc(sizeof(int32_t) * (size_t)j->a->c);
    if (!acc) {
        atomic_store(&j->failed, 1);
        return;
    }
    dw_rows(j->a, r0, r1, acc);
    free(acc);
}

int mi_qdwconv_i8(const mi_qdwconv_args *a) {
    if (!a->x || !a->wt || !a->mult || !a->y ||
        ANY_NEGATIVE(a->n, a->h, a->w, a->c, a->kh, a->kw, a->ph, a->pw, a->oh, a->ow) ||
        a->sh < 1 || a->sw < 1 || a->dh < 1 || a->dw < 1 || a->mult_step < 0 ||
        a->mult_step > 1)
        return MI_EARGS;
    if (a->n * a->oh * a->ow * a->c == 0) return MI_OK;
    dw_job j = {.a = a};
    atomic_init(&j.failed, 0);
    if (a->oh * a->ow * a->c * a->kh * a->kw < 32768L || mi_pool_run(dw_part, &j) != 0 ||
        atomic_load(&j.failed)) {
        atomic_store(&j.failed, 0);
        dw_part(&j, 0, 1);
    }
    return atomic_load(&j.failed) ? MI_ENOMEM : MI_OK;
}
