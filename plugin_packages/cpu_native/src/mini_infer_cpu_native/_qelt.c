/* com.microsoft's QLinearAdd and QLinearMul on 8-bit tensors (qelementwise.py): one pass, in
 * float32 as cpu_basic's kernel computes them (onnxruntime's formula; no FMA: -std=c11 keeps
 * products and sums apart),
 *
 *   add: y = sat(rint((a - za) * ra + (b - zb) * rb) + zy)     ra = sa / sc, rb = sb / sc
 *   mul: y = sat(rint((a - za) * (b - zb) * ra) + zy)          ra = sa * sb / sc
 *
 * rounding half to even (rintf in the default rounding mode), saturation to uint8 or int8.
 * A is (outer, inner); B's value for A's (o, p) is b[o * b_outer_step + p * b_step]: B the
 * same shape (b_step 1, b_outer_step inner), one value per outer index (0, 1: a
 * squeeze-and-excitation's (N, C, 1, 1) scale against NCHW), one row for every outer index
 * (1, 0: that scale against one image in NHWC), or one value (0, 0). */

#include <math.h>
#include <stdint.h>

#include "_args.h"
#include "_common.h"
#include "_pool.h"

/* one row of `inner` values: A and B (step bs) of types TA and TB into TY */
#define QBIN_ROW(TA, TB, TY, LO, HI)                                                        \
    do {                                                                                    \
        const TA *restrict x = (const TA *)a->a + o * inner;                                \
        const TB *restrict z = (const TB *)a->b + o * ostep;                                \
        TY *restrict y = (TY *)a->y + o * inner;                                            \
        if (op == 0)                                                                        \
            for (long p = 0; p < inner; p++) {                                              \
                float v = ((float)x[p] - za) * ra + ((float)z[p * bs] - zb) * rb;           \
                v = rintf(v) + zy;                                                          \
                v = v < LO ? LO : v;                                                        \
                y[p] = (TY)(int32_t)(v > HI ? HI : v);                                      \
            }                                                                               \
        else                                                                                \
            for (long p = 0; p < inner; p++) {                                              \
                float v = ((float)x[p] - za) * ((float)z[p * bs] - zb) * ra;                \
                v = rintf(v) + zy;                                                          \
                v = v < LO ? LO : v;                                                        \
                y[p] = (TY)(int32_t)(v > HI ? HI : v);                                      \
            }                                                                               \
    } while (0)

CLONES static void qbin_u8(const mi_qbinary_args *a) {
    const long outer = a->outer, inner = a->inner, bs = a->b_step;
    const long ostep = a->b_outer_step;
    const float za = (float)a->za, zb = (float)a->zb, zy = (float)a->zy, ra = a->ra, rb = a->rb;
    const int op = a->op;
    for (long o = 0; o < outer; o++) QBIN_ROW(uint8_t, uint8_t, uint8_t, 0.0f, 255.0f);
}

CLONES static void qbin_s8(const mi_qbinary_args *a) {
    const long outer = a->outer, inner = a->inner, bs = a->b_step;
    const long ostep = a->b_outer_step;
    const float za = (float)a->za, zb = (float)a->zb, zy = (float)a->zy, ra = a->ra, rb = a->rb;
    const int op = a->op;
    for (long o = 0; o < outer; o++) QBIN_ROW(int8_t, int8_t, int8_t, -128.0f, 127.0f);
}

int mi_qbinary_i8(const mi_qbinary_args *a) {
    if (!a->a || !a->b || !a->y || ANY_NEGATIVE(a->outer, a->inner, a->b_outer_step) ||
        a->b_step < 0 || a->b_step > 1 || a->op < 0 || a->op > 1 ||
        a->is_signed < 0 || a->is_signed > 1)
        return MI_EARGS;
    if (a->is_signed)
        qbin_s8(a);
    else
        qbin_u8(a);
    return MI_OK;
}

/* QLinearSigmoid, QLinearLeakyRelu (and any function of one 8-bit value): y[i] =
 * table[x[i]] over the 256 bit patterns of x, the table made by the caller */
int mi_qlookup_i8(const mi_qlookup_args *a) {
    if (!a->x || !a->table || !a->y || a->n < 0) return MI_EARGS;
    const uint8_t *restrict x = a->x, *restrict t = a->table;
    uint8_t *restrict y = a->y;
    for (long i = 0; i < a->n; i++) y[i] = t[x[i]];
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
 * each output pixel's channels the maximum over the window's taps inside the image */
#define QMAXPOOL(T, LOWEST)                                                                  \
    do {                                                                                     \
        const T *restrict x = (const T *)a->x;                                               \
        T *restrict y = (T *)a->y;                                                           \
        for (long b = 0; b < a->n; b++)                                                      \
            for (long oy = 0; oy < a->oh; oy++)                                              \
                for (long ox = 0; ox < a->ow; ox++) {                                        \
                    T *restrict out = y + ((b * a->oh + oy) * a->ow + ox) * c;               \
                    for (long ch = 0; ch < c; ch++) out[ch] = LOWEST;                        \
                    for (long ky = 0; ky < a->kh; ky++) {                                    \
                        long iy = oy * a->sh - a->pt + ky * a->dh;                           \
                        if (iy < 0 || iy >= a->h) continue;                                  \
                        for (long kx = 0; kx < a->kw; kx++) {                                \
                            long ix = ox * a->sw - a->pl + kx * a->dw;                       \
                            if (ix < 0 || ix >= a->w) continue;                              \
                            const T *restrict in = x + ((b * a->h + iy) * a->w + ix) * c;    \
                            for (long ch = 0; ch < c; ch++)                                  \
                                out[ch] = in[ch] > out[ch] ? in[ch] : out[ch];               \
                        }                                                                    \
                    }                                                                        \
                }                                                                            \
    } while (0)

int mi_qmaxpool_i8(const mi_qmaxpool_args *a) {
    if (!a->x || !a->y || a->n < 0 || a->h < 0 || a->w < 0 || a->c < 0 || a->kh < 1 ||
        a->kw < 1 || a->sh < 1 || a->sw < 1 || a->dh < 1 || a->dw < 1 || a->oh < 0 ||
        a->ow < 0 || a->is_signed < 0 || a->is_signed > 1)
        return MI_EARGS;
    const long c = a->c;
    if (a->is_signed)
        QMAXPOOL(int8_t, INT8_MIN);
    else
        QMAXPOOL(uint8_t, 0);
    return MI_OK;
}
