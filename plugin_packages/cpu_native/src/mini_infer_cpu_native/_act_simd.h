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

/* exp(x) for x <= 0 (Softmax's x - max; NaN stays NaN): expx's reduction and polynomial
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

/* erf(t) / t = P(t^2) for 0 <= t < MI_ERF_SPLIT: P */
MI_TGT MI_V MI_F(erf_small_p)(MI_V t) {
    MI_V s = t * t;
    MI_V p = MI_SET1(MI_ERF_S5);
    p = MI_FMA(p, s, MI_SET1(MI_ERF_S4));
    p = MI_FMA(p, s, MI_SET1(MI_ERF_S3));
    p = MI_FMA(p, s, MI_SET1(MI_ERF_S2));
    p = MI_FMA(p, s, MI_SET1(MI_ERF_S1));
    return MI_FMA(p, s, MI_SET1(MI_ERF_S0));
}

/* erf(t) = t P(t^2) for 0 <= t < MI_ERF_SPLIT */
MI_TGT MI_V MI_F(erf_small)(MI_V t) { return t * MI_F(erf_small_p)(t); }

/* erfc(t) for t >= MI_ERF_SPLIT, given t^2 = hi + lo exactly (t itself may be a rounded
 * value: it only enters h): exp(-t^2 + h(t)), h(t) = log(erfc(t)) + t^2 a degree-8
 * polynomial in t - MI_ERFC_MID fitted on [MI_ERF_SPLIT, 4] (h varies slowly: -0.8 to -2),
 * the low part of -t^2 joining h in expx. Past t = 4 (erf is 1 in float32 there; erfc <
 * 1.6e-8) h is held at h(4): the exp(-t^2) factor stays exact, the slowly varying factor is
 * off by at most t/4 (Gelu's far negative tail, values below 5e-8); 0 from t = 10 (erfc(10)
 * = 2e-45). NaN stays NaN. */
MI_TGT MI_V MI_F(erfc_tail_sq)(MI_V t, MI_V hi, MI_V lo) {
    MI_V th = MI_MAX(MI_SET1(MI_ERF_SPLIT), MI_MIN(MI_SET1(4.0f), t));
    MI_V u = th - MI_SET1(MI_ERFC_MID);
    MI_V h = MI_SET1(MI_ERFC_H8);
    h = MI_FMA(h, u, MI_SET1(MI_ERFC_H7));
    h = MI_FMA(h, u, MI_SET1(MI_ERFC_H6));
    h = MI_FMA(h, u, MI_SET1(MI_ERFC_H5));
    h = MI_FMA(h, u, MI_SET1(MI_ERFC_H4));
    h = MI_FMA(h, u, MI_SET1(MI_ERFC_H3));
    h = MI_FMA(h, u, MI_SET1(MI_ERFC_H2));
    h = MI_FMA(h, u, MI_SET1(MI_ERFC_H1));
    h = MI_FMA(h, u, MI_SET1(MI_ERFC_H0));
    MI_M big = MI_GE(t, MI_SET1(10.0f));
    MI_V a = MI_SEL(big, MI_SET1(-100.0f), MI_SET1(0.0f) - hi); /* inside expx's range */
    MI_V e = MI_F(expx)(a, h - lo);
    return MI_SEL(big, MI_SET1(0.0f), e);
}

/* erfc(t) for t >= MI_ERF_SPLIT (above) */
MI_TGT MI_V MI_F(erfc_tail)(MI_V t) {
    MI_V hi = t * t;
    return MI_F(erfc_tail_sq)(t, hi, MI_TWO_PROD_LO(t, t, hi));
}

/* erf(x): t P(t^2) below MI_ERF_SPLIT, 1 - erfc(t) above, with x's sign */
MI_TGT MI_V MI_F(erf)(MI_V x) {
    MI_V t = MI_F(abs)(x);
    MI_V r = MI_SEL(MI_LT(t, MI_SET1(MI_ERF_SPLIT)), MI_F(erf_small)(t), MI_SET1(1.0f) - MI_F(erfc_tail)(t));
    return MI_F(with_sign)(r, x);
}

/* Gelu(x) = x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2: for x < 0 past the split
 * Phi = erfc(|x| / sqrt 2) / 2 directly (no cancellation of 1 + erf). x = -inf gives NaN
 * (-inf * 0), as onnx's formula does. */
MI_TGT MI_V MI_F(gelu)(MI_V x) {
    MI_V t = MI_F(abs)(x) * MI_SET1(MI_SQRT1_2);
    MI_V ht = MI_SET1(0.5f) * t, p = MI_F(erf_small_p)(t); /* (1 +- erf(t)) / 2, rounded once */
    MI_M below = MI_LT(t, MI_SET1(MI_ERF_SPLIT));
    if (MI_ALL(below)) /* no lane past the split (NaN is not below): the tail is not needed */
        return x * MI_SEL(MI_LT(x, MI_SET1(0.0f)), MI_FNMA(ht, p, MI_SET1(0.5f)),
                          MI_FMA(ht, p, MI_SET1(0.5f)));
    MI_V xx = x * x; /* t^2 = x^2 / 2 exactly, as two floats (not the rounded t squared) */
    MI_V xl = MI_TWO_PROD_LO(x, x, xx);
    MI_V tail = MI_SET1(0.5f) * MI_F(erfc_tail_sq)(t, MI_SET1(0.5f) * xx, MI_SET1(0.5f) * xl);
    MI_V pos = MI_SEL(below, MI_FMA(ht, p, MI_SET1(0.5f)), MI_SET1(1.0f) - tail);
    MI_V neg = MI_SEL(below, MI_FNMA(ht, p, MI_SET1(0.5f)), tail);
    return x * MI_SEL(MI_LT(x, MI_SET1(0.0f)), neg, pos);
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
