/* The compiled kernels' arguments: one struct per exported kernel, passed by pointer
 * (`int mi_<kernel>_f32(const mi_<kernel>_args *)`), mirrored field for field by the ctypes
 * Structures of _abi.py.
 *
 * Changing a struct here means changing its mirror in _abi.py and MI_ABI_VERSION (in both
 * places). When the library loads, _abi.py compares MI_ABI_VERSION (mi_abi_version) and the
 * size of every struct and the offset and size of every field (mi_abi_layout, _abi.c) with
 * its mirror, and refuses a library that differs (the plugins then fall back to cpu_basic's
 * NumPy kernels); a test checks that mi_abi_layout lists every field declared here.
 *
 * Conventions: arrays are float32 in C order; sizes and strides are counted in floats; a
 * pointer marked "or NULL" is optional, every other one must point to an array.
 *
 * Return value: MI_OK, or MI_EARGS when an argument is one no call could take (a required
 * array NULL, a size below 0, a kernel size, stride or dilation below 1, padding below 0, a
 * tile other than 2 or 4); nothing is read or written then. The kernels cannot know how
 * large the arrays behind the pointers are: the Python wrappers (_native.py) check every
 * array's dtype, layout and size against what the kernel will touch before they make a call.
 */
#ifndef MI_ARGS_H
#define MI_ARGS_H

#define MI_ABI_VERSION 1

#define MI_OK 0
#define MI_EARGS 1

/* y = clamp(depthwise_conv(x, w) + bias + res, lo, hi), one filter per channel:
 * mi_dwconv2d_f32 (_kernels.c) */
typedef struct mi_dwconv2d_args {
    const float *x;    /* (n, c, h, wd) */
    const float *w;    /* (c, kh * kw) */
    const float *bias; /* (c) or NULL */
    const float *res;  /* (n, c, oh, ow) or NULL */
    float *y;          /* (n, c, oh, ow) */
    float *work;       /* hp * wp + oh * wp floats */
    long n, c, h, wd;
    long kh, kw, sh, sw, dh, dw;
    long pt, pl; /* padding before the first row and column */
    long oh, ow;
    long hp, wp; /* the padded plane: at least the extent the windows read, pt <= hp, pl <= wp */
    float lo, hi;
} mi_dwconv2d_args;

/* max (avg 0) or average (avg 1) pooling of every plane: mi_pool2d_f32 (_kernels.c) */
typedef struct mi_pool2d_args {
    const float *x; /* (planes, h, wd) */
    float *y;       /* (planes, oh, ow) */
    float *work;    /* 2 * max(oh, h) * wd + oh + ow floats */
    long planes, h, wd;
    long kh, kw, sh, sw, dh, dw;
    long pt, pl, pb, pr; /* padding before and after (after: the average's divisor only) */
    long oh, ow;
    int avg, include_pad;
} mi_pool2d_args;

/* in place: y[i, j] = clamp(y[i, j] + bias[i % period] + res[i, j], lo, hi):
 * mi_bias_act_f32 (_kernels.c) */
typedef struct mi_bias_act_args {
    float *y;          /* rows x cols, rows ldy floats apart */
    const float *bias; /* (period) or NULL */
    const float *res;  /* rows x cols, rows ldr floats apart, or NULL */
    long rows, cols, ldy, period, ldr;
    float lo, hi;
} mi_bias_act_args;

/* the im2col columns of output rows [oy0, oy1): mi_im2col_f32 (_kernels.c) */
typedef struct mi_im2col_args {
    const float *x; /* (n, c, h, wd) */
    float *cols;    /* (n, c, kh, kw, oy1 - oy0, ow) */
    long n, c, h, wd;
    long kh, kw, sh, sw, dh, dw;
    long pt, pl;
    long oy0, oy1, ow;
} mi_im2col_args;

/* y = clamp(x * a[ch] + b[ch], lo, hi): mi_scale_shift_f32 (_kernels.c) */
typedef struct mi_scale_shift_args {
    const float *x; /* (n, c, plane) */
    const float *a; /* (c) */
    const float *b; /* (c) */
    float *y;       /* (n, c, plane) */
    long n, c, plane;
    float lo, hi;
} mi_scale_shift_args;

/* ONNX LRN across channels: mi_lrn_f32 (_kernels.c) */
typedef struct mi_lrn_args {
    const float *x; /* (n, c, plane) */
    float *y;       /* (n, c, plane) */
    float *acc;     /* plane floats */
    long n, c, plane, size;
    float alpha, beta, bias;
} mi_lrn_args;

/* Winograd F(tile x tile, 3x3) input tiles of tile rows [ty0, ty1): mi_wino_in_f32
 * (_winograd.c) */
typedef struct mi_wino_in_args {
    const float *x; /* (c, h, wd) */
    float *v;       /* ((tile + 2)^2, c, (ty1 - ty0) * tw) */
    float *rows;    /* 2 * (tile + 2) * (tile * tw + 2) floats */
    long c, h, wd;
    long pt, pl;
    long tw, ty0, ty1;
    int tile; /* 2 or 4 */
} mi_wino_in_args;

/* the output tiles of tile rows [ty0, ty1), plus bias and residual, clamped: mi_wino_out_f32
 * (_winograd.c) */
typedef struct mi_wino_out_args {
    const float *mm;   /* ((tile + 2)^2, m, (ty1 - ty0) * tw) */
    float *y;          /* (m, oh, ow) */
    const float *bias; /* (m) or NULL */
    const float *res;  /* (m, oh, ow) or NULL */
    float *rows;       /* tile * tile * tw floats */
    long m, oh, ow;
    long tw, ty0, ty1; /* tw >= ceil(ow / tile), ty1 <= ceil(oh / tile) */
    float lo, hi;
    int tile;
    int act;                /* after the clamp: 0 none, or an MI_ACT_* of _epi.h */
    float act_alpha, act_beta;
} mi_wino_out_args;

/* u[k, f, ch] = (G g G^T)[k] for every 3x3 filter g = w[f, ch]: mi_wino_weights_f32
 * (_winograd.c) */
typedef struct mi_wino_weights_args {
    const float *w; /* (m, c, 3, 3) */
    float *u;       /* ((tile + 2)^2, m, c) */
    long m, c;
    int tile;
} mi_wino_weights_args;

/* A (m x k, rows lda apart) packed in panels of 8 rows: mi_gemm_pack_f32 (_gemm.c) */
typedef struct mi_gemm_pack_args {
    const float *a;
    float *out; /* m * k floats */
    long m, k, lda;
} mi_gemm_pack_args;

/* C = act(clamp(A . B + bias + R, lo, hi)): mi_gemm_f32 (_gemm.c) */
typedef struct mi_gemm_args {
    const float *a;    /* A packed by mi_gemm_pack_f32: m * k floats */
    const float *b;    /* k x n, rows ldb floats apart */
    float *c;          /* m x n, rows ldc floats apart */
    const float *bias; /* (m) or NULL */
    const float *res;  /* m x n, rows ldr floats apart (0: one row for all), or NULL */
    long m, n, k, ldb, ldc, ldr;
    float lo, hi;
    int act;                /* after the clamp: 0 none, or an MI_ACT_* of _epi.h */
    float act_alpha, act_beta;
} mi_gemm_args;

/* C_q = A_q . B_q for q < count, no epilogue: mi_gemm_batch_f32 (_gemm.c) */
typedef struct mi_gemm_batch_args {
    const float *a; /* count packed A_q, a_stride floats apart */
    const float *b; /* count k x n, b_stride floats apart, rows ldb apart */
    float *c;       /* count m x n, c_stride floats apart, rows ldc apart */
    long count, a_stride, b_stride, c_stride, ldb, ldc, m, n, k;
} mi_gemm_batch_args;

/* ---- MatMul and Gemm on the compiled GEMM (_gemm.c) ---- */

/* B (k x n, element (kk, j) at b[kk * rs + j * cs]) packed in panels of 48 columns, the
 * layout mi_matmul_f32 reads with b_packed: mi_gemm_pack_b_f32 (_gemm.c) */
typedef struct mi_gemm_pack_b_args {
    const float *b;
    float *out; /* k * n floats */
    long k, n, rs, cs;
} mi_gemm_pack_b_args;

/* C_q = clamp(alpha * A_q . B_q + bias + cbias + R_q, lo, hi) for every product q = q0 *
 * batch1 + q1 (q0 < batch0, q1 < batch1), each operand X_q at x + q0 * x_s0 + q1 * x_s1:
 * mi_matmul_f32 (_gemm.c). Strides of what is read may be 0 (broadcast) or below 0. */
typedef struct mi_matmul_args {
    const float *a;     /* A_q (m x k): [i, kk] at a[i * a_rs + kk * a_ks], or packed
                           (a_packed: mi_gemm_pack_f32, a_rs and a_ks unused) */
    const float *b;     /* B_q (k x n): [kk, j] at b[kk * ldb + j], or packed (b_packed 1:
                           mi_gemm_pack_b_f32's panels of 48 columns; 2: panels of 24, each
                           one packed as a matrix of its own; ldb unused) */
    float *c;           /* C_q (m x n): [i, j] at c[i * ldc + j] */
    const float *bias;  /* (m) or NULL: one value per row */
    const float *cbias; /* (n) or NULL: one value per column */
    const float *res;   /* R_q (m x n): [i, j] at res[i * ldr + j] (ldr 0: one row), or NULL */
    long m, n, k, a_rs, a_ks, ldb, ldc, ldr;
    long batch0, batch1, a_s0, a_s1, b_s0, b_s1, c_s0, c_s1, r_s0, r_s1;
    int a_packed, b_packed;
    float alpha, lo, hi;
} mi_matmul_args;

/* mi_abi_layout's rows: one per struct (field NULL, size: sizeof) and one per field */
typedef struct mi_abi_field {
    const char *type;
    const char *field;
    long offset, size;
} mi_abi_field;

int mi_abi_version(void);
/* every struct above and its fields, ended by a row whose type is NULL */
const mi_abi_field *mi_abi_layout(void);

int mi_dwconv2d_f32(const mi_dwconv2d_args *a);
int mi_pool2d_f32(const mi_pool2d_args *a);
int mi_bias_act_f32(const mi_bias_act_args *a);
int mi_im2col_f32(const mi_im2col_args *a);
int mi_scale_shift_f32(const mi_scale_shift_args *a);
int mi_lrn_f32(const mi_lrn_args *a);
int mi_wino_in_f32(const mi_wino_in_args *a);
int mi_wino_out_f32(const mi_wino_out_args *a);
int mi_wino_weights_f32(const mi_wino_weights_args *a);
int mi_gemm_pack_f32(const mi_gemm_pack_args *a);
int mi_gemm_f32(const mi_gemm_args *a);
int mi_gemm_batch_f32(const mi_gemm_batch_args *a);
int mi_gemm_pack_b_f32(const mi_gemm_pack_b_args *a);
int mi_matmul_f32(const mi_matmul_args *a);

/* ---- activations, Softmax, LayerNormalization (_act.c) ---------------------------------- */

/* the elementwise functions of mi_act_f32 */
#define MI_ACT_ERF 0
#define MI_ACT_GELU 1      /* approximate "none": x (1 + erf(x / sqrt 2)) / 2 */
#define MI_ACT_GELU_TANH 2 /* approximate "tanh" */
#define MI_ACT_SIGMOID 3
#define MI_ACT_SWISH 4       /* x sigmoid(alpha x) */
#define MI_ACT_HARD_SIGMOID 5 /* max(0, min(1, alpha x + beta)) */
#define MI_ACT_HARD_SWISH 6
#define MI_ACT_TANH 7
#define MI_ACT_LEAKY_RELU 8 /* x >= 0 ? x : alpha x */
#define MI_ACT_EXP 9
#define MI_ACT_COUNT 10

/* y = f(x) elementwise (y may be x itself, not a part of it): mi_act_f32 (_act.c) */
typedef struct mi_act_args {
    const float *x; /* (n) */
    float *y;       /* (n) */
    long n;
    float alpha, beta; /* Swish, LeakyRelu: alpha; HardSigmoid: alpha and beta */
    int op;            /* MI_ACT_* */
} mi_act_args;

/* Softmax (log 0) or LogSoftmax (log 1) along the middle axis of (outer, n, inner):
 * mi_softmax_f32 (_act.c) */
typedef struct mi_softmax_args {
    const float *x; /* (outer, n, inner) */
    float *y;       /* (outer, n, inner), not overlapping x */
    long outer, n, inner;
    int log;
} mi_softmax_args;

/* y = (x - mean) / sqrt(var + epsilon) * scale + bias over each row of n:
 * mi_layer_norm_f32 (_act.c) */
typedef struct mi_layer_norm_args {
    const float *x;     /* (rows, n) */
    const float *scale; /* (n) */
    const float *bias;  /* (n) or NULL */
    float *y;           /* (rows, n), not overlapping x */
    float *mean;        /* (rows) or NULL */
    float *inv_std;     /* (rows) or NULL: 1 / sqrt(var + epsilon) */
    long rows, n;
    float epsilon;
} mi_layer_norm_args;

int mi_act_f32(const mi_act_args *a);
int mi_softmax_f32(const mi_softmax_args *a);
int mi_layer_norm_f32(const mi_layer_norm_args *a);
/* the instruction set the kernels of _act.c run: 2 AVX-512F, 1 AVX2+FMA, 0 plain C (the best
 * this CPU has); tests: mi_act_set_isa(n) runs at most n (-1: the best again) */
int mi_act_isa(void);
void mi_act_set_isa(int most);

/* ---- Resize of the last two axes (_resize.c) -------------------------------------------- */

/* y = two-tap interpolation of x along its last two axes, every source row and column and
 * its weight given: mi_resize2d_f32 (_resize.c) */
typedef struct mi_resize2d_args {
    const float *x;  /* (planes, h, wd) */
    float *y;        /* (planes, oh, ow) */
    const long *iy;  /* (oh, 2): the two source rows of each output row, in [0, h) */
    const float *wy; /* (oh): the weight of the second one */
    const long *ix;  /* (ow, 2): the two source columns of each output column, in [0, wd) */
    const float *wx; /* (ow) */
    float *work;     /* 2 * ow floats */
    long planes, h, wd, oh, ow;
} mi_resize2d_args;

int mi_resize2d_f32(const mi_resize2d_args *a);

/* ---- direct convolution of narrow groups (_dconv.c) ----------------------------------- */

/* y = act(clamp(conv(x, w) + bias + res, lo, hi)) with `group` groups, summed directly:
 * mi_dconv2d_f32 (_dconv.c); mi_dconv2d_work: the floats `work` needs (-1: bad group or
 * stride) */
typedef struct mi_dconv2d_args {
    const float *x;    /* (n, c, h, wd) */
    const float *w;    /* (m, c / group, kh, kw) */
    const float *bias; /* (m) or NULL */
    const float *res;  /* (n, m, oh, ow) or NULL */
    float *y;          /* (n, m, oh, ow) */
    float *work;       /* mi_dconv2d_work floats */
    long n, c, h, wd, m, group;
    long kh, kw, sh, sw, dh, dw;
    long pt, pl; /* padding before the first row and column */
    long oh, ow;
    float lo, hi;
    int act;                /* after the clamp: 0 none, or an MI_ACT_* of _epi.h */
    float act_alpha, act_beta;
} mi_dconv2d_args;

int mi_dconv2d_f32(const mi_dconv2d_args *a);
long mi_dconv2d_work(const mi_dconv2d_args *a);

/* ---- products of a few rows, squeeze-and-excitation (_vec.c) -------------------------- */

/* C = clamp(alpha * A . B + bias[i] + cbias[j] + R, lo, hi) for a few rows: mi_gemv_f32 */
typedef struct mi_gemv_args {
    const float *a;     /* (m x k): [i, kk] at a[i * a_rs + kk * a_ks] */
    const float *b;     /* (k x n): packed in panels of `panel` columns (mi_gemm_pack_b_f32's
                           layout; a multiple of 24), or panel 0: [kk, j] at b[kk * ldb + j] */
    float *c;           /* (m x n): [i, j] at c[i * ldc + j] */
    const float *bias;  /* (m) or NULL: one value per row */
    const float *cbias; /* (n) or NULL: one value per column */
    const float *res;   /* (m x n): [i, j] at res[i * ldr + j] (ldr 0: one row), or NULL */
    long m, n, k, a_rs, a_ks, ldb, ldc, ldr, panel;
    float alpha, lo, hi;
} mi_gemv_args;

/* rows of contiguous floats: mi_row_mean_f32 (y[r] = the mean of x's row r) and
 * mi_row_scale_f32 (y[r, :] = x[r, :] * s[r]) */
typedef struct mi_rows_args {
    const float *x; /* (rows, cols) */
    const float *s; /* (rows): the scale of each row (mi_row_scale_f32; NULL otherwise) */
    float *y;       /* (rows) (mi_row_mean_f32) or (rows, cols) (mi_row_scale_f32) */
    long rows, cols;
} mi_rows_args;

/* planes of `plane` floats gathered or moved (3-D convolutions over frames,
 * _conv_frames.py): dst plane i = ((i0 * d1 + i1) * d2 + i2) * d3 + i3 is src plane
 * i0 * s0 + i3 * s3 + f, f = i1 * s1 + i2 * s2 - pad, or zeros where f is outside [0,
 * frames); src has src_planes planes: mi_planes_f32 (_planes.c) */
typedef struct mi_planes_args {
    const float *src;
    float *dst;
    long d0, d1, d2, d3, s0, s1, s2, s3, pad, frames, plane, src_planes;
} mi_planes_args;

int mi_planes_f32(const mi_planes_args *a);

int mi_gemv_f32(const mi_gemv_args *a);
int mi_row_mean_f32(const mi_rows_args *a);
int mi_row_scale_f32(const mi_rows_args *a);
/* y[r] = log(sum(exp(x[r, :]))), the row's largest finite value taken out */
int mi_row_logsumexp_f32(const mi_rows_args *a);

/* ---- ConvTranspose whose kernel is its stride (_kernels.c) ----------------------------- */

/* y[p, i * kh + ty, j * kw + tx] = taps[p, ty, tx, i, j]: each tap's plane (the GEMM's rows
 * for (output channel, ty, tx)) placed in its phase of the output, for every plane p:
 * mi_taps2d_f32 */
typedef struct mi_taps2d_args {
    const float *taps; /* (planes, kh, kw, h, wd) */
    float *y;          /* (planes, h * kh, wd * kw) */
    long planes, kh, kw, h, wd;
} mi_taps2d_args;

int mi_taps2d_f32(const mi_taps2d_args *a);

/* ---- integer GEMM and DynamicQuantizeLinear (_qgemm.c) ---------------------------------- */

/* mi_qgemm_i8 could not get its buffers (nothing written) */
#define MI_ENOMEM 2

/* what mi_qgemm_i8 writes (mi_qgemm_args.out) */
#define MI_Q_INT32 0 /* int32: the exact sums (MatMulInteger) */
#define MI_Q_FLOAT 1 /* float32: clamp(float(acc) * mult[j] + bias[j], lo, hi) */
#define MI_Q_U8 2    /* uint8: clamp(rint(float(acc) * mult[j]) + zy, lo, hi) */
#define MI_Q_S8 3    /* int8: the same */

/* B (k x n, 8-bit) packed: panels of 16 columns, quads of 4 k (k * n bytes, _qgemm.c);
 * flip 1: B is uint8, stored as b - 128: mi_qpack_b_i8 */
typedef struct mi_qpack_b_args {
    const void *b; /* [kk, j] at b[kk * rs + j * cs] */
    void *out;     /* k * n bytes */
    long k, n, rs, cs;
    int flip;
} mi_qpack_b_args;

/* colsum[j] = the sum of column j of a packed B (its stored int8 values): mi_qcolsum_i8 */
typedef struct mi_qcolsum_args {
    const void *bp; /* k * n bytes of mi_qpack_b_i8 */
    int *colsum;    /* (n) */
    long k, n;
} mi_qcolsum_args;

/* C = epilogue(sum_k (A - za) (B - zb[j])): mi_qgemm_i8 */
typedef struct mi_qgemm_args {
    const void *a;      /* (m x k) uint8 or int8 (a_signed), rows lda bytes apart */
    const void *bp;     /* mi_qpack_b_i8's k * n bytes */
    const int *colsum;  /* (n): mi_qcolsum_i8 of bp */
    void *c;            /* (m x n) by `out`: int32, float32, uint8 or int8, rows ldc apart */
    const int *zb;      /* B's zero point as stored (uint8 B: zb - 128): (n), or one (zb_step 0) */
    const float *mult;  /* (n), or one (mult_step 0); NULL for MI_Q_INT32 */
    const float *bias;  /* (n) or NULL: float32 (MI_Q_FLOAT); int32 added to the sums (MI_Q_U8/S8) */
    long m, n, k, lda, ldc, zb_step, mult_step;
    int a_signed, za, out, zy;
    float lo, hi; /* MI_Q_FLOAT: the clamp; MI_Q_U8/S8: the quantized range (a Relu: zy) */
} mi_qgemm_args;

/* a convolution's integer product: mi_qconv_i8 (_qgemm.c) runs `gemm` (its `a` unused, its
 * m = n * oh * ow, k = kh * kw * cg) with A's row (b, oy, ox) read from the windows of the
 * NHWC image x (n, h, w, c): channels [c0, c0 + cg) of each tap, k in the order (ty, tx,
 * channel); taps outside the image (pads ph, pw before) read gemm.za */
typedef struct mi_qconv_args {
    mi_qgemm_args gemm;
    const void *x;
    long n, h, w, c, c0, cg, kh, kw, sh, sw, dh, dw, ph, pw, oh, ow;
} mi_qconv_args;

/* a depthwise QLinearConv on NHWC tensors: y (n, oh, ow, c) = requantize(bias[c] + sum over
 * the taps inside x (n, h, w, c) of (x - zx) * wt[tap][c]), wt (kh * kw, c) = w - w's zero
 * point as int16, mult (c) or one (mult_step 0): mi_qdwconv_i8 (_qdw.c). cg 4, 8 or 16: a
 * grouped one of cg inputs and cg outputs a group, wt then int8 w - zw in quads, (kh * kw,
 * ceil(c / 16), cg / 4, 16, 4): output 16 v + l's inputs 4 j .. 4 j + 3 of its group at
 * [tap][v][j][l]; 0 or 1: depthwise */
typedef struct mi_qdwconv_args {
    const void *x;
    const short *wt;
    const int *bias;   /* (c) or NULL */
    const float *mult;
    void *y;
    long n, h, w, c, kh, kw, sh, sw, dh, dw, ph, pw, oh, ow, mult_step;
    int zx, zy, x_signed, y_signed;
    long cg;
} mi_qdwconv_args;

/* y[i] = table[x[i]] for n 8-bit values (their bit patterns index the 256-byte table):
 * mi_qlookup_i8 (_qelt.c) */
typedef struct mi_qlookup_args {
    const void *x;
    const void *table;
    void *y;
    long n;
} mi_qlookup_args;

/* y[(o * c + ch) * inner + i] = table[ch * 256 + x[...]] (one 256-byte table per channel,
 * channels the middle of outer x c x inner: NHWC inner = 1, NCHW outer = N):
 * mi_qchlookup_i8 (_qelt.c) */
typedef struct mi_qchlookup_args {
    const void *x;
    const void *table;
    void *y;
    long outer, c, inner;
} mi_qchlookup_args;

/* MaxPool of an NHWC 8-bit tensor (n, h, w, c) into (n, oh, ow, c): the window of output
 * (oy, ox) starts at (oy * sh - pt, ox * sw - pl), taps dh, dw apart, those outside the image
 * skipped (a window with none gives the type's minimum): mi_qmaxpool_i8 (_qelt.c) */
typedef struct mi_qmaxpool_args {
    const void *x;
    void *y;
    long n, h, w, c, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow;
    int is_signed;
} mi_qmaxpool_args;

/* QLinearAdd (op 0) and QLinearMul (op 1) of 8-bit a (outer x inner) and b (b's value for
 * a's (o, p): b[o * b_outer_step + p * b_step], b_step 0 or 1), y like a; all uint8 or all
 * int8 (is_signed): mi_qbinary_i8 (_qelt.c). Add: y = sat(rint(fma(a, ra, fma(b, rb,
 * fixed)))), fixed = zy - fma(ra, za, rb * zb) (the caller's); Mul: y = sat(rint((a - za) *
 * (b - zb) * ra + zy)) */
typedef struct mi_qbinary_args {
    const void *a;
    const void *b;
    void *y;
    long outer, inner, b_step, b_outer_step;
    float ra, rb, fixed;
    int za, zb, zy, op, is_signed;
} mi_qbinary_args;

/* QLinearGlobalAveragePool of an NHWC 8-bit tensor x (n, hw, c) into y (n, c), both uint8 or
 * both int8 (is_signed): y = sat(rint((float)(sum over hw of x - zx * hw) * mult) + zy), the
 * sums in int32 (hw at most MI_QGAP_MAX_HW): mi_qgap_i8 (_qgap.c) */
#define MI_QGAP_MAX_HW 8421504L /* 255 * hw < 2^31 */
typedef struct mi_qgap_args {
    const void *x;
    void *y;
    long n, hw, c;
    float mult;
    int zx, zy, is_signed;
} mi_qgap_args;

/* QuantizeLinear per tensor of float32 x (n, c, hw) into uint8 or int8 y (is_signed), NCHW or
 * NHWC (hwc: y (n, hw, c)): y = sat(rint(x / scale) + zp): mi_qquant_f32 (_qquant.c); per
 * channel where `scales` is set (NCHW only: channel ch's plane by scales[ch] and zps[ch],
 * which then replace scale and zp) */
typedef struct mi_qquant_args {
    const float *x;
    void *y;
    long n, c, hw;
    float scale;
    int zp, is_signed, hwc;
    const float *scales;
    const int *zps;
} mi_qquant_args;

/* DequantizeLinear per channel of uint8 or int8 x (n, c, hw, NCHW) into float32 y:
 * y = (float(x) - float(zps[ch])) * scales[ch] (zps NULL: no subtraction):
 * mi_qdequant_i8 (_qquant.c) */
typedef struct mi_qdequant_args {
    const void *x;
    float *y;
    long n, c, hw;
    const float *scales;
    const int *zps;
    int is_signed;
} mi_qdequant_args;

/* DynamicQuantizeLinear of n floats: mi_dql_f32 */
typedef struct mi_dql_args {
    const float *x;
    unsigned char *y;  /* (n) */
    float *scale;      /* one */
    unsigned char *zp; /* one */
    long n;
} mi_dql_args;

/* QLinearConv's requantization of exact float32 sums (n, c, hw), per channel: mi_qrequant_f32
 * (_qconv.c) */
typedef struct mi_qrequant_args {
    const float *x;    /* (n, c, hw) */
    void *y;           /* (n, c, hw) uint8, or int8 (y_signed) */
    const float *mult; /* (c), or one (mult_step 0) */
    long n, c, hw, mult_step;
    int y_signed, zy;
} mi_qrequant_args;

int mi_qpack_b_i8(const mi_qpack_b_args *p);
int mi_qcolsum_i8(const mi_qcolsum_args *p);
int mi_qgemm_i8(const mi_qgemm_args *a);
int mi_qconv_i8(const mi_qconv_args *v);
int mi_qbinary_i8(const mi_qbinary_args *a);
int mi_qlookup_i8(const mi_qlookup_args *a);
int mi_qchlookup_i8(const mi_qchlookup_args *a);
int mi_qmaxpool_i8(const mi_qmaxpool_args *a);
int mi_qdwconv_i8(const mi_qdwconv_args *a);
int mi_dql_f32(const mi_dql_args *a);
int mi_qrequant_f32(const mi_qrequant_args *a);
int mi_qgap_i8(const mi_qgap_args *a);
int mi_qquant_f32(const mi_qquant_args *a);
int mi_qdequant_i8(const mi_qdequant_args *a);

/* ---- recurrent layers: LSTM, GRU, RNN (_rnn.c) ------------------------------------------ */

#define MI_RNN 0
#define MI_GRU 1
#define MI_LSTM 2

/* one direction of a recurrent layer over every time step: the input projection of all
 * steps as one product, then per step the recurrent product and the gates: mi_rnn_f32.
 * G gate blocks (RNN 1, GRU 3: z r h, LSTM 4: i o f c), GH = G * h. States and the final
 * outputs share one layout: row b of h0, c0, yh, yc at b * st_bs. */
typedef struct mi_rnn_args {
    const float *x;    /* X[t, b, :] (i contiguous floats) at x + t * x_ts + b * x_bs */
    const float *w;    /* W^T (i x GH) packed in panels of `panel` columns (mi_gemm_pack_b_f32) */
    const float *r;    /* R^T (h x GH) packed so; GRU: its first 2h columns, then its last h,
                          each packed as a matrix of its own */
    const float *bias; /* (GH) or NULL: added to the projection */
    const float *rbh;  /* (h) or NULL: GRU with linear_before_reset: Rb of the h gate */
    const float *peep; /* (3h) or NULL: LSTM's peepholes p_i, p_o, p_f */
    const int *lens;   /* (b) or NULL: row b runs its first lens[b] steps (in [0, t]) */
    const float *h0;   /* initial state h or NULL */
    const float *c0;   /* LSTM's initial c or NULL */
    float *y;             /* Y[t, b, :] at y + t * y_ts + b * y_bs, or NULL */
    float *yh;            /* the final h or NULL */
    float *yc;            /* LSTM's final c or NULL */
    float *work;          /* t * b * GH + b * GH + 3 * b * h floats */
    long t, b, i, h, x_ts, x_bs, y_ts, y_bs, st_bs, panel; /* panel: 24 or 48 */
    int kind;             /* MI_RNN, MI_GRU, MI_LSTM */
    int reverse, linear_before_reset, input_forget, relu; /* relu: RNN's max(x, 0) for tanh */
    float clip;           /* bound of the activations' inputs (INFINITY: none) */
} mi_rnn_args;

int mi_rnn_f32(const mi_rnn_args *a);
/* ---- MatMulNBits, 4-bit weights (_qnbits.c) ----------------------------------------------- */

/* B [n][kb][block / 2] (ONNX MatMulNBits, 4 bits) into panels of 16 columns, groups of 8 k
 * (the same n * kb * block / 2 bytes): mi_nbits_pack_q4 */
typedef struct mi_nbits_pack_args {
    const unsigned char *b;
    unsigned char *out;
    long n, kb, block;
} mi_nbits_pack_args;

/* C = A . dequantize(B)^T + bias, float or int8 compute (accuracy_level 4): mi_nbits_gemm_f32 */
typedef struct mi_nbits_args {
    const float *a;             /* (m, k), rows lda floats apart */
    const unsigned char *bp;    /* mi_nbits_pack_q4's bytes */
    const unsigned char *blast; /* the last panel padded to 16 columns (kb * block * 8 bytes);
                                   NULL where n is a multiple of 16 */
    const float *scales;        /* (panels, kb, 16), zeros past n */
    const float *zp;            /* (panels, kb, 16), or NULL: 8 */
    const float *bias;          /* (n) or NULL */
    float *c;                   /* (m, n), rows ldc floats apart */
    long m, n, k, kb, block, lda, ldc;
    int int8; /* 1: A quantized to int8 per block, integer dot products */
} mi_nbits_args;

int mi_nbits_pack_q4(const mi_nbits_pack_args *p);
int mi_nbits_gemm_f32(const mi_nbits_args *a);

#endif
