/* Vectorised float32 activation math, header-only (no state, no globals): for a kernel's
 * inner loop and for a GEMM's epilogue applied to its accumulators.
 *
 * Each function exists three times, from one source (_act_simd.h):
 *   mi_<name>_scalar(float)            plain C (any CPU)
 *   mi_<name>_avx2(__m256)             target("avx2,fma")
 *   mi_<name>_avx512(__m512)           target("avx512f,fma")
 * always inlined; a caller compiled for the same target (or a superset: the GEMM's
 * "avx512f,avx512vl,avx512dq,fma") inlines them, and picks the copy at run time by the CPU's
 * features (__builtin_cpu_supports), as _act.c does. The plain copy does its products and
 * sums unfused, so its last bits may differ from the vector copies'.
 *
 * names: exp, erf, tanh, sigmoid, gelu, gelu_tanh, swish(x, alpha), hard_sigmoid(x, alpha,
 * beta), hard_swish, leaky_relu(x, alpha), exp_softmax (x <= 0); and the pieces: expx(a, b)
 * (exp(a + b) with a small correction b), exp_neg, mul_sigmoid(x, z) = x sigmoid(z), abs,
 * with_sign.
 *
 * erf, gelu and exp_softmax (with MI_HSUM_ORT, Softmax's sum) are onnxruntime's arithmetic,
 * operation for operation (MLAS's erf kernel, its Gelu's three passes, its sum-exp kernels):
 * onnxruntime's results bit for bit in the vector copies, as a dynamically quantized model
 * needs (issue 25: an ulp before a DynamicQuantizeLinear moves its scale, and a quantum).
 *
 * Accuracy against float64 (libm), measured by tests/accuracy/act_ulp.c over every 17th
 * float32 bit pattern (every 1021st for Gelu-tanh and Swish), in ulps of the float32 result
 * (an ulp of a subnormal is 2^-149); the AVX-512 copy is the same source as the AVX2 one:
 *   exp          <= 1.01 ulp; inf from 88.7229, gradual underflow below -87.34, 0 below -103.98
 *   erf          <= 0.99 ulp (plain copy, unfused: 1.19)
 *   tanh         <= 1.5 ulp
 *   sigmoid      <= 2.4 ulp for x >= -87; 0 below, where the result is under 1.7e-38 (exp_neg:
 *                it was subnormal)
 *   gelu         <= 2.4 ulp for x >= -1; below, where 1 + erf cancels (onnxruntime's formula),
 *                within an absolute 1.2e-7 |x| (-0 or a few 1e-7 |x| from x = -5.6 down)
 *   gelu_tanh    <= 32 ulp for x >= -5.6: the rounding of its float32 argument z (|z| up to
 *                17 there), which exp amplifies, as in any float32 evaluation of the formula
 *   swish        <= 2.9 ulp for x >= -80 (below, results are subnormal)
 *   hard_sigmoid, hard_swish, leaky_relu: one or two roundings
 *   exp_softmax  <= 1.5 ulp where the result is normal
 * NaN in gives NaN out; +-inf give the limits (erf +-1, tanh +-1, sigmoid 1/0, gelu(+inf)
 * = +inf, gelu(-inf) = NaN as onnx's 0.5 * x * (1 + erf(x / sqrt 2)) gives, swish(-inf) NaN
 * likewise).
 *
 * A file that defines MI_ACT_EXTRA (a header name) before including this one gets that
 * header included inside each instruction set's section, with the section's macros
 * (_act_simd.h's list, and the loops' MI_W, MI_LOADU, MI_TAIL...): _act.c writes its loops
 * once that way (_act_loops.h).
 */
#ifndef MI_ACT_H
#define MI_ACT_H

#include <stdint.h>
#include <string.h>

/* exp: round(x / ln 2) by adding 1.5 * 2^23; ln 2 = HI + LO (HI exact in 9 bits); Cephes'
 * expf polynomial for exp(r) - 1 - r on |r| <= ln2 / 2 */
#define MI_LOG2E 1.44269504088896341f
#define MI_ROUND_MAGIC 12582912.0f
#define MI_LN2_HI 0.693359375f
#define MI_LN2_LO -2.12194440e-4f
#define MI_EXP_HI 89.0f
#define MI_EXP_LO -104.0f
#define MI_EXP_NEG_LO -87.0f
#define MI_EXP_P0 1.9875691500e-4f
#define MI_EXP_P1 1.3981999507e-3f
#define MI_EXP_P2 8.3334519073e-3f
#define MI_EXP_P3 4.1665795894e-2f
#define MI_EXP_P4 1.6666665459e-1f
#define MI_EXP_P5 5.0000001201e-1f

/* erf: onnxruntime's (MLAS's erf kernel, whose constants these are; Juffa's erff): a +
 * a S(a^2) below the split, 1 - exp(-(a + a B(a))) from it, a = min(|x|, MI_ERF_MAX); exp
 * by MLAS's reduction (ln 2 as LN2_HI + LN2_LO) and degree-6 polynomial E */
#define MI_ERF_MAX 3.925f
#define MI_ERF_SPLIT 0.921875f
#define MI_ERF_S0 -5.99104969e-4f
#define MI_ERF_S1 4.99339588e-3f
#define MI_ERF_S2 -2.67667342e-2f
#define MI_ERF_S3 1.12818025e-1f
#define MI_ERF_S4 -3.76124859e-1f
#define MI_ERF_S5 1.28379151e-1f
#define MI_ERF_B0 1.72948930e-5f
#define MI_ERF_B1 -3.83208680e-4f
#define MI_ERF_B2 3.88393435e-3f
#define MI_ERF_B3 -2.42545605e-2f
#define MI_ERF_B4 1.06777847e-1f
#define MI_ERF_B5 6.34846687e-1f
#define MI_ERF_B6 1.28717512e-1f
#define MI_ERF_EXP_LO -88.3762626647949f
#define MI_ORT_LN2_HI -6.93145752e-1f
#define MI_ORT_LN2_LO -1.42860677e-6f
#define MI_ERF_E0 1.38319808e-3f
#define MI_ERF_E1 8.37550033e-3f
#define MI_ERF_E2 4.16689515e-2f
#define MI_ERF_E3 1.66664466e-1f
#define MI_ERF_E4 4.99999851e-1f

/* Softmax's exp: onnxruntime's (MLAS's sum-exp kernels, whose constants these are): x
 * clamped below at SOFTMAX_LO (AVX-512: 2^m by vscalefps, subnormal results down there) or
 * SOFTMAX_LO_FMA3 (elsewhere: 2^m from the exponent bits, normal only), m = round(x / ln 2),
 * r = x - m ln 2 (MI_ORT_LN2_*), exp(r) by the degree-6 polynomial X (X5 = X6 = 1) */
#define MI_SOFTMAX_LO -103.9720840454f
#define MI_SOFTMAX_LO_FMA3 -88.3762626647949f
#define MI_SOFTMAX_X0 0x1.694000p-10f
#define MI_SOFTMAX_X1 0x1.125edcp-7f
#define MI_SOFTMAX_X2 0x1.555b5ap-5f
#define MI_SOFTMAX_X3 0x1.555450p-3f
#define MI_SOFTMAX_X4 0x1.fffff6p-2f
#define MI_SQRT1_2 0.70710678118654752f

/* tanh: (tanh(x) - x) / x^3 = T(x^2) below the split (relative error 4e-8) */
#define MI_TANH_SPLIT 0.625f
#define MI_TANH_P0 -0.33333334f
#define MI_TANH_P1 0.13333331f
#define MI_TANH_P2 -0.053964507f
#define MI_TANH_P3 0.021803455f
#define MI_TANH_P4 -0.008438034f
#define MI_TANH_P5 0.002383739f

/* Gelu tanh: 2 sqrt(2 / pi) and 2 sqrt(2 / pi) 0.044715 */
#define MI_GELU_TANH_K1 1.5957691216057308f
#define MI_GELU_TANH_K3 0.07135481627159914f

/* ---- plain C ------------------------------------------------------------------------- */

static inline int32_t mi_act_bits(float f) {
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i;
}
static inline float mi_act_float(int32_t i) {
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}
/* a * b - p exactly, p = a * b rounded (Dekker: a split in two 12-bit halves) */
static inline float mi_act_two_prod_lo(float a, float b, float p) {
    float ah = mi_act_float(mi_act_bits(a) & (int32_t)0xfffff000), al = a - ah;
    float bh = mi_act_float(mi_act_bits(b) & (int32_t)0xfffff000), bl = b - bh;
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

#define MI_F(name) mi_##name##_scalar
#define MI_TGT static inline __attribute__((always_inline))
#define MI_V float
#define MI_VI int32_t
#define MI_M int
#define MI_SET1(f) (f)
#define MI_SET1I(i) ((int32_t)(i))
#define MI_FMA(a, b, c) ((a) * (b) + (c))
#define MI_FNMA(a, b, c) ((c) - (a) * (b))
#define MI_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MI_MAX(a, b) ((a) > (b) ? (a) : (b))
#define MI_LT(a, b) ((a) < (b))
#define MI_GE(a, b) ((a) >= (b))
#define MI_SEL(m, a, b) ((m) ? (a) : (b))
#define MI_ALL(m) (m)
#define MI_AS_I(v) mi_act_bits(v)
#define MI_AS_F(i) mi_act_float(i)
#define MI_IADD(a, b) ((int32_t)((uint32_t)(a) + (uint32_t)(b)))
#define MI_ISUB(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)))
#define MI_ISHL23(i) ((int32_t)((uint32_t)(i) << 23))
#define MI_ISRA1(i) ((i) >> 1)
#define MI_IAND(a, b) ((a) & (b))
#define MI_IOR(a, b) ((a) | (b))
#define MI_TWO_PROD_LO(a, b, p) mi_act_two_prod_lo(a, b, p)
#define MI_TARGET
#define MI_W 1
#define MI_LOADU(p) (*(p))
#define MI_STOREU(p, v) (*(p) = (v))
#define MI_TM int
#define MI_TAIL(rem) 1
#define MI_LOAD_TAIL(p, m) ((void)(m), *(p))
#define MI_STORE_TAIL(p, m, v) ((void)(m), *(p) = (v))
#define MI_TSEL(m, a, b) ((m) ? (a) : (b))
#define MI_HSUM(v) (v)
#define MI_HSUM_ORT(v) (v)
#define MI_HMAX(v) (v)
#include "_act_simd.h"
#ifdef MI_ACT_EXTRA
#include MI_ACT_EXTRA
#endif
#include "_act_isa_end.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MI_ACT_X86 1

/* the loops' helpers: a mask of the first rem < 8 lanes, horizontal sum and maximum */
__attribute__((target("avx2,fma"))) static inline __m256i mi_tail_avx2(long rem) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)rem), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
__attribute__((target("avx2,fma"))) static inline float mi_hsum_avx2(__m256 v) {
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    return _mm_cvtss_f32(_mm_add_ss(a, _mm_movehdup_ps(a)));
}
/* the sum of the lanes in the order of onnxruntime's sum-exp kernels (Softmax):
 * ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)), two vhaddps; AVX-512: s_k = v_k + v_(k+8)
 * first */
__attribute__((target("avx2,fma"))) static inline float mi_hsum_ort_avx2(__m256 v) {
    v = _mm256_hadd_ps(v, v);
    v = _mm256_hadd_ps(v, v);
    return _mm_cvtss_f32(_mm_add_ss(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v)));
}
__attribute__((target("avx512f,fma"))) static inline float mi_hsum_ort_avx512(__m512 v) {
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    return mi_hsum_ort_avx2(_mm256_add_ps(hi, _mm512_castps512_ps256(v)));
}
__attribute__((target("avx2,fma"))) static inline float mi_hmax_avx2(__m256 v) {
    __m128 a = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_max_ps(a, _mm_movehl_ps(a, a));
    return _mm_cvtss_f32(_mm_max_ss(a, _mm_movehdup_ps(a)));
}

/* ---- AVX2 + FMA: 8 floats ------------------------------------------------------------ */

#define MI_F(name) mi_##name##_avx2
#define MI_TGT static inline __attribute__((always_inline, target("avx2,fma")))
#define MI_V __m256
#define MI_VI __m256i
#define MI_M __m256
#define MI_SET1(f) _mm256_set1_ps(f)
#define MI_SET1I(i) _mm256_set1_epi32(i)
#define MI_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define MI_FNMA(a, b, c) _mm256_fnmadd_ps(a, b, c)
#define MI_MIN(a, b) _mm256_min_ps(a, b)
#define MI_MAX(a, b) _mm256_max_ps(a, b)
#define MI_LT(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define MI_GE(a, b) _mm256_cmp_ps(a, b, _CMP_GE_OQ)
#define MI_SEL(m, a, b) _mm256_blendv_ps(b, a, m)
#define MI_ALL(m) (_mm256_movemask_ps(m) == 0xff)
#define MI_AS_I(v) _mm256_castps_si256(v)
#define MI_AS_F(i) _mm256_castsi256_ps(i)
#define MI_IADD(a, b) _mm256_add_epi32(a, b)
#define MI_ISUB(a, b) _mm256_sub_epi32(a, b)
#define MI_ISHL23(i) _mm256_slli_epi32(i, 23)
#define MI_ISRA1(i) _mm256_srai_epi32(i, 1)
#define MI_IAND(a, b) _mm256_and_si256(a, b)
#define MI_IOR(a, b) _mm256_or_si256(a, b)
#define MI_TWO_PROD_LO(a, b, p) _mm256_fmsub_ps(a, b, p)
#define MI_TARGET __attribute__((target("avx2,fma")))
#define MI_W 8
#define MI_LOADU(p) _mm256_loadu_ps(p)
#define MI_STOREU(p, v) _mm256_storeu_ps(p, v)
#define MI_TM __m256i
#define MI_TAIL(rem) mi_tail_avx2(rem)
#define MI_LOAD_TAIL(p, m) _mm256_maskload_ps(p, m)
#define MI_STORE_TAIL(p, m, v) _mm256_maskstore_ps(p, m, v)
#define MI_TSEL(m, a, b) _mm256_blendv_ps(b, a, _mm256_castsi256_ps(m))
#define MI_HSUM(v) mi_hsum_avx2(v)
#define MI_HSUM_ORT(v) mi_hsum_ort_avx2(v)
#define MI_HMAX(v) mi_hmax_avx2(v)
#include "_act_simd.h"
#ifdef MI_ACT_EXTRA
#include MI_ACT_EXTRA
#endif
#include "_act_isa_end.h"

/* ---- AVX-512F: 16 floats (masks are __mmask16) -------------------------------------- */

#define MI_F(name) mi_##name##_avx512
#define MI_TGT static inline __attribute__((always_inline, target("avx512f,fma")))
#define MI_V __m512
#define MI_VI __m512i
#define MI_M __mmask16
#define MI_SET1(f) _mm512_set1_ps(f)
#define MI_SET1I(i) _mm512_set1_epi32(i)
#define MI_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define MI_FNMA(a, b, c) _mm512_fnmadd_ps(a, b, c)
#define MI_MIN(a, b) _mm512_min_ps(a, b)
#define MI_MAX(a, b) _mm512_max_ps(a, b)
#define MI_LT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define MI_GE(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ)
#define MI_SEL(m, a, b) _mm512_mask_blend_ps(m, b, a)
#define MI_ALL(m) ((m) == (__mmask16)0xffff)
#define MI_AS_I(v) _mm512_castps_si512(v)
#define MI_AS_F(i) _mm512_castsi512_ps(i)
#define MI_IADD(a, b) _mm512_add_epi32(a, b)
#define MI_ISUB(a, b) _mm512_sub_epi32(a, b)
#define MI_ISHL23(i) _mm512_slli_epi32(i, 23)
#define MI_ISRA1(i) _mm512_srai_epi32(i, 1)
#define MI_IAND(a, b) _mm512_and_si512(a, b)
#define MI_IOR(a, b) _mm512_or_si512(a, b)
#define MI_TWO_PROD_LO(a, b, p) _mm512_fmsub_ps(a, b, p)
#define MI_TARGET __attribute__((target("avx512f,fma")))
#define MI_W 16
#define MI_LOADU(p) _mm512_loadu_ps(p)
#define MI_STOREU(p, v) _mm512_storeu_ps(p, v)
#define MI_TM __mmask16
#define MI_TAIL(rem) ((__mmask16)((1u << (rem)) - 1u))
#define MI_LOAD_TAIL(p, m) _mm512_maskz_loadu_ps(m, p)
#define MI_STORE_TAIL(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define MI_TSEL(m, a, b) _mm512_mask_blend_ps(m, b, a)
#define MI_HSUM(v) _mm512_reduce_add_ps(v)
#define MI_HSUM_ORT(v) mi_hsum_ort_avx512(v)
#define MI_HMAX(v) _mm512_reduce_max_ps(v)
#define MI_SCALEF(p, m) _mm512_scalef_ps(p, m)
#include "_act_simd.h"
#ifdef MI_ACT_EXTRA
#include MI_ACT_EXTRA
#endif
#include "_act_isa_end.h"

#else
#define MI_ACT_X86 0
#endif

/* NAME's copy for `level` (2 AVX-512, 1 AVX2, else plain C) called with the arguments */
#if MI_ACT_X86
#define BY_ISA(level, NAME, ...)                                                            \
    ((level) == 2   ? NAME##_avx512(__VA_ARGS__)                                            \
     : (level) == 1 ? NAME##_avx2(__VA_ARGS__)                                              \
                    : NAME##_scalar(__VA_ARGS__))
#else
#define BY_ISA(level, NAME, ...) NAME##_scalar(__VA_ARGS__)
#endif

#endif
