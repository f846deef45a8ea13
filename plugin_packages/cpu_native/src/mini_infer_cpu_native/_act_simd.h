/* The float32 activation math of _act.h written once for any vector width: included by
 * _act.h once per instruction set with these macros defined (and undefined after):
 *
 *   MI_F(name)         the function's name for this instruction set (mi_<name>_<isa>)
 *   MI_TGT             the function attributes (target ISA, always_inline)
 *   MI_V, MI_VI, MI_M  float vector, int32 vector, comparison mask (every macro below is
 *                      MI_-prefixed too)
 *   SET1(f), SET1I(i)  broadcast
 *   FMA(a, b, c)       a * b + c (fused where the ISA has it); FNMA(a, b, c) = c - a * b
 *   MIN(a, b), MAX(a, b)  b where either is NaN (x86 minps/maxps): MIN(k, x) keeps a NaN x
 *   LT(a, b), GE(a, b) ordered comparisons (false for NaN)
 *   SEL(m, a, b)       a where m, else b
 *   AS_I(v), AS_F(i)   bit casts; IADD, ISUB, ISHL23(i) (i << 23), ISRA1(i) (i >> 1),
 *   IAND, IOR
 * No header guard: it is meant to be included more than once. Nothing here has state. */

/* |x| and copysign(m, s) for m >= 0, by the sign bit */
MI_TGT MI_V MI_F(abs)(MI_V x) { return MI_AS_F(MI_IAND(MI_AS_I(x), MI_SET1I(0x7fffffff))); }
MI_TGT MI_V MI_F(with_sign)(MI_V m, MI_V s) {
    return MI_AS_F(MI_IOR(MI_AS_I(m), MI_IAND(MI_AS_I(s), MI_SET1I((int)0x80000000u))));
}

/* e^r for |r| <= ln 2 / 2: the degree-7 polynomial of expx and exp_neg */
MI_TGT MI_V MI_F(exp_poly)(MI_V r) {
    MI_V p = MI_SET1(MI_EXP_P0);
    p = MI_FMA(p, r, MI_SET1(MI_EXP_P1));
    p = MI_FMA(p, r, MI_SET1(MI_EXP_P2));
    p = MI_FMA(p, r, MI_SET1(MI_EXP_P3));
    p = MI_FMA(p, r, MI_SET1(MI_EXP_P4));
    p = MI_FMA(p, r, MI_SET1(MI_EXP_P5));
    return MI_FMA(p, r * r, r) + MI_SET1(1.0f);
}

/* exp(a + b) for a in [-104, 89] (callers clamp) and a small correction b (|b| < 4): the
 * argument is reduced from a and b separately, so b's low bits are kept (erfc's -t^2 split
 * in two floats). n = round((a + b) / ln 2); r = a + b - n ln 2 by Cody-Waite (ln 2 as 2
 * floats, the first with 9 significant bits: n * MI_LN2_HI is exact); exp(r) by a degree-7
 * polynomial on |r| <= ln2 / 2; times 2^n in two steps (2^(n/2) 2^(n - n/2)), so the result
 * underflows gradually (subnormals) and overflows to inf as IEEE does. NaN stays NaN. */
MI_TGT MI_V MI_F(expx)(MI_V a, MI_V b) {
    MI_V z = MI_FMA(a + b, MI_SET1(MI_LOG2E), MI_SET1(MI_ROUND_MAGIC));
    MI_V n = z - MI_SET1(MI_ROUND_MAGIC);                           /* round to nearest */
    MI_VI ni = MI_ISUB(MI_AS_I(z), MI_AS_I(MI_SET1(MI_ROUND_MAGIC)));         /* n as an integer */
    MI_V r = MI_FNMA(n, MI_SET1(MI_LN2_HI), a) + b;
    r = MI_FNMA(n, MI_SET1(MI_LN2_LO), r);
    MI_V p = MI_F(exp_poly)(r);
    MI_VI n1 = MI_ISRA1(ni);
    MI_VI n2 = MI_ISUB(ni, n1);
    MI_V s1 = MI_AS_F(MI_ISHL23(MI_IADD(n1, MI_SET1I(127))));
    MI_V s2 = MI_AS_F(MI_ISHL23(MI_IADD(n2, MI_SET1I(127))));
    return p * s1 * s2;
}

/* exp(x): within 1 ulp of the true value (measured: _act.h); inf past 88.72, subnormals
 * and then 0 below -87.3, NaN for NaN */
MI_TGT MI_V MI_F(exp)(MI_V x) {
    MI_V a = MI_MAX(MI_SET1(MI_EXP_LO), MI_MIN(MI_SET1(MI_EXP_HI), x)); /* keeps NaN */
    return MI_F(expx)(a, MI_SET1(0.0f));
}

/* exp(x) for x <= 0 (strided Softmax's x - max; NaN stays NaN): expx's reduction and polynomial
 * with one scaling by 2^n, n >= -126 (x clamped at MI_EXP_NEG_LO = -87), and 0 below -87
 * (exp under 1.7e-38: an absolute error below that, where exp gave subnormals; -inf gives
 * 0). Within 1 ulp above MI_EXP_NEG_LO, as exp; 6 fewer operations a vector, and no
 * dependent pair of products at the end (Softmax, one exp per value: 0.79-0.93 of its time; Sigmoid, Swish, Tanh, Gelu-tanh and
 * the convolution epilogues' sigmoid: 0.74-0.83) */
MI_TGT MI_V MI_F(exp_neg)(MI_V x) {
    MI_V a = MI_MAX(MI_SET1(MI_EXP_NEG_LO), x); /* keeps NaN */
    MI_V z = MI_FMA(a, MI_SET1(MI_LOG2E), MI_SET1(MI_ROUND_MAGIC));
    MI_V n = z - MI_SET1(MI_ROUND_MAGIC);
    MI_VI ni = MI_ISUB(MI_AS_I(z), MI_AS_I(MI_SET1(MI_ROUND_MAGIC)));
    MI_V r = MI_FNMA(n, MI_SET1(MI_LN2_HI), a);
    r = MI_FNMA(n, MI_SET1(MI_LN2_LO), r);
    MI_V p = MI_F(exp_poly)(r);
    MI_V y = p * MI_AS_F(MI_ISHL23(MI_IADD(ni, MI_SET1I(127))));
    return MI_SEL(MI_LT(x, MI_SET1(MI_EXP_NEG_LO)), MI_SET1(0.0f), y);
}

/* exp(x) for x <= 0 (Softmax's x - max) as onnxruntime's softmax computes it (MLAS's
 * sum-exp kernel of this instruction set), so that a row's exps, and their sum in
 * MI_HSUM_ORT's order, are onnxruntime's bit for bit: x clamped at MI_SOFTMAX_LO (with
 * vscalefps, AVX-512) or MI_SOFTMAX_LO_FMA3 (2^m from the exponent bits: 0 for m = -127),
 * m = round(x / ln 2) by adding 1.5 * 2^23, r by Cody-Waite, the degree-6 polynomial, times
 * 2^m. Within 1.5 ulp where the result is normal. NaN stays NaN (x is the second operand of
 * the max); -inf gives exp(clamp), 0 or a subnormal. */
MI_TGT MI_V MI_F(exp_softmax)(MI_V x) {
#ifdef MI_SCALEF
    MI_V r = MI_MAX(MI_SET1(MI_SOFTMAX_LO), x);
#else
    MI_V r = MI_MAX(MI_SET1(MI_SOFTMAX_LO_FMA3), x);
#endif
    MI_V z = MI_FMA(r, MI_SET1(MI_LOG2E), MI_SET1(MI_ROUND_MAGIC));
    MI_V m = z - MI_SET1(MI_ROUND_MAGIC);
    r = MI_FMA(m, MI_SET1(MI_ORT_LN2_HI), r);
    r = MI_FMA(m, MI_SET1(MI_ORT_LN2_LO), r);
    MI_V p = MI_SET1(MI_SOFTMAX_X0);
    p = MI_FMA(p, r, MI_SET1(MI_SOFTMAX_X1));
    p = MI_FMA(p, r, MI_SET1(MI_SOFTMAX_X2));
    p = MI_FMA(p, r, MI_SET1(MI_SOFTMAX_X3));
    p = MI_FMA(p, r, MI_SET1(MI_SOFTMAX_X4));
    p = MI_FMA(p, r, MI_SET1(1.0f));
    p = MI_FMA(p, r, MI_SET1(1.0f));
#ifdef MI_SCALEF
    return MI_SCALEF(p, m);
#else
    return p * MI_AS_F(MI_IADD(MI_ISHL23(MI_AS_I(z)), MI_SET1I(0x3f800000)));
#endif
}

/* erf(x) as onnxruntime computes it on x86 (MLAS's erf kernel, the AVX2/FMA one; Juffa's
 * faithfully rounded erff: within 0.99 ulp), the same operations in the same order, so
 * that an Erf or a Gelu gives onnxruntime's float32 results bit for bit: a = min(|x|,
 * 3.925); below the split a + a P(a^2); from it 1 - exp(-(a + a Q(a))) with MLAS's own exp
 * (n = round(q / ln 2) by adding 1.5 * 2^23, ln 2 in two floats, a degree-6 polynomial, times
 * 2^n); x's sign. Both branches are evaluated, as MLAS does, unless no lane reaches the
 * split. NaN stays NaN (MLAS would give +-1: min(NaN, 3.925) is 3.925 there). */
MI_TGT MI_V MI_F(erf)(MI_V x) {
    MI_V a = MI_MIN(MI_SET1(MI_ERF_MAX), MI_F(abs)(x)); /* keeps NaN */
    MI_V s = a * a;
    MI_V p = MI_SET1(MI_ERF_S0);
    p = MI_FMA(p, s, MI_SET1(MI_ERF_S1));
    p = MI_FMA(p, s, MI_SET1(MI_ERF_S2));
    p = MI_FMA(p, s, MI_SET1(MI_ERF_S3));
    p = MI_FMA(p, s, MI_SET1(MI_ERF_S4));
    p = MI_FMA(p, s, MI_SET1(MI_ERF_S5));
    MI_V small = MI_FMA(p, a, a);
    MI_M big = MI_GE(a, MI_SET1(MI_ERF_SPLIT));
    MI_V r = small;
    if (!MI_ALL(MI_LT(a, MI_SET1(MI_ERF_SPLIT)))) { /* some lane at or past the split, or NaN */
        MI_V q = MI_SET1(MI_ERF_B0);
        q = MI_FMA(q, a, MI_SET1(MI_ERF_B1));
        q = MI_FMA(q, a, MI_SET1(MI_ERF_B2));
        q = MI_FMA(q, a, MI_SET1(MI_ERF_B3));
        q = MI_FMA(q, a, MI_SET1(MI_ERF_B4));
        q = MI_FMA(q, a, MI_SET1(MI_ERF_B5));
        q = MI_FMA(q, a, MI_SET1(MI_ERF_B6));
        q = MI_MAX(MI_SET1(0.0f) - MI_FMA(q, a, a), MI_SET1(MI_ERF_EXP_LO));
        MI_V z = MI_FMA(MI_SET1(MI_LOG2E), q, MI_SET1(MI_ROUND_MAGIC));
        MI_V n = z - MI_SET1(MI_ROUND_MAGIC);
        MI_VI ni = MI_ISUB(MI_AS_I(z), MI_AS_I(MI_SET1(MI_ROUND_MAGIC)));
        MI_V f = MI_FMA(n, MI_SET1(MI_ORT_LN2_HI), q);
        f = MI_FMA(n, MI_SET1(MI_ORT_LN2_LO), f);
        MI_V e = MI_SET1(MI_ERF_E0);
        e = MI_FMA(e, f, MI_SET1(MI_ERF_E1));
        e = MI_FMA(e, f, MI_SET1(MI_ERF_E2));
        e = MI_FMA(e, f, MI_SET1(MI_ERF_E3));
        e = MI_FMA(e, f, MI_SET1(MI_ERF_E4));
        e = MI_FMA(e, f, MI_SET1(1.0f));
        e = MI_FMA(e, f, MI_SET1(1.0f));
        e = e * MI_AS_F(MI_ISHL23(MI_IADD(ni, MI_SET1I(127))));
        r = MI_SEL(big, MI_SET1(1.0f) - e, small);
    }
    return MI_F(with_sign)(r, x);
}

/* Gelu(x) = x (1 + erf(x / sqrt 2)) / 2 as onnxruntime's Gelu kernel rounds it: t = x *
 * float(1/sqrt 2), erf(t) (above), then (0.5 x) (erf + 1). Where erf is near -1 (x below
 * about -1) 1 + erf cancels: the error is absolute, below 1.2e-7 |x|, as in onnxruntime.
 * x = -inf gives NaN (-inf * 0), as onnx's formula does. */
MI_TGT MI_V MI_F(gelu)(MI_V x) {
    MI_V e = MI_F(erf)(x * MI_SET1(MI_SQRT1_2));
    return (MI_SET1(0.5f) * x) * (e + MI_SET1(1.0f));
}

/* x * sigmoid(z) in one division: e = exp(-|z|) (exp_neg: 0 past |z| = 87, where exp gave
 * subnormals: sigmoid(z < -87) is 0, not below 1.7e-38), x / (1 + e) for z >= 0,
 * x e / (1 + e) below (no overflow for any z; NaN stays NaN) */
MI_TGT MI_V MI_F(mul_sigmoid)(MI_V x, MI_V z) {
    MI_V e = MI_F(exp_neg)(MI_SET1(0.0f) - MI_F(abs)(z));
    MI_V num = MI_SEL(MI_LT(z, MI_SET1(0.0f)), x * e, x);
    return num / (MI_SET1(1.0f) + e);
}

/* 1 / (1 + exp(-x)) */
MI_TGT MI_V MI_F(sigmoid)(MI_V x) { return MI_F(mul_sigmoid)(MI_SET1(1.0f), x); }

/* x * sigmoid(alpha x) (Swish; SiLU for alpha 1) */
MI_TGT MI_V MI_F(swish)(MI_V x, MI_V alpha) { return MI_F(mul_sigmoid)(x, alpha * x); }

/* Gelu, approximate="tanh": 0.5 x (1 + tanh(u)) = x sigmoid(2u),
 * u = sqrt(2/pi) (x + 0.044715 x^3) (no cancellation for x < 0) */
MI_TGT MI_V MI_F(gelu_tanh)(MI_V x) {
    MI_V z = x * MI_FMA(MI_SET1(MI_GELU_TANH_K3), x * x, MI_SET1(MI_GELU_TANH_K1));
    return MI_F(mul_sigmoid)(x, z);
}

/* tanh(x): x + x^3 P(x^2) below MI_TANH_SPLIT, (1 - e) / (1 + e) with e = exp(-2|x|)
 * above (exp_neg), with x's sign */
MI_TGT MI_V MI_F(tanh)(MI_V x) {
    MI_V t = MI_F(abs)(x);
    MI_V s = x * x;
    MI_V p = MI_SET1(MI_TANH_P5);
    p = MI_FMA(p, s, MI_SET1(MI_TANH_P4));
    p = MI_FMA(p, s, MI_SET1(MI_TANH_P3));
    p = MI_FMA(p, s, MI_SET1(MI_TANH_P2));
    p = MI_FMA(p, s, MI_SET1(MI_TANH_P1));
    p = MI_FMA(p, s, MI_SET1(MI_TANH_P0));
    MI_V small = MI_FMA(x * s, p, x);
    MI_V e = MI_F(exp_neg)(MI_SET1(-2.0f) * t);
    MI_V big = MI_F(with_sign)((MI_SET1(1.0f) - e) / (MI_SET1(1.0f) + e), x);
    return MI_SEL(MI_LT(t, MI_SET1(MI_TANH_SPLIT)), small, big);
}

/* max(0, min(1, alpha x + beta)), NaN kept */
MI_TGT MI_V MI_F(hard_sigmoid)(MI_V x, MI_V alpha, MI_V beta) {
    return MI_MIN(MI_SET1(1.0f), MI_MAX(MI_SET1(0.0f), MI_FMA(alpha, x, beta)));
}

/* x * max(0, min(1, x / 6 + 1 / 2)) */
MI_TGT MI_V MI_F(hard_swish)(MI_V x) {
    return x * MI_F(hard_sigmoid)(x, MI_SET1(1.0f / 6.0f), MI_SET1(0.5f));
}

/* x for x >= 0 (and NaN), alpha x below */
MI_TGT MI_V MI_F(leaky_relu)(MI_V x, MI_V alpha) { return MI_SEL(MI_LT(x, MI_SET1(0.0f)), alpha * x, x); }
