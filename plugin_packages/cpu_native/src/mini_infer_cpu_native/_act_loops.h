/* _act.c's loops, written once for any vector width: _act.c includes _act.h with
 * MI_ACT_EXTRA naming this file, so that it is included inside each instruction set's
 * section, with that section's macros (_act.h, _act_simd.h: MI_V, MI_W lanes, MI_LOADU,
 * MI_TAIL(rem) a mask of the first rem lanes, MI_LOAD_TAIL (zeros past them), MI_HSUM...).
 * The plain C copy has one lane, and so never a tail. No header guard: included three
 * times. */

/* each elementwise function with one signature: f(x, alpha, beta) */
MI_TGT MI_V MI_F(u_erf)(MI_V x, MI_V a, MI_V b) { (void)a, (void)b; return MI_F(erf)(x); }
MI_TGT MI_V MI_F(u_gelu)(MI_V x, MI_V a, MI_V b) { (void)a, (void)b; return MI_F(gelu)(x); }
MI_TGT MI_V MI_F(u_gelu_tanh)(MI_V x, MI_V a, MI_V b) {
    (void)a, (void)b;
    return MI_F(gelu_tanh)(x);
}
MI_TGT MI_V MI_F(u_sigmoid)(MI_V x, MI_V a, MI_V b) {
    (void)a, (void)b;
    return MI_F(sigmoid)(x);
}
MI_TGT MI_V MI_F(u_swish)(MI_V x, MI_V a, MI_V b) { (void)b; return MI_F(swish)(x, a); }
MI_TGT MI_V MI_F(u_hard_sigmoid)(MI_V x, MI_V a, MI_V b) {
    return MI_F(hard_sigmoid)(x, a, b);
}
MI_TGT MI_V MI_F(u_hard_swish)(MI_V x, MI_V a, MI_V b) {
    (void)a, (void)b;
    return MI_F(hard_swish)(x);
}
MI_TGT MI_V MI_F(u_tanh)(MI_V x, MI_V a, MI_V b) { (void)a, (void)b; return MI_F(tanh)(x); }
MI_TGT MI_V MI_F(u_leaky_relu)(MI_V x, MI_V a, MI_V b) {
    (void)b;
    return MI_F(leaky_relu)(x, a);
}
MI_TGT MI_V MI_F(u_exp)(MI_V x, MI_V a, MI_V b) { (void)a, (void)b; return MI_F(exp)(x); }

/* FN over [i0, i1) of xs into ys (ys may be xs: each vector is read, then written); four
 * vectors at a time, so that the out-of-order core overlaps their long dependency chains
 * (the polynomials: one vector at a time ran at the chains' latency, 2x slower) */
#define MI_ACT_LOOP(FN)                                                                     \
    do {                                                                                    \
        long i = i0;                                                                        \
        for (; i + 4 * MI_W <= i1; i += 4 * MI_W) {                                         \
            MI_V x0 = MI_LOADU(xs + i), x1 = MI_LOADU(xs + i + MI_W);                        \
            MI_V x2 = MI_LOADU(xs + i + 2 * MI_W), x3 = MI_LOADU(xs + i + 3 * MI_W);         \
            MI_V y0 = FN(x0, alpha, beta), y1 = FN(x1, alpha, beta);                         \
            MI_V y2 = FN(x2, alpha, beta), y3 = FN(x3, alpha, beta);                         \
            MI_STOREU(ys + i, y0);                                                          \
            MI_STOREU(ys + i + MI_W, y1);                                                   \
            MI_STOREU(ys + i + 2 * MI_W, y2);                                               \
            MI_STOREU(ys + i + 3 * MI_W, y3);                                               \
        }                                                                                   \
        for (; i + MI_W <= i1; i += MI_W) MI_STOREU(ys + i, FN(MI_LOADU(xs + i), alpha, beta)); \
        if (i < i1) {                                                                       \
            MI_TM tail = MI_TAIL(i1 - i);                                                   \
            MI_STORE_TAIL(ys + i, tail, FN(MI_LOAD_TAIL(xs + i, tail), alpha, beta));        \
        }                                                                                   \
    } while (0)

MI_TARGET static void MI_F(act_range)(const mi_act_args *a, long i0, long i1) {
    const float *xs = a->x;
    float *ys = a->y;
    MI_V alpha = MI_SET1(a->alpha), beta = MI_SET1(a->beta);
    switch (a->op) {
    case MI_ACT_ERF: MI_ACT_LOOP(MI_F(u_erf)); break;
    case MI_ACT_GELU: MI_ACT_LOOP(MI_F(u_gelu)); break;
    case MI_ACT_GELU_TANH: MI_ACT_LOOP(MI_F(u_gelu_tanh)); break;
    case MI_ACT_SIGMOID: MI_ACT_LOOP(MI_F(u_sigmoid)); break;
    case MI_ACT_SWISH: MI_ACT_LOOP(MI_F(u_swish)); break;
    case MI_ACT_HARD_SIGMOID: MI_ACT_LOOP(MI_F(u_hard_sigmoid)); break;
    case MI_ACT_HARD_SWISH: MI_ACT_LOOP(MI_F(u_hard_swish)); break;
    case MI_ACT_TANH: MI_ACT_LOOP(MI_F(u_tanh)); break;
    case MI_ACT_LEAKY_RELU: MI_ACT_LOOP(MI_F(u_leaky_relu)); break;
    default: MI_ACT_LOOP(MI_F(u_exp)); break;
    }
}
#undef MI_ACT_LOOP

/* Softmax / LogSoftmax of rows [r0, r1), each n contiguous floats: the row's maximum (one
 * read), exp(x - max) written to y and summed (a second read, from cache for rows up to
 * L2's size), then y scaled by 1 / sum in place (LogSoftmax: y = (x - max) - log(sum), as
 * onnx's reference rounds it). A NaN anywhere in a row makes the sum, and so the row, NaN.
 * onnxruntime's arithmetic, so that its results are onnxruntime's bit for bit (issue 25: an
 * ulp of a Softmax moved a dynamically quantized model's scales): exp_softmax (MLAS's exp),
 * the lanes summed in order (lane k: values k, k + MI_W, ...) and then in MLAS's order
 * (MI_HSUM_ORT), y = exp * (1 / sum). Per ISA as onnxruntime dispatches on the same CPU
 * (AVX-512F, AVX2+FMA); the plain copy, unfused, is close. */
MI_TARGET static void MI_F(softmax_rows)(const float *x, float *y, long n, long r0, long r1,
                                         int log) {
    const long full = n - n % MI_W;
    const MI_TM tail = MI_TAIL(n - full);
    for (long r = r0; r < r1; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        MI_V m = MI_SET1(-INFINITY);
        for (long j = 0; j < full; j += MI_W) m = MI_MAX(m, MI_LOADU(xr + j));
        if (full < n)
            m = MI_MAX(m, MI_TSEL(tail, MI_LOAD_TAIL(xr + full, tail), MI_SET1(-INFINITY)));
        MI_V mx = MI_SET1(MI_HMAX(m));
        MI_V s = MI_SET1(0.0f);
        if (!log) {
            for (long j = 0; j < full; j += MI_W) {
                MI_V e = MI_F(exp_softmax)(MI_LOADU(xr + j) - mx);
                MI_STOREU(yr + j, e);
                s = s + e;
            }
            if (full < n) {
                MI_V e = MI_F(exp_softmax)(MI_LOAD_TAIL(xr + full, tail) - mx);
                e = MI_TSEL(tail, e, MI_SET1(0.0f));
                MI_STORE_TAIL(yr + full, tail, e);
                s = s + e;
            }
            MI_V inv = MI_SET1(1.0f / MI_HSUM_ORT(s));
            for (long j = 0; j < full; j += MI_W) MI_STOREU(yr + j, MI_LOADU(yr + j) * inv);
            if (full < n)
                MI_STORE_TAIL(yr + full, tail, MI_LOAD_TAIL(yr + full, tail) * inv);
        } else {
            for (long j = 0; j < full; j += MI_W) s = s + MI_F(exp_softmax)(MI_LOADU(xr + j) - mx);
            if (full < n)
                s = s + MI_TSEL(tail, MI_F(exp_softmax)(MI_LOAD_TAIL(xr + full, tail) - mx),
                                MI_SET1(0.0f));
            MI_V ls = MI_SET1(logf(MI_HSUM_ORT(s)));
            for (long j = 0; j < full; j += MI_W)
                MI_STOREU(yr + j, (MI_LOADU(xr + j) - mx) - ls);
            if (full < n)
                MI_STORE_TAIL(yr + full, tail, (MI_LOAD_TAIL(xr + full, tail) - mx) - ls);
        }
    }
}

/* Softmax / LogSoftmax along the middle axis of (outer, n, inner), inner > 1: units
 * [u0, u1) of MI_W neighbouring inner positions (blocks per outer index: nblk), each
 * position's n values inner apart, one lane each: the same three steps as a row's, lane by
 * lane (the logarithms of LogSoftmax one lane at a time: one per n values). */
MI_TARGET static void MI_F(softmax_strided)(const float *x, float *y, long n, long inner,
                                            long nblk, long u0, long u1, int log) {
    for (long u = u0; u < u1; u++) {
        long o = u / nblk, i0 = (u % nblk) * MI_W;
        long rem = lmin(MI_W, inner - i0);
        const MI_TM tail = MI_TAIL(rem);
        const int whole = rem == MI_W;
        const float *xb = x + o * n * inner + i0;
        float *yb = y + o * n * inner + i0;
#define MI_SM_LOAD(p) (whole ? MI_LOADU(p) : MI_LOAD_TAIL(p, tail))
#define MI_SM_STORE(p, v)                                                                   \
    do {                                                                                    \
        if (whole) MI_STOREU(p, v);                                                         \
        else MI_STORE_TAIL(p, tail, v);                                                     \
    } while (0)
        MI_V m = MI_SET1(-INFINITY);
        for (long j = 0; j < n; j++) m = MI_MAX(m, MI_SM_LOAD(xb + j * inner));
        MI_V s = MI_SET1(0.0f);
        if (!log) {
            for (long j = 0; j < n; j++) {
                MI_V e = MI_F(exp_neg)(MI_SM_LOAD(xb + j * inner) - m);
                MI_SM_STORE(yb + j * inner, e);
                s = s + e;
            }
            MI_V inv = MI_SET1(1.0f) / s;
            for (long j = 0; j < n; j++) MI_SM_STORE(yb + j * inner, MI_SM_LOAD(yb + j * inner) * inv);
        } else {
            for (long j = 0; j < n; j++) s = s + MI_F(exp_neg)(MI_SM_LOAD(xb + j * inner) - m);
            float lanes[MI_W];
            MI_STOREU(lanes, s);
            for (int l = 0; l < MI_W; l++) lanes[l] = l < rem ? logf(lanes[l]) : 0.0f;
            MI_V ls = MI_LOADU(lanes);
            for (long j = 0; j < n; j++)
                MI_SM_STORE(yb + j * inner, (MI_SM_LOAD(xb + j * inner) - m) - ls);
        }
#undef MI_SM_LOAD
#undef MI_SM_STORE
    }
}

/* LayerNormalization of rows [r0, r1) of n: the mean (one read of the row), the variance as
 * the mean of (x - mean)^2 (the row again, from cache: no cancellation), then
 * y = (x - mean) * inv_std * scale + bias; mean and inv_std per row where asked. */
MI_TARGET static void MI_F(layer_norm_rows)(const mi_layer_norm_args *a, long r0, long r1) {
    const long n = a->n, full = n - n % MI_W;
    const MI_TM tail = MI_TAIL(n - full);
    const float *sc = a->scale, *bi = a->bias;
    for (long r = r0; r < r1; r++) {
        const float *xr = a->x + r * n;
        float *yr = a->y + r * n;
        MI_V s = MI_SET1(0.0f);
        for (long j = 0; j < full; j += MI_W) s = s + MI_LOADU(xr + j);
        if (full < n) s = s + MI_LOAD_TAIL(xr + full, tail);
        float mean = MI_HSUM(s) / (float)n;
        MI_V vm = MI_SET1(mean);
        MI_V q = MI_SET1(0.0f);
        for (long j = 0; j < full; j += MI_W) {
            MI_V d = MI_LOADU(xr + j) - vm;
            q = MI_FMA(d, d, q);
        }
        if (full < n) {
            MI_V d = MI_TSEL(tail, MI_LOAD_TAIL(xr + full, tail) - vm, MI_SET1(0.0f));
            q = MI_FMA(d, d, q);
        }
        float inv = 1.0f / sqrtf(MI_HSUM(q) / (float)n + a->epsilon);
        MI_V vi = MI_SET1(inv);
        if (bi) {
            for (long j = 0; j < full; j += MI_W)
                MI_STOREU(yr + j, MI_FMA((MI_LOADU(xr + j) - vm) * vi, MI_LOADU(sc + j),
                                         MI_LOADU(bi + j)));
            if (full < n)
                MI_STORE_TAIL(yr + full, tail,
                              MI_FMA((MI_LOAD_TAIL(xr + full, tail) - vm) * vi,
                                     MI_LOAD_TAIL(sc + full, tail),
                                     MI_LOAD_TAIL(bi + full, tail)));
        } else {
            for (long j = 0; j < full; j += MI_W)
                MI_STOREU(yr + j, (MI_LOADU(xr + j) - vm) * vi * MI_LOADU(sc + j));
            if (full < n)
                MI_STORE_TAIL(yr + full, tail,
                              (MI_LOAD_TAIL(xr + full, tail) - vm) * vi *
                                  MI_LOAD_TAIL(sc + full, tail));
        }
        if (a->mean) a->mean[r] = mean;
        if (a->inv_std) a->inv_std[r] = inv;
    }
}
