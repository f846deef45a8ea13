/* QLinearConv's requantization of sums computed in float32 (the depthwise convolutions of
 * qconv.py, whose sums with their bias are exact integers there): onnxruntime's
 * MlasRequantizeOutput arithmetic, per channel plane,
 *
 *   y = clamp(x * mult[ch], min - zy, max - zy) rounded half to even, + zy
 *
 * in float32 (no FMA: one product), the type's range [min, max] of uint8 or int8. The rounding
 * adds and subtracts 1.5 * 2^23 (exact, round half to even in the default rounding mode, for
 * the clamped |v| <= 255), which vectorizes where rintf would be a call. */

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

/* the depthwise QLinearConv on NHWC tensors (mi_qdwconv_i8) is in _qdw.c */
