/* The layout of the argument structs (_args.h) as this compiler laid them out, for _abi.py to
 * compare with its ctypes mirrors when the library loads. Every field of _args.h has its row
 * here (a test reads _args.h and checks). */
#include <stddef.h>

#include "_args.h"

#define STRUCT(T) {#T, NULL, 0, (long)sizeof(T)}
#define FIELD(T, f) {#T, #f, (long)offsetof(T, f), (long)sizeof(((T *)0)->f)}

static const mi_abi_field layout[] = {
    STRUCT(mi_dwconv2d_args),
    FIELD(mi_dwconv2d_args, x), FIELD(mi_dwconv2d_args, w), FIELD(mi_dwconv2d_args, bias),
    FIELD(mi_dwconv2d_args, res), FIELD(mi_dwconv2d_args, y), FIELD(mi_dwconv2d_args, work),
    FIELD(mi_dwconv2d_args, n), FIELD(mi_dwconv2d_args, c), FIELD(mi_dwconv2d_args, h),
    FIELD(mi_dwconv2d_args, wd), FIELD(mi_dwconv2d_args, kh), FIELD(mi_dwconv2d_args, kw),
    FIELD(mi_dwconv2d_args, sh), FIELD(mi_dwconv2d_args, sw), FIELD(mi_dwconv2d_args, dh),
    FIELD(mi_dwconv2d_args, dw), FIELD(mi_dwconv2d_args, pt), FIELD(mi_dwconv2d_args, pl),
    FIELD(mi_dwconv2d_args, oh), FIELD(mi_dwconv2d_args, ow), FIELD(mi_dwconv2d_args, hp),
    FIELD(mi_dwconv2d_args, wp), FIELD(mi_dwconv2d_args, lo), FIELD(mi_dwconv2d_args, hi),

    STRUCT(mi_pool2d_args),
    FIELD(mi_pool2d_args, x), FIELD(mi_pool2d_args, y), FIELD(mi_pool2d_args, work),
    FIELD(mi_pool2d_args, planes), FIELD(mi_pool2d_args, h), FIELD(mi_pool2d_args, wd),
    FIELD(mi_pool2d_args, kh), FIELD(mi_pool2d_args, kw), FIELD(mi_pool2d_args, sh),
    FIELD(mi_pool2d_args, sw), FIELD(mi_pool2d_args, dh), FIELD(mi_pool2d_args, dw),
    FIELD(mi_pool2d_args, pt), FIELD(mi_pool2d_args, pl), FIELD(mi_pool2d_args, pb),
    FIELD(mi_pool2d_args, pr), FIELD(mi_pool2d_args, oh), FIELD(mi_pool2d_args, ow),
    FIELD(mi_pool2d_args, avg), FIELD(mi_pool2d_args, include_pad),

    STRUCT(mi_bias_act_args),
    FIELD(mi_bias_act_args, y), FIELD(mi_bias_act_args, bias), FIELD(mi_bias_act_args, res),
    FIELD(mi_bias_act_args, rows), FIELD(mi_bias_act_args, cols), FIELD(mi_bias_act_args, ldy),
    FIELD(mi_bias_act_args, period), FIELD(mi_bias_act_args, ldr), FIELD(mi_bias_act_args, lo),
    FIELD(mi_bias_act_args, hi),

    STRUCT(mi_im2col_args),
    FIELD(mi_im2col_args, x), FIELD(mi_im2col_args, cols), FIELD(mi_im2col_args, n),
    FIELD(mi_im2col_args, c), FIELD(mi_im2col_args, h), FIELD(mi_im2col_args, wd),
    FIELD(mi_im2col_args, kh), FIELD(mi_im2col_args, kw), FIELD(mi_im2col_args, sh),
    FIELD(mi_im2col_args, sw), FIELD(mi_im2col_args, dh), FIELD(mi_im2col_args, dw),
    FIELD(mi_im2col_args, pt), FIELD(mi_im2col_args, pl), FIELD(mi_im2col_args, oy0),
    FIELD(mi_im2col_args, oy1), FIELD(mi_im2col_args, ow),

    STRUCT(mi_scale_shift_args),
    FIELD(mi_scale_shift_args, x), FIELD(mi_scale_shift_args, a), FIELD(mi_scale_shift_args, b),
    FIELD(mi_scale_shift_args, y), FIELD(mi_scale_shift_args, n), FIELD(mi_scale_shift_args, c),
    FIELD(mi_scale_shift_args, plane), FIELD(mi_scale_shift_args, lo),
    FIELD(mi_scale_shift_args, hi),

    STRUCT(mi_lrn_args),
    FIELD(mi_lrn_args, x), FIELD(mi_lrn_args, y), FIELD(mi_lrn_args, acc), FIELD(mi_lrn_args, n),
    FIELD(mi_lrn_args, c), FIELD(mi_lrn_args, plane), FIELD(mi_lrn_args, size),
    FIELD(mi_lrn_args, alpha), FIELD(mi_lrn_args, beta), FIELD(mi_lrn_args, bias),

    STRUCT(mi_wino_in_args),
    FIELD(mi_wino_in_args, x), FIELD(mi_wino_in_args, v), FIELD(mi_wino_in_args, rows),
    FIELD(mi_wino_in_args, c), FIELD(mi_wino_in_args, h), FIELD(mi_wino_in_args, wd),
    FIELD(mi_wino_in_args, pt), FIELD(mi_wino_in_args, pl), FIELD(mi_wino_in_args, tw),
    FIELD(mi_wino_in_args, ty0), FIELD(mi_wino_in_args, ty1), FIELD(mi_wino_in_args, tile),

    STRUCT(mi_wino_out_args),
    FIELD(mi_wino_out_args, mm), FIELD(mi_wino_out_args, y), FIELD(mi_wino_out_args, bias),
    FIELD(mi_wino_out_args, res), FIELD(mi_wino_out_args, rows), FIELD(mi_wino_out_args, m),
    FIELD(mi_wino_out_args, oh), FIELD(mi_wino_out_args, ow), FIELD(mi_wino_out_args, tw),
    FIELD(mi_wino_out_args, ty0), FIELD(mi_wino_out_args, ty1), FIELD(mi_wino_out_args, lo),
    FIELD(mi_wino_out_args, hi), FIELD(mi_wino_out_args, tile),
    FIELD(mi_wino_out_args, act), FIELD(mi_wino_out_args, act_alpha),
    FIELD(mi_wino_out_args, act_beta),

    STRUCT(mi_wino_weights_args),
    FIELD(mi_wino_weights_args, w), FIELD(mi_wino_weights_args, u),
    FIELD(mi_wino_weights_args, m), FIELD(mi_wino_weights_args, c),
    FIELD(mi_wino_weights_args, tile),

    STRUCT(mi_gemm_pack_args),
    FIELD(mi_gemm_pack_args, a), FIELD(mi_gemm_pack_args, out), FIELD(mi_gemm_pack_args, m),
    FIELD(mi_gemm_pack_args, k), FIELD(mi_gemm_pack_args, lda),

    STRUCT(mi_gemm_args),
    FIELD(mi_gemm_args, a), FIELD(mi_gemm_args, b), FIELD(mi_gemm_args, c),
    FIELD(mi_gemm_args, bias), FIELD(mi_gemm_args, res), FIELD(mi_gemm_args, m),
    FIELD(mi_gemm_args, n), FIELD(mi_gemm_args, k), FIELD(mi_gemm_args, ldb),
    FIELD(mi_gemm_args, ldc), FIELD(mi_gemm_args, ldr), FIELD(mi_gemm_args, lo),
    FIELD(mi_gemm_args, hi),
    FIELD(mi_gemm_args, act), FIELD(mi_gemm_args, act_alpha),
    FIELD(mi_gemm_args, act_beta),

    STRUCT(mi_gemm_batch_args),
    FIELD(mi_gemm_batch_args, a), FIELD(mi_gemm_batch_args, b), FIELD(mi_gemm_batch_args, c),
    FIELD(mi_gemm_batch_args, count), FIELD(mi_gemm_batch_args, a_stride),
    FIELD(mi_gemm_batch_args, b_stride), FIELD(mi_gemm_batch_args, c_stride),
    FIELD(mi_gemm_batch_args, ldb), FIELD(mi_gemm_batch_args, ldc), FIELD(mi_gemm_batch_args, m),
    FIELD(mi_gemm_batch_args, n), FIELD(mi_gemm_batch_args, k),

    /* MatMul and Gemm on the compiled GEMM */
    STRUCT(mi_gemm_pack_b_args),
    FIELD(mi_gemm_pack_b_args, b), FIELD(mi_gemm_pack_b_args, out),
    FIELD(mi_gemm_pack_b_args, k), FIELD(mi_gemm_pack_b_args, n), FIELD(mi_gemm_pack_b_args, rs),
    FIELD(mi_gemm_pack_b_args, cs),

    STRUCT(mi_matmul_args),
    FIELD(mi_matmul_args, a), FIELD(mi_matmul_args, b), FIELD(mi_matmul_args, c),
    FIELD(mi_matmul_args, bias), FIELD(mi_matmul_args, cbias), FIELD(mi_matmul_args, res),
    FIELD(mi_matmul_args, m), FIELD(mi_matmul_args, n), FIELD(mi_matmul_args, k),
    FIELD(mi_matmul_args, a_rs), FIELD(mi_matmul_args, a_ks), FIELD(mi_matmul_args, ldb),
    FIELD(mi_matmul_args, ldc), FIELD(mi_matmul_args, ldr), FIELD(mi_matmul_args, batch0),
    FIELD(mi_matmul_args, batch1), FIELD(mi_matmul_args, a_s0), FIELD(mi_matmul_args, a_s1),
    FIELD(mi_matmul_args, b_s0), FIELD(mi_matmul_args, b_s1), FIELD(mi_matmul_args, c_s0),
    FIELD(mi_matmul_args, c_s1), FIELD(mi_matmul_args, r_s0), FIELD(mi_matmul_args, r_s1),
    FIELD(mi_matmul_args, a_packed), FIELD(mi_matmul_args, b_packed),
    FIELD(mi_matmul_args, alpha), FIELD(mi_matmul_args, lo), FIELD(mi_matmul_args, hi),

    STRUCT(mi_abi_field),
    FIELD(mi_abi_field, type), FIELD(mi_abi_field, field), FIELD(mi_abi_field, offset),
    FIELD(mi_abi_field, size),

    /* activations, Softmax, LayerNormalization (_act.c) */
    STRUCT(mi_act_args),
    FIELD(mi_act_args, x), FIELD(mi_act_args, y), FIELD(mi_act_args, n),
    FIELD(mi_act_args, alpha), FIELD(mi_act_args, beta), FIELD(mi_act_args, op),

    STRUCT(mi_softmax_args),
    FIELD(mi_softmax_args, x), FIELD(mi_softmax_args, y), FIELD(mi_softmax_args, outer),
    FIELD(mi_softmax_args, n), FIELD(mi_softmax_args, inner), FIELD(mi_softmax_args, log),

    STRUCT(mi_layer_norm_args),
    FIELD(mi_layer_norm_args, x), FIELD(mi_layer_norm_args, scale),
    FIELD(mi_layer_norm_args, bias), FIELD(mi_layer_norm_args, y),
    FIELD(mi_layer_norm_args, mean), FIELD(mi_layer_norm_args, inv_std),
    FIELD(mi_layer_norm_args, rows), FIELD(mi_layer_norm_args, n),
    FIELD(mi_layer_norm_args, epsilon),

    /* Resize (_resize.c) */
    STRUCT(mi_resize2d_args),
    FIELD(mi_resize2d_args, x), FIELD(mi_resize2d_args, y), FIELD(mi_resize2d_args, iy),
    FIELD(mi_resize2d_args, wy), FIELD(mi_resize2d_args, ix), FIELD(mi_resize2d_args, wx),
    FIELD(mi_resize2d_args, work), FIELD(mi_resize2d_args, planes), FIELD(mi_resize2d_args, h),
    FIELD(mi_resize2d_args, wd), FIELD(mi_resize2d_args, oh), FIELD(mi_resize2d_args, ow),

    /* direct convolution of narrow groups (_dconv.c) */
    STRUCT(mi_dconv2d_args),
    FIELD(mi_dconv2d_args, x), FIELD(mi_dconv2d_args, w), FIELD(mi_dconv2d_args, bias),
    FIELD(mi_dconv2d_args, res), FIELD(mi_dconv2d_args, y), FIELD(mi_dconv2d_args, work),
    FIELD(mi_dconv2d_args, n), FIELD(mi_dconv2d_args, c), FIELD(mi_dconv2d_args, h),
    FIELD(mi_dconv2d_args, wd), FIELD(mi_dconv2d_args, m), FIELD(mi_dconv2d_args, group),
    FIELD(mi_dconv2d_args, kh), FIELD(mi_dconv2d_args, kw), FIELD(mi_dconv2d_args, sh),
    FIELD(mi_dconv2d_args, sw), FIELD(mi_dconv2d_args, dh), FIELD(mi_dconv2d_args, dw),
    FIELD(mi_dconv2d_args, pt), FIELD(mi_dconv2d_args, pl), FIELD(mi_dconv2d_args, oh),
    FIELD(mi_dconv2d_args, ow), FIELD(mi_dconv2d_args, lo), FIELD(mi_dconv2d_args, hi),
    FIELD(mi_dconv2d_args, act), FIELD(mi_dconv2d_args, act_alpha),
    FIELD(mi_dconv2d_args, act_beta),

    /* products of a few rows, squeeze-and-excitation (_vec.c) */
    STRUCT(mi_gemv_args),
    FIELD(mi_gemv_args, a), FIELD(mi_gemv_args, b), FIELD(mi_gemv_args, c),
    FIELD(mi_gemv_args, bias), FIELD(mi_gemv_args, cbias), FIELD(mi_gemv_args, res),
    FIELD(mi_gemv_args, m), FIELD(mi_gemv_args, n), FIELD(mi_gemv_args, k),
    FIELD(mi_gemv_args, a_rs), FIELD(mi_gemv_args, a_ks), FIELD(mi_gemv_args, ldb),
    FIELD(mi_gemv_args, ldc), FIELD(mi_gemv_args, ldr), FIELD(mi_gemv_args, panel),
    FIELD(mi_gemv_args, alpha), FIELD(mi_gemv_args, lo), FIELD(mi_gemv_args, hi),

    STRUCT(mi_planes_args),
    FIELD(mi_planes_args, src), FIELD(mi_planes_args, dst), FIELD(mi_planes_args, d0),
    FIELD(mi_planes_args, d1), FIELD(mi_planes_args, d2), FIELD(mi_planes_args, d3),
    FIELD(mi_planes_args, s0), FIELD(mi_planes_args, s1), FIELD(mi_planes_args, s2),
    FIELD(mi_planes_args, s3), FIELD(mi_planes_args, pad), FIELD(mi_planes_args, frames),
    FIELD(mi_planes_args, plane), FIELD(mi_planes_args, src_planes),
    STRUCT(mi_rows_args),
    FIELD(mi_rows_args, x), FIELD(mi_rows_args, s), FIELD(mi_rows_args, y),
    FIELD(mi_rows_args, rows), FIELD(mi_rows_args, cols),

    /* ConvTranspose whose kernel is its stride (_kernels.c) */
    STRUCT(mi_taps2d_args),
    FIELD(mi_taps2d_args, taps), FIELD(mi_taps2d_args, y), FIELD(mi_taps2d_args, planes),
    FIELD(mi_taps2d_args, kh), FIELD(mi_taps2d_args, kw), FIELD(mi_taps2d_args, h),
    FIELD(mi_taps2d_args, wd),

    /* integer GEMM and DynamicQuantizeLinear (_qgemm.c) */
    STRUCT(mi_qpack_b_args),
    FIELD(mi_qpack_b_args, b), FIELD(mi_qpack_b_args, out), FIELD(mi_qpack_b_args, k),
    FIELD(mi_qpack_b_args, n), FIELD(mi_qpack_b_args, rs), FIELD(mi_qpack_b_args, cs),
    FIELD(mi_qpack_b_args, flip),

    STRUCT(mi_qcolsum_args),
    FIELD(mi_qcolsum_args, bp), FIELD(mi_qcolsum_args, colsum), FIELD(mi_qcolsum_args, k),
    FIELD(mi_qcolsum_args, n),

    STRUCT(mi_qgemm_args),
    FIELD(mi_qgemm_args, a), FIELD(mi_qgemm_args, bp), FIELD(mi_qgemm_args, colsum),
    FIELD(mi_qgemm_args, c), FIELD(mi_qgemm_args, zb), FIELD(mi_qgemm_args, mult),
    FIELD(mi_qgemm_args, bias), FIELD(mi_qgemm_args, m), FIELD(mi_qgemm_args, n),
    FIELD(mi_qgemm_args, k), FIELD(mi_qgemm_args, lda), FIELD(mi_qgemm_args, ldc),
    FIELD(mi_qgemm_args, zb_step), FIELD(mi_qgemm_args, mult_step),
    FIELD(mi_qgemm_args, a_signed), FIELD(mi_qgemm_args, za), FIELD(mi_qgemm_args, out),
    FIELD(mi_qgemm_args, zy), FIELD(mi_qgemm_args, lo), FIELD(mi_qgemm_args, hi),

    STRUCT(mi_dql_args),
    FIELD(mi_dql_args, x), FIELD(mi_dql_args, y), FIELD(mi_dql_args, scale),
    FIELD(mi_dql_args, zp), FIELD(mi_dql_args, n),

    /* QLinearConv's requantization (_qconv.c) */
    STRUCT(mi_qrequant_args),
    FIELD(mi_qrequant_args, x), FIELD(mi_qrequant_args, y), FIELD(mi_qrequant_args, mult),
    FIELD(mi_qrequant_args, n), FIELD(mi_qrequant_args, c), FIELD(mi_qrequant_args, hw),
    FIELD(mi_qrequant_args, mult_step), FIELD(mi_qrequant_args, y_signed),
    FIELD(mi_qrequant_args, zy),

    /* recurrent layers (_rnn.c) */
    STRUCT(mi_rnn_args),
    FIELD(mi_rnn_args, x), FIELD(mi_rnn_args, w), FIELD(mi_rnn_args, r),
    FIELD(mi_rnn_args, bias), FIELD(mi_rnn_args, rbh), FIELD(mi_rnn_args, peep),
    FIELD(mi_rnn_args, lens), FIELD(mi_rnn_args, h0), FIELD(mi_rnn_args, c0),
    FIELD(mi_rnn_args, y), FIELD(mi_rnn_args, yh), FIELD(mi_rnn_args, yc),
    FIELD(mi_rnn_args, work), FIELD(mi_rnn_args, t), FIELD(mi_rnn_args, b),
    FIELD(mi_rnn_args, i), FIELD(mi_rnn_args, h), FIELD(mi_rnn_args, x_ts),
    FIELD(mi_rnn_args, x_bs), FIELD(mi_rnn_args, y_ts), FIELD(mi_rnn_args, y_bs),
    FIELD(mi_rnn_args, st_bs), FIELD(mi_rnn_args, panel), FIELD(mi_rnn_args, kind),
    FIELD(mi_rnn_args, reverse), FIELD(mi_rnn_args, linear_before_reset),
    FIELD(mi_rnn_args, input_forget), FIELD(mi_rnn_args, relu), FIELD(mi_rnn_args, clip),
    /* a convolution's integer product (_qgemm.c) */
    STRUCT(mi_qconv_args),
    FIELD(mi_qconv_args, gemm), FIELD(mi_qconv_args, x), FIELD(mi_qconv_args, n),
    FIELD(mi_qconv_args, h), FIELD(mi_qconv_args, w), FIELD(mi_qconv_args, c),
    FIELD(mi_qconv_args, c0), FIELD(mi_qconv_args, cg), FIELD(mi_qconv_args, kh),
    FIELD(mi_qconv_args, kw), FIELD(mi_qconv_args, sh), FIELD(mi_qconv_args, sw),
    FIELD(mi_qconv_args, dh), FIELD(mi_qconv_args, dw), FIELD(mi_qconv_args, ph),
    FIELD(mi_qconv_args, pw), FIELD(mi_qconv_args, oh), FIELD(mi_qconv_args, ow),

    /* QLinearAdd and QLinearMul (_qelt.c) */
    STRUCT(mi_qbinary_args),
    FIELD(mi_qbinary_args, a), FIELD(mi_qbinary_args, b), FIELD(mi_qbinary_args, y),
    FIELD(mi_qbinary_args, outer), FIELD(mi_qbinary_args, inner),
    FIELD(mi_qbinary_args, b_step), FIELD(mi_qbinary_args, b_outer_step),
    FIELD(mi_qbinary_args, ra), FIELD(mi_qbinary_args, rb), FIELD(mi_qbinary_args, fixed),
    FIELD(mi_qbinary_args, za),
    FIELD(mi_qbinary_args, zb), FIELD(mi_qbinary_args, zy), FIELD(mi_qbinary_args, op),
    FIELD(mi_qbinary_args, is_signed),

    /* depthwise QLinearConv on NHWC (_qdw.c) */
    STRUCT(mi_qdwconv_args),
    FIELD(mi_qdwconv_args, x), FIELD(mi_qdwconv_args, wt), FIELD(mi_qdwconv_args, bias),
    FIELD(mi_qdwconv_args, mult), FIELD(mi_qdwconv_args, y), FIELD(mi_qdwconv_args, n),
    FIELD(mi_qdwconv_args, h), FIELD(mi_qdwconv_args, w), FIELD(mi_qdwconv_args, c),
    FIELD(mi_qdwconv_args, kh), FIELD(mi_qdwconv_args, kw), FIELD(mi_qdwconv_args, sh),
    FIELD(mi_qdwconv_args, sw), FIELD(mi_qdwconv_args, dh), FIELD(mi_qdwconv_args, dw),
    FIELD(mi_qdwconv_args, ph), FIELD(mi_qdwconv_args, pw), FIELD(mi_qdwconv_args, oh),
    FIELD(mi_qdwconv_args, ow), FIELD(mi_qdwconv_args, mult_step), FIELD(mi_qdwconv_args, zx),
    FIELD(mi_qdwconv_args, zy), FIELD(mi_qdwconv_args, x_signed),
    FIELD(mi_qdwconv_args, y_signed), FIELD(mi_qdwconv_args, cg),

    STRUCT(mi_qlookup_args),
    FIELD(mi_qlookup_args, x), FIELD(mi_qlookup_args, table), FIELD(mi_qlookup_args, y),
    FIELD(mi_qlookup_args, n),
    STRUCT(mi_qchlookup_args),
    FIELD(mi_qchlookup_args, x), FIELD(mi_qchlookup_args, table), FIELD(mi_qchlookup_args, y),
    FIELD(mi_qchlookup_args, outer), FIELD(mi_qchlookup_args, c),
    FIELD(mi_qchlookup_args, inner),
    STRUCT(mi_qmaxpool_args),
    FIELD(mi_qmaxpool_args, x), FIELD(mi_qmaxpool_args, y), FIELD(mi_qmaxpool_args, n),
    FIELD(mi_qmaxpool_args, h), FIELD(mi_qmaxpool_args, w), FIELD(mi_qmaxpool_args, c),
    FIELD(mi_qmaxpool_args, kh), FIELD(mi_qmaxpool_args, kw), FIELD(mi_qmaxpool_args, sh),
    FIELD(mi_qmaxpool_args, sw), FIELD(mi_qmaxpool_args, dh), FIELD(mi_qmaxpool_args, dw),
    FIELD(mi_qmaxpool_args, pt), FIELD(mi_qmaxpool_args, pl), FIELD(mi_qmaxpool_args, oh),
    FIELD(mi_qmaxpool_args, ow), FIELD(mi_qmaxpool_args, is_signed),
    /* QuantizeLinear per tensor, NCHW or NHWC y, or per channel (_qquant.c) */
    STRUCT(mi_qquant_args),
    FIELD(mi_qquant_args, x), FIELD(mi_qquant_args, y), FIELD(mi_qquant_args, n),
    FIELD(mi_qquant_args, c), FIELD(mi_qquant_args, hw), FIELD(mi_qquant_args, scale),
    FIELD(mi_qquant_args, zp), FIELD(mi_qquant_args, is_signed), FIELD(mi_qquant_args, hwc),
    FIELD(mi_qquant_args, scales), FIELD(mi_qquant_args, zps),
    /* DequantizeLinear per channel (_qquant.c) */
    STRUCT(mi_qdequant_args),
    FIELD(mi_qdequant_args, x), FIELD(mi_qdequant_args, y), FIELD(mi_qdequant_args, n),
    FIELD(mi_qdequant_args, c), FIELD(mi_qdequant_args, hw), FIELD(mi_qdequant_args, scales),
    FIELD(mi_qdequant_args, zps), FIELD(mi_qdequant_args, is_signed),

    /* QLinearGlobalAveragePool on NHWC (_qgap.c) */
    STRUCT(mi_qgap_args),
    FIELD(mi_qgap_args, x), FIELD(mi_qgap_args, y), FIELD(mi_qgap_args, n),
    FIELD(mi_qgap_args, hw), FIELD(mi_qgap_args, c), FIELD(mi_qgap_args, mult),
    FIELD(mi_qgap_args, zx), FIELD(mi_qgap_args, zy), FIELD(mi_qgap_args, is_signed),
    /* MatMulNBits, 4-bit weights (_qnbits.c) */
    STRUCT(mi_nbits_pack_args),
    FIELD(mi_nbits_pack_args, b), FIELD(mi_nbits_pack_args, out), FIELD(mi_nbits_pack_args, n),
    FIELD(mi_nbits_pack_args, kb), FIELD(mi_nbits_pack_args, block),

    STRUCT(mi_nbits_args),
    FIELD(mi_nbits_args, a), FIELD(mi_nbits_args, bp), FIELD(mi_nbits_args, blast),
    FIELD(mi_nbits_args, scales), FIELD(mi_nbits_args, zp), FIELD(mi_nbits_args, bias),
    FIELD(mi_nbits_args, c), FIELD(mi_nbits_args, m), FIELD(mi_nbits_args, n),
    FIELD(mi_nbits_args, k), FIELD(mi_nbits_args, kb), FIELD(mi_nbits_args, block),
    FIELD(mi_nbits_args, lda), FIELD(mi_nbits_args, ldc), FIELD(mi_nbits_args, int8),

    {NULL, NULL, 0, 0}};

int mi_abi_version(void) { return MI_ABI_VERSION; }

const mi_abi_field *mi_abi_layout(void) { return layout; }
