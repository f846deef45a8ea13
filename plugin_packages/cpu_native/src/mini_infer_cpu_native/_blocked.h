/* Channel-blocked float32 kernels (_blocked.c): tensors (N, C, H, W) held as
 * (N, ceil(C/k), H, W, k), the last block's missing channels zeros (TensorFormat CHW16 with
 * k = 16 on AVX-512 CPUs, CHW8 with k = 8 on AVX2 ones; oneDNN's nChw16c / nChw8c).
 *
 * Every entry point takes one struct and returns MI_OK (0) or MI_EARGS (1: an argument no
 * call could take, or k not one this CPU runs: mi_blocked_isa says which). The Python side
 * (blocked.py) mirrors the structs with ctypes and checks their sizes against
 * mi_blocked_sizes. */
#ifndef MI_BLOCKED_H
#define MI_BLOCKED_H

/* a convolution, 2-D: y = act(clamp(conv(x, w) + bias + res, lo, hi)), every lane of the
 * last output block past c_out written 0.
 *   dense (depthwise 0): group groups (0 or 1: one). One group:
 *     w[ob / obmax][icb][kh][kw][l][ob % obmax][k] (obmax = 4 output blocks of 16 lanes, or
 *     2 of 8 (the blocks a tile sums), icb < cb_in input blocks, l < k input lanes; lanes
 *     past c_in or c_out and the last group's missing blocks zeros): a tile's weight
 *     vectors for one input channel adjacent, a group's taps contiguous. Several:
 *     w[ob][kh][kw][ic][k]: output block ob reads the input channels of the
 *     groups its lanes belong to, [g(ob k) cg, (g(last lane) + 1) cg) (cg = c_in / group,
 *     g(o) = o / (c_out / group)), ic counting from that range's start, up to c_w (the
 *     widest range) with zeros where a lane's group does not read the channel;
 *   depthwise (1): group = c_in = c_out; w[cb][kh][kw][k] (cb_out == cb_in).
 * bias: cb_out * k floats (NULL: none); res: y's shape (NULL: none); act, alpha, beta as
 * _epi.h's (0: none).
 * x_linear 1: x is LINEAR (N, c_in, h, wd), not blocked (a stem's few channels read in
 * place: dense, one group, c_in <= k, cb_in 1; the weights as for one group). */
typedef struct {
    const float *x, *w, *bias, *res;
    float *y;
    long n, c_in, cb_in, h, wd;
    long c_out, cb_out, oh, ow;
    long kh, kw, sh, sw, dh, dw, pt, pl;
    long k, depthwise;
    float lo, hi;
    long act;
    float alpha, beta;
    long group, c_w;
    long x_linear;
} mi_bconv_args;

/* max (average 0) or average pooling, 2-D, of the blocked x into the blocked y (cb blocks of
 * k, the padded lanes pooled too: zeros give zeros); the windows' rows read [ih0, ih0 + kh
 * * dh) clipped to the input; with include_pad an average divides by the taps inside the
 * padded map ([-pt, h + pb) x [-pl, wd + pr)), else by those inside the input */
typedef struct {
    const float *x;
    float *y;
    long n, cb, h, wd, oh, ow;
    long kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    long k, average, include_pad;
} mi_bpool_args;

/* y = a OP b over blocked tensors of nb images of cb blocks, hw positions each:
 * bmode 0: b is a's shape; 1: b one vector per (image, block), (nbi, cb, 1, k) with nbi 1
 * (every image the same) or n. op: 0 add, 1 mul, 2 sub (a - b), 3 reversed sub (b - a),
 * 4 scale and shift (a * b + shift: bmode 1, shift laid out as b; inference
 * BatchNormalization in one pass); then clamped to [lo, hi] */
typedef struct {
    const float *a, *b;
    float *y;
    long n, cb, hw, k, bmode, nbi, op;
    float lo, hi;
    const float *shift;
} mi_bbinary_args;

/* the lanes past c of each image's last block written 0 (after an activation f with f(0)
 * != 0) */
typedef struct {
    float *y;
    long n, cb, hw, k, c;
} mi_bpad_args;

/* Concat on channels: the blocked inputs (count of them, c[i] channels each) into the
 * blocked y of sum(c) channels, per image */
typedef struct {
    const float *const *xs;
    const long *cs;
    float *y;
    long count, n, hw, k;
} mi_bconcat_args;

/* Split on channels: the blocked x (sum(cs) channels) into count blocked outputs of cs[i]
 * channels each, per image, each output's lanes past its channels written 0 */
typedef struct {
    const float *x;
    float *const *ys;
    const long *cs;
    long count, n, hw, k;
} mi_bsplit_args;

/* Resize of the two spatial axes, two taps each (linear; nearest: one source twice, weight
 * 0): y[nb][oy][ox] = t + ry[oy] (b - t), t and b the rows rows[oy][0] and rows[oy][1] of x
 * each at columns cols[ox][0] and cols[ox][1] mixed by rx[ox] alike (_resize.c's tables) */
typedef struct {
    const float *x;
    float *y;
    const long *rows, *cols;
    const float *ry, *rx;
    long n, cb, h, wd, oh, ow, k;
} mi_bresize_args;

/* a tensor of C channels and hw positions per image between LINEAR x (N, C, hw) and
 * blocked y (N, ceil(C/k), hw, k) (to_blocked 1: the lanes past C written 0), or back
 * (to_blocked 0: x blocked, y LINEAR) (_reformat.c) */
typedef struct {
    const float *x;
    float *y;
    long n, c, hw, k, to_blocked;
} mi_breformat_args;

int mi_bconv2d_f32(const mi_bconv_args *a);
int mi_bpool2d_f32(const mi_bpool_args *a);
int mi_bbinary_f32(const mi_bbinary_args *a);
int mi_bpadzero_f32(const mi_bpad_args *a);
int mi_bconcat_f32(const mi_bconcat_args *a);
int mi_bsplit_f32(const mi_bsplit_args *a);
int mi_bresize_f32(const mi_bresize_args *a);
int mi_breformat_f32(const mi_breformat_args *a);
/* the block sizes this CPU runs: bit 0 for 8 (AVX2 + FMA), bit 1 for 16 (AVX-512F) */
int mi_blocked_isa(void);
/* sizeof of each struct above, in the order declared (for the ctypes mirrors) */
void mi_blocked_sizes(long *out);

#endif
