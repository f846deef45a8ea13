/*
 * mini-infer-cpu-native: compiled float32 kernels for the NCHW operators whose NumPy form
 * costs many passes per layer: depthwise convolution, im2col, max and average pooling, LRN,
 * inference BatchNormalization, and the epilogue of a GEMM (bias, residual, Relu/Clip in one
 * pass instead of three). The Winograd transforms are in _winograd.c, the GEMM in _gemm.c.
 *
 * Plain C called through ctypes (see _native.py): each exported kernel takes one struct of
 * its arguments (_args.h) and returns MI_OK or MI_EARGS; every array is C-contiguous
 * float32 and every size a long. Each kernel is compiled for AVX2 and a baseline; the loader
 * picks one by the CPU's features (GCC target_clones, see _common.h), so one wheel runs on
 * any x86-64. They run on the library's own thread pool (_pool.c), split by planes or rows,
 * once a job is large enough to pay for the hand-off (PARALLEL_MIN).
 */
#include "_args.h"
#include "_common.h"
#include "_pool.h"
#include "_pool_avx2.h"

/* values below which a kernel runs on the calling thread alone (the hand-off to the pool
 * costs a few microseconds) */
#define PARALLEL_MIN 16384L

/*
 * Depthwise 2-D convolution, one filter per channel (group == C == M):
 * y[n, c] = clamp(bias[c] + residual[n, c] + sum_taps w[c, t] * x[n, c, shifted], lo, hi).
 *
 * x (N, C, H, W); w (C, KH*KW); bias (C) or NULL; res (N, C, OH, OW) or NULL; y (N, C, OH, OW).
 * pt/pl: padding before; hp/wp: padded extent (>= the extent the windows read).
 * work: hp*wp + oh*wp floats. Each channel is copied once into a zero-bordered plane; with
 * stride 1 the taps then run over all output rows at once (rows wp apart; the columns past
 * ow are computed and dropped); a 3x3 kernel does its nine taps in one pass.
 */
CLONES static void dwconv2d(const float *restrict x, const float *restrict w,
                            const float *restrict bias, const float *restrict res,
                            float *restrict y, float *restrict work, long u0, long u1, long c,
                            long h, long wd, long kh, long kw, long sh, long sw, long dh,
                            long dw, long pt, long pl, long oh, long ow, long hp, long wp,
                            float lo, float hi) {
    float *restrict plane = work;
    float *restrict acc = work + hp * wp;
    long rows = lmin(h, hp - pt), cols = lmin(wd, wp - pl);
    long taps = kh * kw;
    /* the border is zeroed once: every channel's copy writes the same interior cells */
    memset(plane, 0, sizeof(float) * hp * wp);
    for (long u = u0; u < u1; u++) {
        long img = u / c, ch = u % c;
        {
            const float *src = x + (img * c + ch) * h * wd;
            const float *wt = w + ch * taps;
            float b = bias ? bias[ch] : 0.0f;
            long base = (img * c + ch) * oh * ow;
            for (long r = 0; r < rows; r++)
                memcpy(plane + (r + pt) * wp + pl, src + r * wd, sizeof(float) * cols);
            if (kh == 3 && kw == 3) {
                /* all nine taps in one pass: nine input streams, one output stream */
                float k0 = wt[0], k1 = wt[1], k2 = wt[2], k3 = wt[3], k4 = wt[4], k5 = wt[5],
                      k6 = wt[6], k7 = wt[7], k8 = wt[8];
                long d1 = dw, d2 = 2 * dw;
                if (sh == 1 && sw == 1) {
                    long len = (oh - 1) * wp + ow;
                    const float *a0 = plane, *a1 = plane + dh * wp, *a2 = plane + 2 * dh * wp;
                    for (long p = 0; p < len; p++)
                        acc[p] = b + k0 * a0[p] + k1 * a0[p + d1] + k2 * a0[p + d2] +
                                 k3 * a1[p] + k4 * a1[p + d1] + k5 * a1[p + d2] +
                                 k6 * a2[p] + k7 * a2[p + d1] + k8 * a2[p + d2];
                    for (long r = 0; r < oh; r++)
                        finish_row(y + base + r * ow, acc + r * wp,
                                   res ? res + base + r * ow : NULL, ow, lo, hi);
                } else {
                    for (long r = 0; r < oh; r++) {
                        const float *a0 = plane + r * sh * wp, *a1 = a0 + dh * wp,
                                    *a2 = a0 + 2 * dh * wp;
                        for (long o = 0; o < ow; o++) {
                            long q = o * sw;
                            acc[o] = b + k0 * a0[q] + k1 * a0[q + d1] + k2 * a0[q + d2] +
                                     k3 * a1[q] + k4 * a1[q + d1] + k5 * a1[q + d2] +
                                     k6 * a2[q] + k7 * a2[q + d1] + k8 * a2[q + d2];
                        }
                        finish_row(y + base + r * ow, acc, res ? res + base + r * ow : NULL,
                                   ow, lo, hi);
                    }
                }
            } else if (sh == 1 && sw == 1) {
                long len = (oh - 1) * wp + ow;
                for (long p = 0; p < len; p++) acc[p] = b;
                for (long t = 0; t < taps; t++) {
                    const float *in = plane + (t / kw) * dh * wp + (t % kw) * dw;
                    float k = wt[t];
                    for (long p = 0; p < len; p++) acc[p] += k * in[p];
                }
                for (long r = 0; r < oh; r++)
                    finish_row(y + base + r * ow, acc + r * wp,
                               res ? res + base + r * ow : NULL, ow, lo, hi);
            } else {
                for (long r = 0; r < oh; r++) {
                    for (long o = 0; o < ow; o++) acc[o] = b;
                    for (long t = 0; t < taps; t++) {
                        const float *in = plane + (r * sh + (t / kw) * dh) * wp + (t % kw) * dw;
                        float k = wt[t];
                        if (sw == 2)
                            for (long o = 0; o < ow; o++) acc[o] += k * in[2 * o];
                        else
                            for (long o = 0; o < ow; o++) acc[o] += k * in[o * sw];
                    }
                    finish_row(y + base + r * ow, acc, res ? res + base + r * ow : NULL, ow,
                               lo, hi);
                }
            }
        }
    }
}

static void dwconv_range(const mi_dwconv2d_args *j, float *work, long u0, long u1) {
    dwconv2d(j->x, j->w, j->bias, j->res, j->y, work, u0, u1, j->c, j->h, j->wd, j->kh, j->kw,
             j->sh, j->sw, j->dh, j->dw, j->pt, j->pl, j->oh, j->ow, j->hp, j->wp, j->lo, j->hi);
}

static void dwconv_part(const void *arg, int part, int parts) {
    const mi_dwconv2d_args *j = arg;
    long u0, u1;
    mi_pool_share(j->n * j->c, part, parts, &u0, &u1);
    float *work = part == 0 ? j->work : mi_pool_scratch(j->hp * j->wp + j->oh * j->wp);
    if (work && u0 < u1) dwconv_range(j, work, u0, u1);
}

/* on the pool, split by (image, channel), each thread with its own padded plane */
int mi_dwconv2d_f32(const mi_dwconv2d_args *a) {
    if (!a->x || !a->w || !a->y || !a->work ||
        ANY_NEGATIVE(a->n, a->c, a->h, a->wd, a->oh, a->ow, a->pt, a->pl, a->hp, a->wp) ||
        ANY_NEGATIVE(a->kh - 1, a->kw - 1, a->sh - 1, a->sw - 1, a->dh - 1, a->dw - 1) ||
        a->pt > a->hp || a->pl > a->wp)
        return MI_EARGS;
    if (a->n * a->c * a->h * a->wd < PARALLEL_MIN || mi_pool_run(dwconv_part, a))
        dwconv_range(a, a->work, 0, a->n * a->c);
    return MI_OK;
}

/*
 * Stride-1 pooling whose output is the input's size ("same" pads: Inception's 3x3 branches):
 * every tap of each pass is one flat loop over the whole plane (rows wd apart), since the
 * row structure is the same in and out. Column taps read across a row's edge into the next
 * row; those border columns are recomputed afterwards with bounds. work: 2 * h * wd floats.
 */
/* the pooled value of column o of one row, reading only the taps inside the row */
static inline float border_tap(const float *row, long o, long wd, long kw, long dw, long pl,
                               int avg, float fill) {
    float acc = fill;
    for (long k = 0; k < kw; k++) {
        long c = o + k * dw - pl;
        if (c < 0 || c >= wd) continue;
        acc = avg ? acc + row[c] : (row[c] > acc ? row[c] : acc);
    }
    return acc;
}

static inline void pool_same_plane(const float *restrict src, float *restrict dst,
                                   float *restrict tmp, const float *restrict inv, long h,
                                   long wd, long kh, long kw, long dh, long dw, long pt, long pl,
                                   int avg, float fill) {
    long n = h * wd;
    for (long i = 0; i < n; i++) tmp[i] = fill;
    for (long k = 0; k < kh; k++) { /* rows: tmp[r] over src[r + k*dh - pt] */
        long off = k * dh - pt;
        long ra = lmax(0, -off), re = lmin(h, h - off);
        if (re <= ra) continue;
        const float *in = src + off * wd;
        if (avg)
            for (long i = ra * wd; i < re * wd; i++) tmp[i] += in[i];
        else
            for (long i = ra * wd; i < re * wd; i++) tmp[i] = in[i] > tmp[i] ? in[i] : tmp[i];
    }
    for (long i = 0; i < n; i++) dst[i] = fill;
    long first = 0, end = wd; /* columns every tap reaches inside the row */
    for (long k = 0; k < kw; k++) {
        long off = k * dw - pl;
        first = lmax(first, first_in(off, 1));
        end = lmin(end, end_in(off, 1, wd, wd));
        long ia = lmax(0, -off), ie = lmin(n, n - off);
        const float *in = tmp + off;
        if (avg)
            for (long i = ia; i < ie; i++) dst[i] += in[i];
        else
            for (long i = ia; i < ie; i++) dst[i] = in[i] > dst[i] ? in[i] : dst[i];
    }
    if (end < first) end = first;
    for (long r = 0; r < h; r++) { /* the border columns, again, with bounds */
        for (long o = 0; o < first; o++)
            dst[r * wd + o] = border_tap(tmp + r * wd, o, wd, kw, dw, pl, avg, fill);
        for (long o = end; o < wd; o++)
            dst[r * wd + o] = border_tap(tmp + r * wd, o, wd, kw, dw, pl, avg, fill);
    }
    if (avg)
        for (long i = 0; i < n; i++) dst[i] *= inv[i];
}

/* inv[o] = 1 / the number of the k taps of output o (input o * s + tap * d - pad) that fall
 * in [lo, hi): one axis of an average pool's divisor */
static void inverse_counts(float *inv, long n, long k, long s, long d, long pad, long lo,
                           long hi) {
    for (long o = 0; o < n; o++) {
        long cnt = 0;
        for (long t = 0; t < k; t++) {
            long i = o * s + t * d - pad;
            cnt += (i >= lo && i < hi);
        }
        inv[o] = 1.0f / (float)cnt;
    }
}

/*
 * 2-D max (avg == 0) or average (avg == 1) pooling of `planes` planes (N*C) of h x wd.
 * Separable: the input rows of each output row are reduced first (contiguous runs of wd,
 * into work: oh x wd), then the columns of those (oh x ow, strided reads of a buffer half
 * the input's size or less). Taps that fall in the padding are skipped (max: -inf; average:
 * 0, divided by the taps inside [lo, hi) of each axis: the input's extent, or the padded
 * extent with count_include_pad). pads: pt/pl before, pb/pr after (the divisor only).
 * work: 2*max(oh, h)*wd + oh + ow floats.
 */
CLONES static void pool2d(const float *restrict x, float *restrict y, float *restrict work,
                          long p0, long p1, long h, long wd, long kh, long kw, long sh, long sw,
                          long dh, long dw, long pt, long pl, long pb, long pr, long oh,
                          long ow, int avg, int include_pad) {
    float *restrict tmp = work;
    float *restrict rdiv = work + 2 * lmax(oh, h) * wd;
    float *restrict cdiv = rdiv + oh;
    const float fill = avg ? 0.0f : -INFINITY;
    if (avg) {
        inverse_counts(rdiv, oh, kh, sh, dh, pt, include_pad ? -pt : 0,
                       include_pad ? h + pb : h);
        inverse_counts(cdiv, ow, kw, sw, dw, pl, include_pad ? -pl : 0,
                       include_pad ? wd + pr : wd);
    }
    if (sh == 1 && sw == 1 && oh == h && ow == wd) {
        float *inv = work + h * wd; /* 1 / divisor per output, for the average */
        if (avg)
            for (long r = 0; r < oh; r++)
                for (long o = 0; o < ow; o++) inv[r * ow + o] = rdiv[r] * cdiv[o];
        for (long p = p0; p < p1; p++)
            pool_same_plane(x + p * h * wd, y + p * h * wd, tmp, inv, h, wd, kh, kw, dh, dw,
                            pt, pl, avg, fill);
        return;
    }
    for (long p = p0; p < p1; p++) {
        const float *src = x + p * h * wd;
        float *dst = y + p * oh * ow;
        /* along the rows: tmp[r, :] over taps k of src[r*sh + k*dh - pt, :] */
        for (long r = 0; r < oh; r++) {
            float *out = tmp + r * wd;
            long first = 1;
            for (long k = 0; k < kh; k++) {
                long i = r * sh + k * dh - pt;
                if (i < 0 || i >= h) continue;
                const float *in = src + i * wd;
                if (first)
                    memcpy(out, in, sizeof(float) * wd);
                else if (avg)
                    for (long o = 0; o < wd; o++) out[o] += in[o];
                else
                    for (long o = 0; o < wd; o++) out[o] = in[o] > out[o] ? in[o] : out[o];
                first = 0;
            }
            if (first)
                for (long o = 0; o < wd; o++) out[o] = fill;
        }
        /* along the columns: dst[r, o] over taps k of tmp[r, o*sw + k*dw - pl] */
        for (long r = 0; r < oh; r++) {
            const float *row = tmp + r * wd;
            float *out = dst + r * ow;
            for (long o = 0; o < ow; o++) out[o] = fill;
            for (long k = 0; k < kw; k++) {
                long off = k * dw - pl;
                long a = first_in(off, sw), e = end_in(off, sw, wd, ow);
                const float *in = row + off;
                if (avg) {
                    if (sw == 1)
                        for (long o = a; o < e; o++) out[o] += in[o];
                    else if (sw == 2)
                        for (long o = a; o < e; o++) out[o] += in[2 * o];
                    else
                        for (long o = a; o < e; o++) out[o] += in[o * sw];
                } else {
                    if (sw == 1)
                        for (long o = a; o < e; o++) out[o] = in[o] > out[o] ? in[o] : out[o];
                    else if (sw == 2)
                        for (long o = a; o < e; o++) {
                            float v = in[2 * o];
                            out[o] = v > out[o] ? v : out[o];
                        }
                    else
                        for (long o = a; o < e; o++) {
                            float v = in[o * sw];
                            out[o] = v > out[o] ? v : out[o];
                        }
                }
            }
            if (avg) {
                for (long o = 0; o < ow; o++) out[o] *= rdiv[r] * cdiv[o];
            }
        }
    }
}

static void pool_range(const mi_pool2d_args *j, float *work, long p0, long p1) {
#if MI_ACT_X86
    if (!j->avg && mi_act_isa() >= 1 &&
        maxpool_avx2(j->x, j->y, p0, p1, j->h, j->wd, j->kh, j->kw, j->sh, j->sw, j->dh, j->dw,
                     j->pt, j->pl, j->oh, j->ow, j->x, j->x + j->planes * j->h * j->wd))
        return;
#endif
    pool2d(j->x, j->y, work, p0, p1, j->h, j->wd, j->kh, j->kw, j->sh, j->sw, j->dh, j->dw,
           j->pt, j->pl, j->pb, j->pr, j->oh, j->ow, j->avg, j->include_pad);
}

static void pool_part(const void *arg, int part, int parts) {
    const mi_pool2d_args *j = arg;
    long p0, p1;
    mi_pool_share(j->planes, part, parts, &p0, &p1);
    float *work = part == 0 ? j->work
                            : mi_pool_scratch(2 * lmax(j->oh, j->h) * j->wd + j->oh + j->ow);
    if (work && p0 < p1) pool_range(j, work, p0, p1);
}

/* on the pool, split by planes, each thread with its own work */
int mi_pool2d_f32(const mi_pool2d_args *a) {
    if (!a->x || !a->y || !a->work ||
        ANY_NEGATIVE(a->planes, a->h, a->wd, a->oh, a->ow, a->pt, a->pl, a->pb, a->pr) ||
        ANY_NEGATIVE(a->kh - 1, a->kw - 1, a->sh - 1, a->sw - 1, a->dh - 1, a->dw - 1))
        return MI_EARGS;
    if (a->planes * a->h * a->wd < PARALLEL_MIN || mi_pool_run(pool_part, a))
        pool_range(a, a->work, 0, a->planes);
    return MI_OK;
}

/*
 * The epilogue of a convolution or GEMM, in place and in one pass:
 * y[i, j] = clamp(y[i, j] + bias[i % period] + res[i, j], lo, hi) for rows i < rows and
 * columns j < cols; y's rows are ldy floats apart, res's ldr. bias and res may be NULL.
 */
CLONES static void bias_act(float *restrict y, long cols, long ldy,
                            const float *restrict bias, long period,
                            const float *restrict res, long ldr, float lo, float hi, long i0,
                            long i1) {
    for (long i = i0; i < i1; i++) {
        float *row = y + i * ldy;
        float b = bias ? bias[i % period] : 0.0f;
        if (res) {
            const float *rr = res + i * ldr;
            for (long j = 0; j < cols; j++) {
                float v = row[j] + b + rr[j];
                v = v < lo ? lo : v;
                row[j] = v > hi ? hi : v;
            }
        } else {
            for (long j = 0; j < cols; j++) {
                float v = row[j] + b;
                v = v < lo ? lo : v;
                row[j] = v > hi ? hi : v;
            }
        }
    }
}

static void bias_act_part(const void *arg, int part, int parts) {
    const mi_bias_act_args *j = arg;
    long i0, i1;
    mi_pool_share(j->rows, part, parts, &i0, &i1);
    bias_act(j->y, j->cols, j->ldy, j->bias, j->period, j->res, j->ldr, j->lo, j->hi, i0, i1);
}

/* on the pool, split by rows */
int mi_bias_act_f32(const mi_bias_act_args *a) {
    if (!a->y || ANY_NEGATIVE(a->rows, a->cols, a->ldy, a->ldr) || (a->bias && a->period < 1))
        return MI_EARGS;
    if (a->rows * a->cols < PARALLEL_MIN)
        bias_act(a->y, a->cols, a->ldy, a->bias, a->period, a->res, a->ldr, a->lo, a->hi, 0,
                 a->rows);
    else
        mi_pool_run(bias_act_part, a);
    return MI_OK;
}

/*
 * im2col for 2-D convolutions, output rows [oy0, oy1): cols (N, C, KH, KW, oy1 - oy0, OW)
 * gets, for every tap (ky, kx), the input value each output reads,
 * x[n, c, oy*sh + ky*dh - pt, ox*sw + kx*dw - pl], or 0 where that falls in the padding.
 * No padded copy of the input is made.
 */
/* the (plane, ky) pairs [u0, u1) */
CLONES static void im2col_units(const mi_im2col_args *j, long u0, long u1) {
    const long h = j->h, wd = j->wd, kh = j->kh, kw = j->kw, sh = j->sh, sw = j->sw;
    const long dh = j->dh, dw = j->dw, pt = j->pt, pl = j->pl, oy0 = j->oy0, oy1 = j->oy1;
    const long ow = j->ow, rows = oy1 - oy0;
    const float *restrict x = j->x;
    float *restrict cols = j->cols;
    for (long u = u0; u < u1; u++) {
        long plane = u / kh, ky = u % kh;
        const float *src = x + plane * h * wd;
        {
            for (long kx = 0; kx < kw; kx++) {
                float *dst = cols + ((plane * kh + ky) * kw + kx) * rows * ow;
                long off = kx * dw - pl;
                long a = first_in(off, sw), e = end_in(off, sw, wd, ow);
                if (e < a) e = a;
                for (long oy = oy0; oy < oy1; oy++) {
                    float *row = dst + (oy - oy0) * ow;
                    long iy = oy * sh + ky * dh - pt;
                    if (iy < 0 || iy >= h) {
                        memset(row, 0, sizeof(float) * ow);
                        continue;
                    }
                    const float *in = src + iy * wd + off;
                    for (long o = 0; o < a; o++) row[o] = 0.0f;
                    if (sw == 1)
                        memcpy(row + a, in + a, sizeof(float) * (e - a));
                    else if (sw == 2)
                        for (long o = a; o < e; o++) row[o] = in[2 * o];
                    else
                        for (long o = a; o < e; o++) row[o] = in[o * sw];
                    for (long o = e; o < ow; o++) row[o] = 0.0f;
                }
            }
        }
    }
}

static void im2col_part(const void *arg, int part, int parts) {
    const mi_im2col_args *j = arg;
    long u0, u1;
    mi_pool_share(j->n * j->c * j->kh, part, parts, &u0, &u1);
    im2col_units(j, u0, u1);
}

/* on the pool, split by (plane, kernel row) */
int mi_im2col_f32(const mi_im2col_args *a) {
    if (!a->x || !a->cols || ANY_NEGATIVE(a->n, a->c, a->h, a->wd, a->pt, a->pl, a->ow) ||
        ANY_NEGATIVE(a->kh - 1, a->kw - 1, a->sh - 1, a->sw - 1, a->dh - 1, a->dw - 1) ||
        ANY_NEGATIVE(a->oy0, a->oy1 - a->oy0))
        return MI_EARGS;
    if (a->n * a->c * a->kh * a->kw * (a->oy1 - a->oy0) * a->ow < PARALLEL_MIN)
        im2col_units(a, 0, a->n * a->c * a->kh);
    else
        mi_pool_run(im2col_part, a);
    return MI_OK;
}


/*
 * Inference BatchNormalization folded per channel, with its activation, in one pass:
 * y[n, ch, :] = clamp(x[n, ch, :] * a[ch] + b[ch], lo, hi) over planes of `plane` values.
 */
CLONES static void scale_shift(const float *restrict x, float *restrict y,
                               const float *restrict a, const float *restrict b, long c,
                               long plane, float lo, float hi, long i0, long i1) {
    for (long i = i0; i < i1; i++) {
        const float *xs = x + i * plane;
        float *ys = y + i * plane;
        float k = a[i % c], d = b[i % c];
        for (long p = 0; p < plane; p++) {
            float v = xs[p] * k + d;
            v = v < lo ? lo : v;
            ys[p] = v > hi ? hi : v;
        }
    }
}

static void scale_shift_part(const void *arg, int part, int parts) {
    const mi_scale_shift_args *j = arg;
    long i0, i1;
    mi_pool_share(j->n * j->c, part, parts, &i0, &i1);
    scale_shift(j->x, j->y, j->a, j->b, j->c, j->plane, j->lo, j->hi, i0, i1);
}

/* on the pool, split by planes, when there is enough to split */
int mi_scale_shift_f32(const mi_scale_shift_args *a) {
    if (!a->x || !a->a || !a->b || !a->y || ANY_NEGATIVE(a->n, a->c, a->plane))
        return MI_EARGS;
    if (a->n * a->c * a->plane < PARALLEL_MIN)
        scale_shift(a->x, a->y, a->a, a->b, a->c, a->plane, a->lo, a->hi, 0, a->n * a->c);
    else
        mi_pool_run(scale_shift_part, a);
    return MI_OK;
}

/*
 * Local response normalisation across channels (ONNX): for each channel ch of an image,
 * s = sum of x^2 over channels [ch - (size-1)/2, ch + size/2] (those that exist), then
 * y = x * (bias + alpha / size * s)^-beta. The sum is taken afresh for every channel (no
 * running difference, so no cancellation); beta 0.75 and 0.5 by square roots, any other
 * by powf. acc: plane floats.
 */
CLONES static void lrn(const float *restrict x, float *restrict y, float *restrict acc,
                       long c, long plane, long size, float alpha, float beta, float bias,
                       long u0, long u1) {
    long lo = (size - 1) / 2, hi = size - 1 - lo;
    float scale = alpha / (float)size;
    for (long u = u0; u < u1; u++) {
        long img = u / c, ch = u % c;
        const float *xi = x + img * c * plane;
        float *yi = y + img * c * plane;
        {
            long a = lmax(0, ch - lo), e = lmin(c - 1, ch + hi);
            for (long p = 0; p < plane; p++) acc[p] = 0.0f;
            for (long k = a; k <= e; k++) {
                const float *xk = xi + k * plane;
                for (long p = 0; p < plane; p++) acc[p] += xk[p] * xk[p];
            }
            const float *xc = xi + ch * plane;
            float *yc = yi + ch * plane;
            if (beta == 0.75f)
                for (long p = 0; p < plane; p++) {
                    float t = bias + scale * acc[p], r = sqrtf(t);
                    yc[p] = xc[p] / (r * sqrtf(r));
                }
            else if (beta == 0.5f)
                for (long p = 0; p < plane; p++) yc[p] = xc[p] / sqrtf(bias + scale * acc[p]);
            else
                for (long p = 0; p < plane; p++)
                    yc[p] = xc[p] * powf(bias + scale * acc[p], -beta);
        }
    }
}

static void lrn_part(const void *arg, int part, int parts) {
    const mi_lrn_args *j = arg;
    long u0, u1;
    mi_pool_share(j->n * j->c, part, parts, &u0, &u1);
    float *acc = part == 0 ? j->acc : mi_pool_scratch(j->plane);
    if (acc && u0 < u1)
        lrn(j->x, j->y, acc, j->c, j->plane, j->size, j->alpha, j->beta, j->bias, u0, u1);
}

/* on the pool, split by (image, channel), each thread with its own acc */
int mi_lrn_f32(const mi_lrn_args *a) {
    if (!a->x || !a->y || !a->acc || ANY_NEGATIVE(a->n, a->c, a->plane, a->size - 1))
        return MI_EARGS;
    if (a->n * a->c * a->plane < PARALLEL_MIN || mi_pool_run(lrn_part, a))
        lrn(a->x, a->y, a->acc, a->c, a->plane, a->size, a->alpha, a->beta, a->bias, 0,
            a->n * a->c);
    return MI_OK;
}


/*
 * ConvTranspose whose kernel is its stride (no padding, no dilation: PP-OCR's and U-Nets'
 * 2x2 stride-2 upsampling): the GEMM gives every tap's plane, taps[p, ty, tx] (h x wd), and
 * output row i * kh + ty of plane p interleaves its kw taps' row i. On the pool, split by
 * output rows.
 */
CLONES static void taps2d_rows(const mi_taps2d_args *a, long r0, long r1) {
    const long kh = a->kh, kw = a->kw, h = a->h, wd = a->wd, ow = wd * kw;
    for (long r = r0; r < r1; r++) { /* r = (p * h + i) * kh + ty */
        long ty = r % kh, pi = r / kh, p = pi / h, i = pi % h;
        float *restrict dst = a->y + r * ow;
        const float *src = a->taps + ((p * kh + ty) * kw * h + i) * wd;
        if (kw == 2) {
            const float *restrict s0 = src, *restrict s1 = src + h * wd;
            for (long j = 0; j < wd; j++) {
                dst[2 * j] = s0[j];
                dst[2 * j + 1] = s1[j];
            }
            continue;
        }
        for (long tx = 0; tx < kw; tx++) {
            const float *restrict s = src + tx * h * wd;
            for (long j = 0; j < wd; j++) dst[j * kw + tx] = s[j];
        }
    }
}

static void taps2d_part(const void *arg, int part, int parts) {
    const mi_taps2d_args *a = arg;
    long r0, r1;
    mi_pool_share(a->planes * a->h * a->kh, part, parts, &r0, &r1);
    taps2d_rows(a, r0, r1);
}

int mi_taps2d_f32(const mi_taps2d_args *a) {
    if (!a->taps || !a->y || ANY_NEGATIVE(a->planes, a->h, a->wd, a->kh - 1, a->kw - 1))
        return MI_EARGS;
    if (a->planes * a->h * a->kh * a->wd * a->kw < PARALLEL_MIN)
        taps2d_rows(a, 0, a->planes * a->h * a->kh);
    else
        mi_pool_run(taps2d_part, a);
    return MI_OK;
}
