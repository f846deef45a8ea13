/* One call of every kernel family the library exports (_args.h, _pw.c), each large enough to
 * run on the pool (over its PARALLEL_MIN) and checked against plain loops in double, for the
 * sanitizers' driver (pool_stress.c runs `families` from several threads, at each ISA level).
 * The sizes are small: under ThreadSanitizer every load and store costs tens of times more. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "../../src/mini_infer_cpu_native/_blocked.h"

static float *randoms(long n, unsigned *seed, float scale) {
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (long i = 0; i < n; i++) p[i] = scale * frand(seed);
    return p;
}

static int near(double got, double want, double tol) {
    return fabs(got - want) <= tol * (1.0 + fabs(want));
}

/* the largest error of `got` against `want` (n values), relative to 1 + |want| */
static double worst_of(const float *got, const double *want, long n) {
    double worst = 0;
    for (long i = 0; i < n; i++) {
        double e = fabs(got[i] - want[i]) / (1.0 + fabs(want[i]));
        if (!(e <= worst)) worst = isnan(e) ? INFINITY : e; /* NaN: the worst */
    }
    return worst;
}

/* the functions of mi_act_f32 (MI_ACT_*), in double */
static double act_of(int op, double x, double alpha, double beta) {
    switch (op) {
    case MI_ACT_ERF: return erf(x);
    case MI_ACT_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case MI_ACT_GELU_TANH:
        return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    case MI_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case MI_ACT_SWISH: return x / (1.0 + exp(-alpha * x));
    case MI_ACT_HARD_SIGMOID: return fmax(0.0, fmin(1.0, alpha * x + beta));
    case MI_ACT_HARD_SWISH: return x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5));
    case MI_ACT_TANH: return tanh(x);
    case MI_ACT_LEAKY_RELU: return x >= 0 ? x : alpha * x;
    default: return exp(x);
    }
}

/* a convolution's epilogue activation (_epi.h: 0 none) */
static double epi_of(int act, double x, double alpha, double beta) {
    return act == 0 ? x : act_of(act, x, alpha, beta);
}

/* y = act(clamp(conv(x, w) + bias + res, lo, hi)) as a->* describes it, in double */
static double *conv_ref(const mi_dconv2d_args *a) {
    long cg = a->c / a->group, mg = a->m / a->group;
    double *want = malloc(sizeof(double) * (size_t)(a->n * a->m * a->oh * a->ow));
    for (long img = 0; img < a->n; img++)
        for (long f = 0; f < a->m; f++)
            for (long oy = 0; oy < a->oh; oy++)
                for (long ox = 0; ox < a->ow; ox++) {
                    long o = ((img * a->m + f) * a->oh + oy) * a->ow + ox;
                    double s = a->bias ? a->bias[f] : 0.0;
                    for (long ch = 0; ch < cg; ch++)
                        for (long ky = 0; ky < a->kh; ky++)
                            for (long kx = 0; kx < a->kw; kx++) {
                                long iy = oy * a->sh + ky * a->dh - a->pt;
                                long ix = ox * a->sw + kx * a->dw - a->pl;
                                if (iy < 0 || iy >= a->h || ix < 0 || ix >= a->wd) continue;
                                long xc = (f / mg) * cg + ch;
                                s += (double)a->w[((f * cg + ch) * a->kh + ky) * a->kw + kx] *
                                     a->x[((img * a->c + xc) * a->h + iy) * a->wd + ix];
                            }
                    if (a->res) s += a->res[o];
                    s = fmin(a->hi, fmax(a->lo, s));
                    want[o] = epi_of(a->act, s, a->act_alpha, a->act_beta);
                }
    return want;
}

/* mi_dconv2d_f32 (groups of 4; depthwise, dilated) and mi_pwconv2d_f32 (pointwise; a stem) */
static void convolutions(unsigned seed) {
    const struct {
        int pw;
        long n, c, m, group, h, k, s, d, p, act;
    } cases[] = {
        {0, 1, 16, 16, 4, 64, 3, 2, 1, 1, MI_ACT_SWISH},
        {0, 1, 16, 16, 16, 32, 5, 1, 2, 4, MI_ACT_HARD_SWISH},
        {1, 1, 8, 16, 1, 64, 1, 1, 1, 0, MI_ACT_SIGMOID},
        {1, 1, 3, 16, 1, 128, 3, 2, 1, 1, MI_ACT_HARD_SIGMOID},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        long n = cases[t].n, c = cases[t].c, m = cases[t].m, h = cases[t].h, k = cases[t].k;
        long o = (h + 2 * cases[t].p - cases[t].d * (k - 1) - 1) / cases[t].s + 1;
        mi_dconv2d_args a = {.n = n, .c = c, .h = h, .wd = h, .m = m, .group = cases[t].group,
                             .kh = k, .kw = k, .sh = cases[t].s, .sw = cases[t].s,
                             .dh = cases[t].d, .dw = cases[t].d, .pt = cases[t].p,
                             .pl = cases[t].p, .oh = o, .ow = o, .lo = -1.5f, .hi = 1.5f,
                             .act = (int)cases[t].act, .act_alpha = 0.2f, .act_beta = 0.5f};
        long outs = n * m * o * o;
        float *x = randoms(n * c * h * h, &seed, 2.0f);
        float *w = randoms(m * (c / a.group) * k * k, &seed, 1.0f);
        float *bias = randoms(m, &seed, 1.0f), *res = randoms(outs, &seed, 1.0f);
        float *y = malloc(sizeof(float) * (size_t)outs);
        a.x = x, a.w = w, a.bias = bias, a.res = res, a.y = y;
        long floats = cases[t].pw ? mi_pwconv2d_work(&a) : mi_dconv2d_work(&a);
        CHECK(floats >= 0, "conv case %zu: no work size", t);
        float *work = malloc(sizeof(float) * (size_t)(floats > 0 ? floats : 1));
        a.work = work;
        int rc = cases[t].pw ? mi_pwconv2d_f32(&a) : mi_dconv2d_f32(&a);
        CHECK(rc == MI_OK, "conv case %zu refused", t);
        double *want = conv_ref(&a);
        double worst = worst_of(y, want, outs);
        CHECK(worst < 1e-4, "conv case %zu (%s) off by %g", t, cases[t].pw ? "pw" : "dconv",
              worst);
        free(x), free(w), free(bias), free(res), free(y), free(work), free(want);
    }
}

/* Winograd F(2x2, 3x3) and F(4x4, 3x3): weights, input tiles, the 16 or 36 products on
 * mi_gemm_batch_f32 (each U_k packed by mi_gemm_pack_f32), output tiles with the epilogue */
static void winograd(unsigned seed) {
    enum { C = 8, M = 8, H = 16 };
    for (int tile = 2; tile <= 4; tile += 2) {
        long k = (tile + 2) * (tile + 2), th = (H + tile - 1) / tile, tw = th, tiles = th * tw;
        float *x = randoms(C * H * H, &seed, 2.0f), *w = randoms(M * C * 9, &seed, 1.0f);
        float *bias = randoms(M, &seed, 1.0f), *res = randoms(M * H * H, &seed, 1.0f);
        float *u = malloc(sizeof(float) * (size_t)(k * M * C));
        float *up = malloc(sizeof(float) * (size_t)(k * M * C));
        float *v = malloc(sizeof(float) * (size_t)(k * C * tiles));
        float *mm = malloc(sizeof(float) * (size_t)(k * M * tiles));
        float *y = malloc(sizeof(float) * M * H * H);
        float *rows_in = malloc(sizeof(float) * (size_t)(2 * (tile + 2) * (tile * tw + 2)));
        float *rows_out = malloc(sizeof(float) * (size_t)(tile * tile * tw));
        mi_wino_weights_args wa = {w, u, M, C, tile};
        CHECK(mi_wino_weights_f32(&wa) == MI_OK, "wino_weights refused");
        for (long q = 0; q < k; q++) {
            mi_gemm_pack_args pack = {u + q * M * C, up + q * M * C, M, C, C};
            CHECK(mi_gemm_pack_f32(&pack) == MI_OK, "pack refused");
        }
        mi_wino_in_args in = {x, v, rows_in, C, H, H, 1, 1, tw, 0, th, tile};
        CHECK(mi_wino_in_f32(&in) == MI_OK, "wino_in refused");
        mi_gemm_batch_args gb = {up, v, mm, k, M * C, C * tiles, M * tiles, tiles, tiles,
                                 M, tiles, C};
        CHECK(mi_gemm_batch_f32(&gb) == MI_OK, "gemm_batch refused");
        mi_wino_out_args out = {mm, y, bias, res, rows_out, M, H, H, tw, 0, th, -2.0f, 2.0f,
                                tile, MI_ACT_SWISH, 1.0f, 0.0f};
        CHECK(mi_wino_out_f32(&out) == MI_OK, "wino_out refused");
        mi_dconv2d_args ref = {.x = x, .w = w, .bias = bias, .res = res, .n = 1, .c = C,
                               .h = H, .wd = H, .m = M, .group = 1, .kh = 3, .kw = 3, .sh = 1,
                               .sw = 1, .dh = 1, .dw = 1, .pt = 1, .pl = 1, .oh = H, .ow = H,
                               .lo = -2.0f, .hi = 2.0f, .act = MI_ACT_SWISH, .act_alpha = 1.0f};
        double *want = conv_ref(&ref);
        double worst = worst_of(y, want, M * H * H);
        CHECK(worst < 1e-4, "winograd F(%dx%d) off by %g", tile, tile, worst);
        free(x), free(w), free(bias), free(res), free(u), free(up), free(v), free(mm), free(y);
        free(rows_in), free(rows_out), free(want);
    }
}

/* im2col of dilated, padded rows [4, 44) of 8 planes */
static void im2col(unsigned seed) {
    enum { C = 8, H = 48, K = 3, OY0 = 4, OY1 = 44 };
    float *x = randoms(C * H * H, &seed, 1.0f);
    long rows = OY1 - OY0, size = (long)C * K * K * rows * H;
    float *cols = malloc(sizeof(float) * (size_t)size);
    mi_im2col_args a = {x, cols, 1, C, H, H, K, K, 1, 1, 2, 2, 2, 2, OY0, OY1, H};
    CHECK(mi_im2col_f32(&a) == MI_OK, "im2col refused");
    long wrong = 0;
    for (long ch = 0; ch < C; ch++)
        for (long ky = 0; ky < K; ky++)
            for (long kx = 0; kx < K; kx++)
                for (long oy = OY0; oy < OY1; oy++)
                    for (long ox = 0; ox < H; ox++) {
                        long iy = oy + 2 * ky - 2, ix = ox + 2 * kx - 2;
                        float want = iy < 0 || iy >= H || ix < 0 || ix >= H
                                         ? 0.0f : x[(ch * H + iy) * H + ix];
                        wrong += cols[(((ch * K + ky) * K + kx) * rows + oy - OY0) * H + ox] !=
                                 want;
                    }
    CHECK(wrong == 0, "im2col: %ld values wrong", wrong);
    free(x), free(cols);
}

/* ConvTranspose's tap placement, kernel 2 (its own loop) and 3 */
static void taps2d(unsigned seed) {
    for (long k = 2; k <= 3; k++) {
        long planes = k == 2 ? 8 : 4, h = k == 2 ? 32 : 24, size = planes * k * k * h * h;
        float *taps = randoms(size, &seed, 1.0f), *y = malloc(sizeof(float) * (size_t)size);
        mi_taps2d_args a = {taps, y, planes, k, k, h, h};
        CHECK(mi_taps2d_f32(&a) == MI_OK, "taps2d refused");
        long wrong = 0;
        for (long p = 0; p < planes; p++)
            for (long ty = 0; ty < k; ty++)
                for (long tx = 0; tx < k; tx++)
                    for (long i = 0; i < h; i++)
                        for (long j = 0; j < h; j++)
                            wrong += y[(p * h * k + i * k + ty) * h * k + j * k + tx] !=
                                     taps[(((p * k + ty) * k + tx) * h + i) * h + j];
        CHECK(wrong == 0, "taps2d %ldx%ld: %ld values wrong", k, k, wrong);
        free(taps), free(y);
    }
}

/* LRN across 8 channels of 32x32, beta 0.75 and 0.5 (square roots) and 0.6 (powf) */
static void lrn(unsigned seed) {
    enum { N = 2, C = 8, P = 1024, SIZE = 5 };
    const float betas[] = {0.75f, 0.5f, 0.6f};
    float *x = randoms(N * C * P, &seed, 2.0f), *y = malloc(sizeof(float) * N * C * P);
    float *acc = malloc(sizeof(float) * P);
    double *want = malloc(sizeof(double) * N * C * P);
    for (int b = 0; b < 3; b++) {
        mi_lrn_args a = {x, y, acc, N, C, P, SIZE, 1e-2f, betas[b], 1.0f};
        CHECK(mi_lrn_f32(&a) == MI_OK, "lrn refused");
        for (long img = 0; img < N; img++)
            for (long ch = 0; ch < C; ch++)
                for (long p = 0; p < P; p++) {
                    double s = 0;
                    for (long q = ch - (SIZE - 1) / 2; q <= ch + SIZE / 2; q++)
                        if (q >= 0 && q < C) {
                            double v = x[(img * C + q) * P + p];
                            s += v * v;
                        }
                    long i = (img * C + ch) * P + p;
                    want[i] = x[i] * pow(1.0 + 1e-2 / SIZE * s, -(double)betas[b]);
                }
        double worst = worst_of(y, want, N * C * P);
        CHECK(worst < 1e-5, "lrn beta %g off by %g", betas[b], worst);
    }
    free(x), free(y), free(acc), free(want);
}

/* BatchNormalization's scale and shift, and the GEMM epilogue's bias + residual + clamp */
static void epilogues(unsigned seed) {
    enum { N = 2, C = 8, P = 1024, ROWS = 64, COLS = 300, LDY = 310, LDR = 305, PERIOD = 16 };
    float *x = randoms(N * C * P, &seed, 4.0f), *y = malloc(sizeof(float) * N * C * P);
    float *sa = randoms(C, &seed, 2.0f), *sb = randoms(C, &seed, 2.0f);
    mi_scale_shift_args ss = {x, sa, sb, y, N, C, P, -1.0f, 1.0f};
    CHECK(mi_scale_shift_f32(&ss) == MI_OK, "scale_shift refused");
    long wrong = 0;
    for (long i = 0; i < N * C * P; i++) {
        float v = x[i] * sa[(i / P) % C] + sb[(i / P) % C];
        wrong += y[i] != fminf(1.0f, fmaxf(-1.0f, v));
    }
    CHECK(wrong == 0, "scale_shift: %ld values wrong", wrong);

    float *z = randoms(ROWS * LDY, &seed, 4.0f), *z0 = malloc(sizeof(float) * ROWS * LDY);
    float *bias = randoms(PERIOD, &seed, 1.0f), *res = randoms(ROWS * LDR, &seed, 1.0f);
    memcpy(z0, z, sizeof(float) * ROWS * LDY);
    mi_bias_act_args ba = {z, bias, res, ROWS, COLS, LDY, PERIOD, LDR, -1.0f, 1.0f};
    CHECK(mi_bias_act_f32(&ba) == MI_OK, "bias_act refused");
    wrong = 0;
    for (long i = 0; i < ROWS; i++)
        for (long j = 0; j < LDY; j++) {
            float v = z0[i * LDY + j];
            if (j < COLS) v = fminf(1.0f, fmaxf(-1.0f, v + bias[i % PERIOD] + res[i * LDR + j]));
            wrong += z[i * LDY + j] != v; /* the gap between rows untouched */
        }
    CHECK(wrong == 0, "bias_act: %ld values wrong", wrong);
    free(x), free(y), free(sa), free(sb), free(z), free(z0), free(bias), free(res);
}

/* average pooling 3x3 stride 2 with padding that the divisor leaves out */
static void average_pool(unsigned seed) {
    enum { P = 32, H = 40, K = 3, O = 20 };
    float *x = randoms(P * H * H, &seed, 1.0f), *y = malloc(sizeof(float) * P * O * O);
    float *work = malloc(sizeof(float) * (2 * H * H + 2 * O));
    mi_pool2d_args a = {x, y, work, P, H, H, K, K, 2, 2, 1, 1, 1, 1, 1, 1, O, O, 1, 0};
    CHECK(mi_pool2d_f32(&a) == MI_OK, "average pool refused");
    double *want = malloc(sizeof(double) * P * O * O);
    for (long p = 0; p < P; p++)
        for (long r = 0; r < O; r++)
            for (long o = 0; o < O; o++) {
                double s = 0;
                int cnt = 0;
                for (long i = 2 * r - 1; i < 2 * r + 2; i++)
                    for (long j = 2 * o - 1; j < 2 * o + 2; j++)
                        if (i >= 0 && i < H && j >= 0 && j < H) {
                            s += x[(p * H + i) * H + j];
                            cnt++;
                        }
                want[(p * O + r) * O + o] = s / cnt;
            }
    double worst = worst_of(y, want, P * O * O);
    CHECK(worst < 1e-5, "average pool off by %g", worst);
    free(x), free(y), free(work), free(want);
}

/* Resize 32x32 -> 48x40 of 16 planes, two taps and a weight per output row and column */
static void resize(unsigned seed) {
    enum { P = 16, H = 32, OH = 48, OW = 40 };
    float *x = randoms(P * H * H, &seed, 1.0f), *y = malloc(sizeof(float) * P * OH * OW);
    long iy[2 * OH], ix[2 * OW];
    float wy[OH], wx[OW], work[2 * OW];
    for (long o = 0; o < OH; o++) {
        double s = fmax(0.0, (o + 0.5) * H / OH - 0.5);
        iy[2 * o] = (long)s, iy[2 * o + 1] = s + 1 < H ? (long)s + 1 : H - 1;
        wy[o] = o % 5 == 0 ? 0.0f : (float)(s - (long)s); /* 0: one tap (its own path) */
    }
    for (long o = 0; o < OW; o++) {
        double s = fmax(0.0, (o + 0.5) * H / OW - 0.5);
        ix[2 * o] = (long)s, ix[2 * o + 1] = s + 1 < H ? (long)s + 1 : H - 1;
        wx[o] = (float)(s - (long)s);
    }
    mi_resize2d_args a = {x, y, iy, wy, ix, wx, work, P, H, H, OH, OW};
    CHECK(mi_resize2d_f32(&a) == MI_OK, "resize refused");
    double *want = malloc(sizeof(double) * P * OH * OW);
    for (long p = 0; p < P; p++)
        for (long r = 0; r < OH; r++)
            for (long o = 0; o < OW; o++) {
                const float *pl = x + p * H * H;
                double t[2];
                for (int q = 0; q < 2; q++) {
                    double a0 = pl[iy[2 * r + q] * H + ix[2 * o]];
                    double b0 = pl[iy[2 * r + q] * H + ix[2 * o + 1]];
                    t[q] = a0 + wx[o] * (b0 - a0);
                }
                want[(p * OH + r) * OW + o] = t[0] + wy[r] * (t[1] - t[0]);
            }
    double worst = worst_of(y, want, P * OH * OW);
    CHECK(worst < 1e-5, "resize off by %g", worst);
    free(x), free(y), free(want);
}

/* every elementwise function, one of them in place; Softmax and LogSoftmax over rows and
 * over a strided axis; LayerNormalization with its mean and 1 / std */
static void activations(unsigned seed) {
    enum { N = 20000 };
    float *x = randoms(N, &seed, 8.0f), *y = malloc(sizeof(float) * N);
    double *want = malloc(sizeof(double) * N);
    for (int op = 0; op < MI_ACT_COUNT; op++) {
        mi_act_args a = {x, y, N, 0.3f, 0.4f, op};
        CHECK(mi_act_f32(&a) == MI_OK, "act %d refused", op);
        for (long i = 0; i < N; i++) want[i] = act_of(op, x[i], 0.3f, 0.4f);
        double worst = worst_of(y, want, N);
        CHECK(worst < 1e-5, "act %d off by %g", op, worst);
    }
    memcpy(y, x, sizeof(float) * N);
    mi_act_args inplace = {y, y, N, 0.0f, 0.0f, MI_ACT_TANH};
    CHECK(mi_act_f32(&inplace) == MI_OK, "tanh in place refused");
    for (long i = 0; i < N; i++) want[i] = tanh(x[i]);
    CHECK(worst_of(y, want, N) < 1e-5, "tanh in place off");

    const long shapes[2][3] = {{64, 300, 1}, {4, 20, 250}};
    for (int s = 0; s < 2; s++)
        for (int log = 0; log <= 1; log++) {
            long outer = shapes[s][0], n = shapes[s][1], inner = shapes[s][2];
            mi_softmax_args a = {x, y, outer, n, inner, log};
            CHECK(mi_softmax_f32(&a) == MI_OK, "softmax refused");
            for (long o = 0; o < outer; o++)
                for (long i = 0; i < inner; i++) {
                    const float *xs = x + o * n * inner + i;
                    double top = -INFINITY, sum = 0;
                    for (long q = 0; q < n; q++) top = fmax(top, xs[q * inner]);
                    for (long q = 0; q < n; q++) sum += exp(xs[q * inner] - top);
                    for (long q = 0; q < n; q++) {
                        double d = xs[q * inner] - top;
                        want[o * n * inner + q * inner + i] = log ? d - log1p(sum - 1.0)
                                                                  : exp(d) / sum;
                    }
                }
            double worst = worst_of(y, want, outer * n * inner);
            CHECK(worst < 1e-5, "softmax (%ld, %ld, %ld) log %d off by %g", outer, n, inner, log,
                  worst);
        }

    enum { ROWS = 64, COLS = 300 };
    float *scale = randoms(COLS, &seed, 2.0f), *bias = randoms(COLS, &seed, 1.0f);
    float mean[ROWS], inv_std[ROWS];
    mi_layer_norm_args ln = {x, scale, bias, y, mean, inv_std, ROWS, COLS, 1e-5f};
    CHECK(mi_layer_norm_f32(&ln) == MI_OK, "layer_norm refused");
    long wrong = 0;
    for (long r = 0; r < ROWS; r++) {
        double mu = 0, var = 0;
        for (long i = 0; i < COLS; i++) mu += x[r * COLS + i];
        mu /= COLS;
        for (long i = 0; i < COLS; i++) var += (x[r * COLS + i] - mu) * (x[r * COLS + i] - mu);
        double inv = 1.0 / sqrt(var / COLS + 1e-5);
        wrong += !near(mean[r], mu, 1e-5) || !near(inv_std[r], inv, 1e-5);
        for (long i = 0; i < COLS; i++)
            want[r * COLS + i] = (x[r * COLS + i] - mu) * inv * scale[i] + bias[i];
    }
    CHECK(wrong == 0, "layer_norm: %ld means or deviations off", wrong);
    double worst = worst_of(y, want, ROWS * COLS);
    CHECK(worst < 1e-5, "layer_norm off by %g", worst);
    free(x), free(y), free(want), free(scale), free(bias);
}

/* a few rows times B (packed in panels of 48, and as it is), squeeze-and-excitation's row
 * mean and row scale, and a GEMM with its epilogue and a matmul on panels of 24 */
static void products(unsigned seed) {
    enum { M = 3, K = 256, N = 200 };
    float *a = randoms(M * K, &seed, 1.0f), *b = randoms(K * N, &seed, 1.0f);
    float *bp = malloc(sizeof(float) * K * N), *c = malloc(sizeof(float) * M * N);
    float *bias = randoms(M, &seed, 1.0f), *cbias = randoms(N, &seed, 1.0f);
    float *res = randoms(M * N, &seed, 1.0f);
    double *want = malloc(sizeof(double) * M * N);
    mi_gemm_pack_b_args pack = {b, bp, K, N, N, 1};
    CHECK(mi_gemm_pack_b_f32(&pack) == MI_OK, "pack_b refused");
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++) {
            double s = 0;
            for (long kk = 0; kk < K; kk++) s += (double)a[i * K + kk] * b[kk * N + j];
            s = 0.5 * s + bias[i] + cbias[j] + res[i * N + j];
            want[i * N + j] = fmin(3.0, fmax(-3.0, s));
        }
    for (int packed = 0; packed <= 1; packed++) {
        mi_gemv_args g = {a, packed ? bp : b, c, bias, cbias, res, M, N, K, K, 1, N, N, N,
                          packed ? 48 : 0, 0.5f, -3.0f, 3.0f};
        CHECK(mi_gemv_f32(&g) == MI_OK, "gemv refused");
        double worst = worst_of(c, want, M * N);
        CHECK(worst < 1e-5, "gemv (panel %d) off by %g", packed ? 48 : 0, worst);
    }

    /* B (k x n) on panels of 24 columns, each packed as a matrix of its own (b_packed 2),
     * shared by 2 products (b_s1 0), A packed */
    enum { Q = 2, MM = 30 };
    float *aq = randoms(Q * MM * K, &seed, 1.0f), *ap = malloc(sizeof(float) * Q * MM * K);
    float *cq = malloc(sizeof(float) * Q * MM * N);
    for (long j0 = 0; j0 < N; j0 += 24) {
        mi_gemm_pack_b_args p24 = {b + j0, bp + j0 * K, K, N - j0 < 24 ? N - j0 : 24, N, 1};
        CHECK(mi_gemm_pack_b_f32(&p24) == MI_OK, "pack_b refused");
    }
    for (long q = 0; q < Q; q++) {
        mi_gemm_pack_args pa = {aq + q * MM * K, ap + q * MM * K, MM, K, K};
        CHECK(mi_gemm_pack_f32(&pa) == MI_OK, "pack refused");
    }
    mi_matmul_args mm = {.a = ap, .b = bp, .c = cq, .m = MM, .n = N, .k = K, .ldc = N,
                         .batch0 = 1, .batch1 = Q, .a_s1 = MM * K, .c_s1 = MM * N,
                         .a_packed = 1, .b_packed = 2, .alpha = 1.0f, .lo = -INFINITY,
                         .hi = INFINITY};
    CHECK(mi_matmul_f32(&mm) == MI_OK, "matmul refused");
    double *wq = malloc(sizeof(double) * Q * MM * N);
    for (long q = 0; q < Q; q++)
        for (long i = 0; i < MM; i++)
            for (long j = 0; j < N; j++) {
                double s = 0;
                for (long kk = 0; kk < K; kk++)
                    s += (double)aq[(q * MM + i) * K + kk] * b[kk * N + j];
                wq[(q * MM + i) * N + j] = s;
            }
    double worst = worst_of(cq, wq, Q * MM * N);
    CHECK(worst < 1e-4, "matmul (panels of 24) off by %g", worst);

    /* C = hard_swish(clamp(A . B + bias + one row of residual, -2, 2)) on the GEMM */
    float *rrow = randoms(N, &seed, 1.0f), *gbias = randoms(MM, &seed, 1.0f);
    mi_gemm_args ge = {ap, b, cq, gbias, rrow, MM, N, K, N, N, 0, -2.0f, 2.0f,
                       MI_ACT_HARD_SWISH, 0.0f, 0.0f};
    CHECK(mi_gemm_f32(&ge) == MI_OK, "gemm refused");
    for (long i = 0; i < MM; i++)
        for (long j = 0; j < N; j++) {
            double s = wq[i * N + j] + gbias[i] + rrow[j];
            wq[i * N + j] = epi_of(MI_ACT_HARD_SWISH, fmin(2.0, fmax(-2.0, s)), 0, 0);
        }
    worst = worst_of(cq, wq, MM * N);
    CHECK(worst < 1e-4, "gemm with its epilogue off by %g", worst);

    enum { R = 64, L = 1100 };
    float *x = randoms(R * L, &seed, 1.0f), *s = randoms(R, &seed, 2.0f);
    float *y = malloc(sizeof(float) * R * L), *means = malloc(sizeof(float) * R);
    mi_rows_args rm = {x, NULL, means, R, L};
    CHECK(mi_row_mean_f32(&rm) == MI_OK, "row_mean refused");
    mi_rows_args rs = {x, s, y, R, L};
    CHECK(mi_row_scale_f32(&rs) == MI_OK, "row_scale refused");
    long wrong = 0;
    for (long r = 0; r < R; r++) {
        double sum = 0;
        for (long i = 0; i < L; i++) {
            sum += x[r * L + i];
            wrong += y[r * L + i] != x[r * L + i] * s[r];
        }
        wrong += !near(means[r], sum / L, 1e-5);
    }
    CHECK(wrong == 0, "row_mean / row_scale: %ld values wrong", wrong);
    /* mi_planes_f32: (N=2, C=3, T=5) planes of 7 gathered as (N, OT=5, KT=3, C) with the
     * frames t - 1 + k (zeros past the ends), against the plain loops */
    enum { PN = 2, PC = 3, PT = 5, PK = 3, PL = 7 };
    float *px = randoms(PN * PC * PT * PL, &seed, 1.0f);
    float *pg = malloc(sizeof(float) * PN * PT * PK * PC * PL);
    mi_planes_args pa = {px, pg, PN, PT, PK, PC, PC * PT, 1, 1, PT, 1, PT, PL, PN * PC * PT};
    CHECK(mi_planes_f32(&pa) == MI_OK, "planes refused");
    for (long n = 0; n < PN; n++)
        for (long t = 0; t < PT; t++)
            for (long k = 0; k < PK; k++)
                for (long ch = 0; ch < PC; ch++)
                    for (long i = 0; i < PL; i++) {
                        const long f = t - 1 + k;
                        const float want1 = f < 0 || f >= PT ? 0.0f
                                                             : px[((n * PC + ch) * PT + f) * PL + i];
                        wrong += pg[(((n * PT + t) * PK + k) * PC + ch) * PL + i] != want1;
                    }
    pa.src_planes -= 1; /* one plane short of the largest index read: refused */
    CHECK(mi_planes_f32(&pa) == MI_EARGS, "planes took a source too small");
    CHECK(wrong == 0, "planes: %ld values wrong", wrong);
    free(px), free(pg);
    free(a), free(b), free(bp), free(c), free(bias), free(cbias), free(res), free(want);
    free(aq), free(ap), free(cq), free(wq), free(rrow), free(gbias), free(x), free(s), free(y);
    free(means);
}

/* the layout table _abi.py reads */
/* the integer GEMM (u8 x s8, int32 sums: exact) and DynamicQuantizeLinear (_qgemm.c) */
static void integer_products(unsigned seed) {
    enum { M = 21, K = 37, N = 35 };
    unsigned char a[M * K];
    signed char b[K * N], bp[K * N];
    int colsum[N], c[M * N], zb = 3, za = 7;
    for (long i = 0; i < M * K; i++) a[i] = (unsigned char)(256.0f * (frand(&seed) + 0.5f));
    for (long i = 0; i < K * N; i++) b[i] = (signed char)(255.0f * frand(&seed));
    mi_qpack_b_args pk = {b, bp, K, N, N, 1, 0};
    CHECK(mi_qpack_b_i8(&pk) == 0, "qpack_b failed");
    mi_qcolsum_args cs = {bp, colsum, K, N};
    CHECK(mi_qcolsum_i8(&cs) == 0, "qcolsum failed");
    mi_qgemm_args g = {0};
    g.a = a, g.bp = bp, g.colsum = colsum, g.c = c, g.zb = &zb;
    g.m = M, g.n = N, g.k = K, g.lda = K, g.ldc = N, g.za = za;
    g.out = MI_Q_INT32;
    CHECK(mi_qgemm_i8(&g) == 0, "qgemm failed");
    long bad = 0;
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++) {
            long want = 0;
            for (long kk = 0; kk < K; kk++) want += (long)(a[i * K + kk] - za) * (b[kk * N + j] - zb);
            bad += c[i * N + j] != want;
        }
    CHECK(bad == 0, "qgemm: %ld sums differ from the plain loops", bad);
    enum { L = 3000 };
    float *x = randoms(L, &seed, 6.0f), scale = 0;
    unsigned char y[L], zp = 0;
    mi_dql_args d = {x, y, &scale, &zp, L};
    CHECK(mi_dql_f32(&d) == 0, "dql failed");
    long off = 0;
    for (long i = 0; i < L; i++) off += fabs(((double)y[i] - zp) * scale - x[i]) > scale;
    CHECK(scale > 0 && off == 0, "dql: %ld values off by more than one step", off);
    /* QLinearConv's requantization (_qconv.c): round half to even, saturate, per channel */
    enum { C = 3, HW = 500 };
    float mult[C] = {0.5f, 1.0f, 0.25f};
    unsigned char q[C * HW];
    mi_qrequant_args rq = {x, q, mult, 1, C, HW, 1, 0, 100};
    CHECK(mi_qrequant_f32(&rq) == 0, "qrequant failed");
    long wrong = 0;
    for (long ch = 0; ch < C; ch++)
        for (long p = 0; p < HW; p++) {
            double v = nearbyint((double)x[ch * HW + p] * mult[ch]) + 100; /* exact: powers of 2 */
            v = v < 0 ? 0 : v > 255 ? 255 : v;
            wrong += q[ch * HW + p] != (unsigned char)v;
        }
    CHECK(wrong == 0, "qrequant: %ld values differ from rint and saturation", wrong);
    free(x);
}

/* recurrent layers (_rnn.c): a reversed LSTM with peepholes, clip, sequence lengths and
 * initial states against plain double loops (batch 1: the matrix-vector kernel; 3: the GEMM),
 * then GRU (linear_before_reset 0 and 1) and RNN (Relu) on the same buffers, finite */
static double rnn_clip(double v) { return fmin(1.5, fmax(-1.5, v)); }
static double rnn_sig(double v) { return 1.0 / (1.0 + exp(-v)); }

static void recurrent(unsigned seed) {
    enum { T = 3, I = 7, H = 13, G = 4 * H };
    for (long bsz = 1; bsz <= 3; bsz += 2) {
        const long B = bsz;
        float *x = randoms(T * B * I, &seed, 4.0f), *w = randoms(G * I, &seed, 1.0f);
        float *r = randoms(G * H, &seed, 1.0f), *bias = randoms(G, &seed, 1.0f);
        float *peep = randoms(3 * H, &seed, 1.0f), *h0 = randoms(B * H, &seed, 1.0f);
        float *c0 = randoms(B * H, &seed, 1.0f);
        float *wp = malloc(sizeof(float) * G * I), *rp = malloc(sizeof(float) * G * H);
        float *y = malloc(sizeof(float) * T * B * H), *yh = malloc(sizeof(float) * B * H);
        float *yc = malloc(sizeof(float) * B * H);
        float *work = malloc(sizeof(float) * (T * B * G + B * G + 3 * B * H));
        mi_gemm_pack_b_args pw = {w, wp, I, G, 1, I}, pr = {r, rp, H, G, 1, H};
        CHECK(mi_gemm_pack_b_f32(&pw) == MI_OK && mi_gemm_pack_b_f32(&pr) == MI_OK,
              "rnn: pack_b refused");
        const int lens[3] = {3, 1, 2};
        mi_rnn_args a = {.x = x, .w = wp, .r = rp, .bias = bias, .peep = peep, .lens = lens,
                         .h0 = h0, .c0 = c0, .y = y, .yh = yh, .yc = yc, .work = work, .t = T,
                         .b = B, .i = I, .h = H, .x_ts = B * I, .x_bs = I, .y_ts = B * H,
                         .y_bs = H, .st_bs = H, .panel = 48, .kind = MI_LSTM, .reverse = 1,
                         .clip = 1.5f};
        CHECK(mi_rnn_f32(&a) == MI_OK, "rnn refused");
        double hs[3 * H], cs[3 * H], worst = 0;
        for (long k = 0; k < B * H; k++) hs[k] = h0[k], cs[k] = c0[k];
        for (long s = 0; s < T; s++) {
            const long t = T - 1 - s;
            for (long b = 0; b < B; b++) {
                if (t >= lens[b]) {
                    for (long j = 0; j < H; j++) worst = fmax(worst, fabs(y[(t * B + b) * H + j]));
                    continue;
                }
                double g[G], hn[H];
                for (long k = 0; k < G; k++) {
                    double v = bias[k];
                    for (long i = 0; i < I; i++) v += (double)x[(t * B + b) * I + i] * w[k * I + i];
                    for (long i = 0; i < H; i++) v += hs[b * H + i] * r[k * H + i];
                    g[k] = v;
                }
                for (long j = 0; j < H; j++) {
                    double c = cs[b * H + j];
                    double ig = rnn_sig(rnn_clip(g[j] + peep[j] * c));
                    double fg = rnn_sig(rnn_clip(g[2 * H + j] + peep[2 * H + j] * c));
                    double cn = fg * c + ig * tanh(rnn_clip(g[3 * H + j]));
                    double og = rnn_sig(rnn_clip(g[H + j] + peep[H + j] * cn));
                    cs[b * H + j] = cn;
                    hn[j] = og * tanh(cn);
                }
                for (long j = 0; j < H; j++) {
                    hs[b * H + j] = hn[j];
                    worst = fmax(worst, fabs(y[(t * B + b) * H + j] - hn[j]));
                }
            }
        }
        for (long k = 0; k < B * H; k++)
            worst = fmax(worst, fmax(fabs(yh[k] - hs[k]), fabs(yc[k] - cs[k])));
        CHECK(worst < 1e-4, "rnn: LSTM (batch %ld) off by %g", B, worst);
        /* GRU (R^T's z r columns, then its h ones, each packed) and RNN on the same data */
        mi_gemm_pack_b_args pzr = {r, rp, H, 2 * H, 1, H}, ph = {r + 2 * H * H, rp + 2 * H * H,
                                                                  H, H, 1, H};
        CHECK(mi_gemm_pack_b_f32(&pzr) == MI_OK && mi_gemm_pack_b_f32(&ph) == MI_OK,
              "rnn: pack_b refused");
        for (int kind = 0; kind < 3; kind++) {
            mi_rnn_args o = a;
            o.kind = kind == 2 ? MI_RNN : MI_GRU;
            o.linear_before_reset = kind == 1;
            o.rbh = kind == 1 ? bias : NULL;
            o.relu = kind == 2;
            o.peep = NULL;
            o.yc = NULL;
            o.reverse = 0;
            CHECK(mi_rnn_f32(&o) == MI_OK, "rnn refused (kind %d)", kind);
            long bad = 0;
            for (long k = 0; k < T * B * H; k++) bad += !isfinite(y[k]);
            CHECK(bad == 0, "rnn: %ld values not finite (kind %d)", bad, kind);
        }
        free(x), free(w), free(r), free(bias), free(peep), free(h0), free(c0), free(wp);
        free(rp), free(y), free(yh), free(yc), free(work);
    }
}

int mi_qgemm_set_isa(int level);

/* a depthwise NHWC convolution (mi_qdwconv_i8) of C channels, K x K taps, stride S, pads P over
 * an H x W image (heap buffers of their exact sizes), against the plain loops, at each ISA
 * level (capped as the integer GEMM's) */
static void qdw_case(unsigned *seed, long C, long H, long W, long K, long S, long P) {
    const long OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
    unsigned char *dx = malloc((size_t)(H * W * C)), *dy = malloc((size_t)(OH * OW * C));
    short *dwt = malloc(sizeof(short) * (size_t)(K * K * C));
    int *dbias = malloc(sizeof(int) * (size_t)C);
    float dmult[1] = {0.25f};
    CHECK(dx && dy && dwt && dbias, "qdwconv: no memory");
    for (long i = 0; i < H * W * C; i++) dx[i] = (unsigned char)(256.0f * (frand(seed) + 0.5f));
    for (long i = 0; i < K * K * C; i++) dwt[i] = (short)(255.0f * frand(seed));
    for (long i = 0; i < C; i++) dbias[i] = (int)(200.0f * frand(seed));
    mi_qdwconv_args dv = {dx, dwt, dbias, dmult, dy, 1, H, W, C, K, K, S, S, 1, 1, P, P, OH, OW,
                          0, 7, 11, 0, 0};
    const int levels[3] = {0, 1, 3};
    for (int l = 0; l < 3; l++) {
        int used = mi_qgemm_set_isa(levels[l]);
        memset(dy, 0, (size_t)(OH * OW * C));
        CHECK(mi_qdwconv_i8(&dv) == 0, "qdwconv (level %d) failed", used);
        long wrong = 0;
        for (long oy = 0; oy < OH; oy++)
            for (long ox = 0; ox < OW; ox++)
                for (long ch = 0; ch < C; ch++) {
                    long acc = dbias[ch];
                    for (long ty = 0; ty < K; ty++)
                        for (long tx = 0; tx < K; tx++) {
                            long iy = oy * S - P + ty, ix = ox * S - P + tx;
                            if (iy >= 0 && iy < H && ix >= 0 && ix < W)
                                acc += ((long)dx[(iy * W + ix) * C + ch] - 7) * dwt[(ty * K + tx) * C + ch];
                        }
                    double t = nearbyint((double)acc * 0.25) + 11; /* exact: a power of 2 */
                    t = t < 0 ? 0 : t > 255 ? 255 : t;
                    wrong += dy[(oy * OW + ox) * C + ch] != (unsigned char)t;
                }
        CHECK(wrong == 0, "qdwconv (level %d): %ld values differ from the plain loops", used, wrong);
    }
    mi_qgemm_set_isa(-1);
    free(dx), free(dy), free(dwt), free(dbias);
}

/* a grouped NHWC convolution (mi_qdwconv_i8 with cg: G inputs and outputs a group) of C
 * channels, K x K taps, stride 1, pads P, over an H x W int8 image, its weights in the kernel's
 * quads, against the plain loops at each ISA level */
static void qg_case(unsigned *seed, long C, long G, long H, long W, long K, long P) {
    const long OH = H + 2 * P - K + 1, OW = W + 2 * P - K + 1, T = K * K, NV = (C + 15) / 16;
    signed char *gx = malloc((size_t)(H * W * C)), *wq = calloc((size_t)(T * NV * 16 * G), 1);
    signed char *gw = malloc((size_t)(C * G * T));
    unsigned char *gy = malloc((size_t)(OH * OW * C));
    int *gb = malloc(sizeof(int) * (size_t)C);
    float gm[1] = {0.25f};
    CHECK(gx && wq && gw && gy && gb, "qgconv: no memory");
    for (long i = 0; i < H * W * C; i++) gx[i] = (signed char)(255.0f * frand(seed));
    for (long i = 0; i < C * G * T; i++) gw[i] = (signed char)(255.0f * frand(seed));
    for (long i = 0; i < C; i++) gb[i] = (int)(500.0f * frand(seed));
    /* gw (C, G, T) as quads (T, NV, G / 4, 16, 4) */
    for (long t = 0; t < T; t++)
        for (long o = 0; o < C; o++)
            for (long ci = 0; ci < G; ci++)
                wq[((t * NV + o / 16) * (G / 4) + ci / 4) * 64 + o % 16 * 4 + ci % 4] =
                    gw[(o * G + ci) * T + t];
    mi_qdwconv_args ga = {gx, (const short *)wq, gb, gm, gy, 1, H, W, C, K, K, 1, 1, 1, 1, P, P,
                          OH, OW, 0, -3, 9, 1, 0, G};
    const int levels[3] = {0, 1, 3};
    for (int l = 0; l < 3; l++) {
        int used = mi_qgemm_set_isa(levels[l]);
        memset(gy, 0, (size_t)(OH * OW * C));
        CHECK(mi_qdwconv_i8(&ga) == 0, "qgconv (level %d) failed", used);
        long wrong = 0;
        for (long oy = 0; oy < OH; oy++)
            for (long ox = 0; ox < OW; ox++)
                for (long o = 0; o < C; o++) {
                    long acc = gb[o];
                    for (long ty = 0; ty < K; ty++)
                        for (long tx = 0; tx < K; tx++) {
                            long iy = oy - P + ty, ix = ox - P + tx;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                            for (long ci = 0; ci < G; ci++)
                                acc += ((long)gx[(iy * W + ix) * C + o / G * G + ci] + 3) *
                                       gw[(o * G + ci) * T + ty * K + tx];
                        }
                    double t = nearbyint((double)acc * 0.25) + 9; /* exact: a power of 2 */
                    t = t < 0 ? 0 : t > 255 ? 255 : t;
                    wrong += gy[(oy * OW + ox) * C + o] != (unsigned char)t;
                }
        CHECK(wrong == 0, "qgconv (level %d): %ld values differ from the plain loops", used,
              wrong);
    }
    mi_qgemm_set_isa(-1);
    free(gx), free(wq), free(gw), free(gy), free(gb);
}

/* a convolution's integer product from an NHWC image's windows (mi_qconv_i8, _qgemm.c),
 * against the plain loops; QLinearAdd/QLinearMul in one pass (mi_qbinary_i8, _qelt.c) */
static void integer_convolutions(unsigned seed) {
    enum { NB = 2, H = 9, W = 7, C = 6, CG = 3, KH = 3, KW = 2, M = 19, OH = 5, OW = 7 };
    enum { K = KH * KW * CG, ROWS = NB * OH * OW };
    unsigned char x[NB * H * W * C];
    signed char b[K * M], bp[K * M];
    int colsum[M], zb = -2, za = 9, c[ROWS * 2 * M];
    for (long i = 0; i < NB * H * W * C; i++) x[i] = (unsigned char)(256.0f * (frand(&seed) + 0.5f));
    for (long i = 0; i < K * M; i++) b[i] = (signed char)(255.0f * frand(&seed));
    mi_qpack_b_args pk = {b, bp, K, M, M, 1, 0};
    CHECK(mi_qpack_b_i8(&pk) == 0, "qpack_b failed");
    mi_qcolsum_args cs = {bp, colsum, K, M};
    CHECK(mi_qcolsum_i8(&cs) == 0, "qcolsum failed");
    /* group 1 of 2 (channels 3..5), stride 2 x 1, pads 1 x 1, output columns M..2M-1 */
    mi_qconv_args v = {{0}, x, NB, H, W, C, CG, CG, KH, KW, 2, 1, 1, 1, 1, 1, OH, OW};
    v.gemm.bp = bp, v.gemm.colsum = colsum, v.gemm.c = c + M, v.gemm.zb = &zb;
    v.gemm.m = ROWS, v.gemm.n = M, v.gemm.k = K, v.gemm.lda = K, v.gemm.ldc = 2 * M;
    v.gemm.za = za, v.gemm.out = MI_Q_INT32;
    CHECK(mi_qconv_i8(&v) == 0, "qconv failed");
    long bad = 0;
    for (long r = 0; r < ROWS; r++)
        for (long j = 0; j < M; j++) {
            long n = r / (OH * OW), oy = r % (OH * OW) / OW, ox = r % OW, want = 0, kk = 0;
            for (long ty = 0; ty < KH; ty++)
                for (long tx = 0; tx < KW; tx++)
                    for (long ch = 0; ch < CG; ch++, kk++) {
                        long iy = oy * 2 - 1 + ty, ix = ox - 1 + tx;
                        long xv = iy < 0 || iy >= H || ix < 0 || ix >= W
                                      ? za : x[((n * H + iy) * W + ix) * C + CG + ch];
                        want += (xv - za) * (b[kk * M + j] - zb);
                    }
            bad += c[r * 2 * M + M + j] != want;
        }
    CHECK(bad == 0, "qconv: %ld sums differ from the plain loops", bad);
    enum { O = 5, I = 77 };
    unsigned char qa[O * I], qb[O], qy[O * I];
    for (long i = 0; i < O * I; i++) qa[i] = (unsigned char)(256.0f * (frand(&seed) + 0.5f));
    for (long i = 0; i < O; i++) qb[i] = (unsigned char)(256.0f * (frand(&seed) + 0.5f));
    mi_qbinary_args qbin = {qa, qb, qy, O, I, 0, 1, 0.5f, 0.25f, 20.0f, 10, 20, 30, 0, 0};
    CHECK(mi_qbinary_i8(&qbin) == 0, "qbinary failed");
    long wrong = 0;
    for (long o = 0; o < O; o++)
        for (long p = 0; p < I; p++) { /* exact: powers of 2 */
            double t = nearbyint(((double)qa[o * I + p] - 10) * 0.5 + ((double)qb[o] - 20) * 0.25);
            t += 30;
            t = t < 0 ? 0 : t > 255 ? 255 : t;
            wrong += qy[o * I + p] != (unsigned char)t;
        }
    CHECK(wrong == 0, "qbinary: %ld values differ", wrong);
    /* a table lookup (mi_qlookup_i8) and a depthwise NHWC convolution (mi_qdwconv_i8) */
    unsigned char table[256], looked[O * I];
    for (int i = 0; i < 256; i++) table[i] = (unsigned char)(255 - i);
    mi_qlookup_args lk = {qa, table, looked, O * I};
    CHECK(mi_qlookup_i8(&lk) == 0, "qlookup failed");
    wrong = 0;
    for (long i = 0; i < O * I; i++) wrong += looked[i] != 255 - qa[i];
    CHECK(wrong == 0, "qlookup: %ld values differ", wrong);
    /* one table per channel (mi_qchlookup_i8): 2 x 3 channels x 4, then NHWC (inner 1) */
    {
        unsigned char ctab[3 * 256], cx[24], cy[24];
        for (int i = 0; i < 3 * 256; i++) ctab[i] = (unsigned char)(i / 256 * 50 + i % 7);
        for (int i = 0; i < 24; i++) cx[i] = qa[i % (O * I)];
        long shapes[2][3] = {{2, 3, 4}, {8, 3, 1}};
        for (int s = 0; s < 2; s++) {
            mi_qchlookup_args cl = {cx, ctab, cy, shapes[s][0], 3, shapes[s][2]};
            CHECK(mi_qchlookup_i8(&cl) == 0, "qchlookup failed");
            wrong = 0;
            for (long i = 0; i < 24; i++) {
                long ch = i / shapes[s][2] % 3;
                wrong += cy[i] != ctab[ch * 256 + cx[i]];
            }
            CHECK(wrong == 0, "qchlookup: %ld values differ", wrong);
        }
    }
    /* an NHWC 8-bit max pool (mi_qmaxpool_i8): 3x3, stride 2, pads 1 over 5 x 6 x 3 int8 */
    {
        enum { PH = 5, PW = 6, PC = 3, POH = 3, POW = 3 };
        signed char px[PH * PW * PC], py[POH * POW * PC];
        for (long i = 0; i < PH * PW * PC; i++) px[i] = (signed char)(qa[i % (O * I)] - 128);
        mi_qmaxpool_args mp = {px, py, 1, PH, PW, PC, 3, 3, 2, 2, 1, 1, 1, 1, POH, POW, 1};
        CHECK(mi_qmaxpool_i8(&mp) == 0, "qmaxpool failed");
        wrong = 0;
        for (long oy = 0; oy < POH; oy++)
            for (long ox = 0; ox < POW; ox++)
                for (long c = 0; c < PC; c++) {
                    int best = -128;
                    for (long i = 0; i < 3; i++)
                        for (long j = 0; j < 3; j++) {
                            long iy = oy * 2 - 1 + i, ix = ox * 2 - 1 + j;
                            if (iy < 0 || iy >= PH || ix < 0 || ix >= PW) continue;
                            int v = px[(iy * PW + ix) * PC + c];
                            best = v > best ? v : best;
                        }
                    wrong += py[(oy * POW + ox) * PC + c] != best;
                }
        CHECK(wrong == 0, "qmaxpool: %ld maxima differ", wrong);
    }
    /* stride 2, pads 1 over 5 channels (the masked lanes); 5x5, stride 1, pads 2 over 32
     * (whole vectors: the kernel's rows of 4 + 1 inner pixels, its top and bottom rows) */
    qdw_case(&seed, 5, 6, 7, 3, 2, 1);
    qdw_case(&seed, 32, 8, 9, 5, 1, 2);
    /* grouped: 8 channels a group over 40 (a masked last vector), 16 over 32 (5x5) */
    qg_case(&seed, 40, 8, 6, 7, 3, 1);
    qg_case(&seed, 32, 16, 5, 6, 5, 2);
}

static void abi(void) {
    CHECK(mi_abi_version() == MI_ABI_VERSION, "abi version %d", mi_abi_version());
    long rows = 0, bad = 0;
    for (const mi_abi_field *f = mi_abi_layout(); f->type; f++, rows++)
        bad += f->size <= 0 || f->offset < 0;
    CHECK(rows > 100 && bad == 0, "abi layout: %ld rows, %ld bad", rows, bad);
}

static void nbits_products(unsigned seed);
static void blocked_kernels(unsigned seed);
static void logsumexp_rows(unsigned seed);
static void integer_in_place(unsigned seed);
static void int8_pool_kernels(unsigned seed);
static void int8_global_pool(unsigned seed);
static void int8_max_pool(unsigned seed);
static void input_quantize(unsigned seed);

void families(unsigned seed) {
    convolutions(seed);
    winograd(seed + 1);
    im2col(seed + 2);
    taps2d(seed + 3);
    lrn(seed + 4);
    epilogues(seed + 5);
    average_pool(seed + 6);
    resize(seed + 7);
    activations(seed + 8);
    products(seed + 9);
    integer_products(seed + 10);
    recurrent(seed + 11);
    integer_convolutions(seed + 12);
    nbits_products(seed + 13);
    blocked_kernels(seed + 14);
    logsumexp_rows(seed + 15);
    integer_in_place(seed + 16);
    int8_pool_kernels(seed + 17);
    int8_global_pool(seed + 21);
    int8_max_pool(seed + 22);
    input_quantize(seed + 31);
    abi();
}

/* MatMulNBits' 4-bit GEMM (_qnbits.c): B packed, then A (odd K: a partial block; odd N: a
 * partial panel; 9 rows and 3) times it at each ISA level against double loops: float
 * compute, and int8 compute against the loops on A rounded per block as the kernel does */
int mi_nbits_set_isa(int level);
int mi_nbits_isa(void);

static void nbits_products(unsigned seed) {
    enum { M = 9, K = 72, N = 37, BLOCK = 32, KB = 3, HALF = KB * BLOCK / 2, PANELS = 3 };
    unsigned char *b = malloc(N * HALF), *bp = malloc(N * HALF), *blast = malloc(KB * BLOCK * 8);
    for (long i = 0; i < N * HALF; i++) b[i] = (unsigned char)((frand(&seed) + 0.5f) * 256);
    mi_nbits_pack_args pk = {b, bp, N, KB, BLOCK};
    CHECK(mi_nbits_pack_q4(&pk) == 0, "nbits pack failed");
    /* the last panel (5 columns) padded to 16 */
    const long w = N % 16;
    memset(blast, 0, KB * BLOCK * 8);
    for (long g = 0; g < KB * BLOCK / 8; g++)
        memcpy(blast + g * 64, bp + (N - w) * HALF + g * w * 4, (size_t)(w * 4));
    float *scales = calloc(PANELS * KB * 16, sizeof(float)), *zp = calloc(PANELS * KB * 16, sizeof(float));
    for (long j = 0; j < N; j++)
        for (long blk = 0; blk < KB; blk++) {
            scales[(j / 16 * KB + blk) * 16 + j % 16] = 0.01f + 0.1f * (frand(&seed) + 0.5f);
            zp[(j / 16 * KB + blk) * 16 + j % 16] = (float)(long)((frand(&seed) + 0.5f) * 16);
        }
    float *a = randoms(M * K, &seed, 4.0f), *bias = randoms(N, &seed, 1.0f);
    float *c = malloc(sizeof(float) * M * N);
    /* want[0]: float compute; want[1]: A rounded to int8 per block as the kernel's rule
     * says (scale = max|a| / 127, rint(a / scale)), the rest exact */
    double *want[2] = {malloc(sizeof(double) * M * N), malloc(sizeof(double) * M * N)};
    double *aq = malloc(sizeof(double) * M * K);
    for (long i = 0; i < M; i++)
        for (long blk = 0; blk < KB; blk++) {
            long k1 = (blk + 1) * BLOCK < K ? (blk + 1) * BLOCK : K;
            float amax = 0;
            for (long kk = blk * BLOCK; kk < k1; kk++) amax = fmaxf(amax, fabsf(a[i * K + kk]));
            float scale = amax / 127.0f, inv = scale != 0.0f ? 1.0f / scale : 0.0f;
            for (long kk = blk * BLOCK; kk < k1; kk++)
                aq[i * K + kk] = (double)rintf(a[i * K + kk] * inv) * scale; /* exact */
        }
    for (int int8 = 0; int8 <= 1; int8++)
        for (long i = 0; i < M; i++)
            for (long j = 0; j < N; j++) {
                double s = bias[j];
                for (long kk = 0; kk < K; kk++) {
                    long blk = kk / BLOCK, at = (j / 16 * KB + blk) * 16 + j % 16;
                    int q = (b[j * HALF + kk / 2] >> (4 * (kk % 2))) & 15;
                    double av = int8 ? aq[i * K + kk] : (double)a[i * K + kk];
                    s += av * ((q - zp[at]) * (double)scales[at]);
                }
                want[int8][i * N + j] = s;
            }
    for (int level = 0; level <= 2; level++) {
        mi_nbits_set_isa(level);
        for (int int8 = 0; int8 <= 1; int8++)
            for (long m = M; m > 0; m -= 6) { /* 9 rows (tiles), 3 (a decoder's few rows) */
                mi_nbits_args g = {a, bp, blast, scales, zp, bias, c, m, N, K, KB, BLOCK, K, N, int8};
                CHECK(mi_nbits_gemm_f32(&g) == 0, "nbits gemm failed");
                double worst = worst_of(c, want[int8], m * N);
                CHECK(worst < 1e-5, "nbits (isa %d, int8 %d, %ld rows): off by %g",
                      mi_nbits_isa(), int8, m, worst);
            }
    }
    mi_nbits_set_isa(-1);
    free(b), free(bp), free(blast), free(scales), free(zp), free(a), free(aq), free(bias), free(c);
    free(want[0]), free(want[1]);
}

static void blocked_more(unsigned seed);

/* the outputs of a dense 3x3 stride-2 pad-1 blocked convolution (one group, bias, residual,
 * clamp to [-1, 1]) that differ from plain loops over its layouts: x blocked, or LINEAR
 * (x_linear: a stem's planes); w one group's, T output blocks a tile */
static long bconv_errors(const mi_bconv_args *a, long T) {
    long k = a->k, cbi = a->cb_in, cbo = a->cb_out, H = a->h, W = a->wd, bad = 0;
    for (long n = 0; n < a->n; n++)
        for (long m = 0; m < a->c_out; m++)
            for (long oy = 0; oy < a->oh; oy++)
                for (long ox = 0; ox < a->ow; ox++) {
                    long ob = m / k, l = m % k;
                    long at = (((n * cbo + ob) * a->oh + oy) * a->ow + ox) * k + l;
                    double s = a->bias[ob * k + l] + a->res[at];
                    for (long c = 0; c < a->c_in; c++)
                        for (long i = 0; i < 3; i++)
                            for (long j = 0; j < 3; j++) {
                                long iy = oy * 2 - 1 + i, ix = ox * 2 - 1 + j;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                long wi = (((((ob / T) * cbi + c / k) * 3 + i) * 3 + j) * k +
                                           c % k) * T * k + (ob % T) * k + l;
                                long xi = a->x_linear ? ((n * a->c_in + c) * H + iy) * W + ix
                                          : (((n * cbi + c / k) * H + iy) * W + ix) * k + c % k;
                                s += (double)a->w[wi] * a->x[xi];
                            }
                    s = s < -1 ? -1 : s > 1 ? 1 : s;
                    bad += !near(a->y[at], s, 1e-4);
                }
    return bad;
}

/* the channel-blocked kernels (_blocked.c) at each block size the CPU runs, against plain
 * loops over the same blocked layout: a padded strided 3x3 convolution with residual and
 * clamp, a depthwise one, max pooling, a broadcast Mul, Concat at an unaligned offset (then
 * blocked_more: a grouped convolution, scale and shift, Split, Resize) */
static void blocked_kernels(unsigned seed) {
    enum { N = 2, C = 11, M = 19, H = 9, W = 10, OH = 5, OW = 5 };
    for (long k = 8; k <= 16; k += 8) {
        if (!(mi_blocked_isa() & (k == 8 ? 1 : 2))) continue;
        long cbi = (C + k - 1) / k, cbo = (M + k - 1) / k;
        float *x = randoms(N * cbi * H * W * k, &seed, 2.0f);
        for (long i = 0; i < N * cbi * H * W * k; i++)
            if ((i / (H * W * k)) % cbi == cbi - 1 && (i % k) >= C - (cbi - 1) * k) x[i] = 0;
        /* one group's layout: w[ob / T][icb][3][3][lane in][ob % T][lane out] (_blocked.h) */
        long T = k == 16 ? 4 : 2, G = (cbo + T - 1) / T;
        float *w = randoms(G * cbi * 9 * k * T * k, &seed, 1.0f), *b = randoms(cbo * k, &seed, 1.0f);
        float *r = randoms(N * cbo * OH * OW * k, &seed, 1.0f);
        float *y = randoms(N * cbo * OH * OW * k, &seed, 1.0f);
        mi_bconv_args a = {x, w, b, r, y, N, C, cbi, H, W, M, cbo, OH, OW, 3, 3, 2, 2, 1, 1,
                           1, 1, k, 0, -1.0f, 1.0f, 0, 0.0f, 0.0f};
        CHECK(mi_bconv2d_f32(&a) == 0, "bconv failed");
        long bad = bconv_errors(&a, T);
        CHECK(bad == 0, "bconv k=%ld: %ld sums differ from the plain loops", k, bad);
        /* a stem: 3 channels read LINEAR (N, 3, H, W), the same geometry, one input block */
        enum { CS = 3 };
        float *xl = randoms(N * CS * H * W, &seed, 2.0f), *ws = randoms(G * 9 * k * T * k, &seed, 1.0f);
        mi_bconv_args st = {xl, ws, b, r, y, N, CS, 1, H, W, M, cbo, OH, OW, 3, 3, 2, 2, 1, 1,
                            1, 1, k, 0, -1.0f, 1.0f, 0, 0.0f, 0.0f, 0, 0, 1};
        CHECK(mi_bconv2d_f32(&st) == 0, "bconv stem failed");
        bad = bconv_errors(&st, T);
        CHECK(bad == 0, "bconv stem k=%ld: %ld sums differ from the plain loops", k, bad);
        free(xl), free(ws);
        /* depthwise 3x3, stride 1, pad 1, over C channels */
        float *wd = randoms(cbi * 9 * k, &seed, 1.0f), *yd = randoms(N * cbi * H * W * k, &seed, 1.0f);
        mi_bconv_args d = {x, wd, NULL, NULL, yd, N, C, cbi, H, W, C, cbi, H, W, 3, 3, 1, 1, 1, 1,
                           1, 1, k, 1, -INFINITY, INFINITY, 0, 0.0f, 0.0f};
        CHECK(mi_bconv2d_f32(&d) == 0, "bconv depthwise failed");
        bad = 0;
        for (long n = 0; n < N; n++)
            for (long c = 0; c < C; c++)
                for (long oy = 0; oy < H; oy++)
                    for (long ox = 0; ox < W; ox++) {
                        long cb = c / k, l = c % k;
                        double s = 0;
                        for (long i = 0; i < 3; i++)
                            for (long j = 0; j < 3; j++) {
                                long iy = oy - 1 + i, ix = ox - 1 + j;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                s += (double)wd[((cb * 3 + i) * 3 + j) * k + l] *
                                     x[(((n * cbi + cb) * H + iy) * W + ix) * k + l];
                            }
                        bad += !near(yd[(((n * cbi + cb) * H + oy) * W + ox) * k + l], s, 1e-4);
                    }
        CHECK(bad == 0, "bconv depthwise k=%ld: %ld sums differ", k, bad);
        /* max pooling 3x3 stride 2 pad 1 */
        float *yp = randoms(N * cbi * OH * OW * k, &seed, 1.0f);
        mi_bpool_args p = {x, yp, N, cbi, H, W, OH, OW, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, k, 0, 0};
        CHECK(mi_bpool2d_f32(&p) == 0, "bpool failed");
        bad = 0;
        for (long nb = 0; nb < N * cbi; nb++)
            for (long oy = 0; oy < OH; oy++)
                for (long ox = 0; ox < OW; ox++)
                    for (long l = 0; l < k; l++) {
                        float best = -INFINITY;
                        for (long i = 0; i < 3; i++)
                            for (long j = 0; j < 3; j++) {
                                long iy = oy * 2 - 1 + i, ix = ox * 2 - 1 + j;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                float v = x[((nb * H + iy) * W + ix) * k + l];
                                best = v > best ? v : best;
                            }
                        bad += yp[((nb * OH + oy) * OW + ox) * k + l] != best;
                    }
        CHECK(bad == 0, "bpool k=%ld: %ld maxima differ", k, bad);
        /* x * one vector per (image, block) */
        float *s = randoms(N * cbi * k, &seed, 1.0f), *ym = randoms(N * cbi * H * W * k, &seed, 1.0f);
        mi_bbinary_args m = {x, s, ym, N, cbi, H * W, k, 1, N, 1, -INFINITY, INFINITY};
        CHECK(mi_bbinary_f32(&m) == 0, "bbinary failed");
        bad = 0;
        for (long i = 0; i < N * cbi * H * W * k; i++)
            bad += ym[i] != x[i] * s[(i / (H * W * k)) * k + i % k];
        CHECK(bad == 0, "bbinary k=%ld: %ld products differ", k, bad);
        /* Concat of x (C channels) and x again: the second at offset C, not a block's start */
        const float *xs[2] = {x, x};
        long cs[2] = {C, C}, cbc = (2 * C + k - 1) / k;
        float *yc = randoms(N * cbc * H * W * k, &seed, 1.0f);
        mi_bconcat_args cc = {xs, cs, yc, 2, N, H * W, k};
        CHECK(mi_bconcat_f32(&cc) == 0, "bconcat failed");
        bad = 0;
        for (long n = 0; n < N; n++)
            for (long c = 0; c < cbc * k; c++)
                for (long q = 0; q < H * W; q++) {
                    long src = c % C;
                    float want = c >= 2 * C ? 0.0f
                                            : x[((n * cbi + src / k) * H * W + q) * k + src % k];
                    bad += yc[((n * cbc + c / k) * H * W + q) * k + c % k] != want;
                }
        CHECK(bad == 0, "bconcat k=%ld: %ld values differ", k, bad);
        mi_bpad_args z = {yd, N, cbi, H * W, k, C};
        CHECK(mi_bpadzero_f32(&z) == 0, "bpadzero failed");
        free(x), free(w), free(b), free(r), free(y), free(wd), free(yd), free(yp), free(s);
        free(ym), free(yc);
    }
    blocked_more(seed + 1);
}

/* more channel-blocked kernels (_blocked.c), each block size the CPU runs, against plain
 * loops: a grouped 3x3 convolution (3 groups of 4 -> 6 channels: blocks span groups), the
 * one-pass scale and shift, Split at an unaligned offset, a two-tap Resize */
static void blocked_more(unsigned seed) {
    enum { N = 2, G = 3, CG = 4, MG = 6, C = G * CG, M = G * MG, H = 5, W = 7, OH = 9, OW = 4 };
    for (long k = 8; k <= 16; k += 8) {
        if (!(mi_blocked_isa() & (k == 8 ? 1 : 2))) continue;
        long cbi = (C + k - 1) / k, cbo = (M + k - 1) / k, bad = 0;
        float *x = randoms(N * cbi * H * W * k, &seed, 2.0f);
        for (long i = 0; i < N * cbi * H * W * k; i++)
            if ((i / (H * W * k)) % cbi == cbi - 1 && (i % k) >= C - (cbi - 1) * k) x[i] = 0;
        /* grouped: ONNX weights (M, CG, 3, 3) packed as (cbo, 3, 3, cw, k) */
        float *wo = randoms(M * CG * 9, &seed, 1.0f);
        long lo[8], hi[8], cw = 0;
        for (long ob = 0; ob < cbo; ob++) {
            long first = ob * k, last = (first + k < M ? first + k : M) - 1;
            lo[ob] = (first / MG) * CG, hi[ob] = (last / MG + 1) * CG;
            cw = hi[ob] - lo[ob] > cw ? hi[ob] - lo[ob] : cw;
        }
        float *wp = calloc((size_t)(cbo * 9 * cw * k), sizeof(float));
        for (long o = 0; o < M; o++)
            for (long c = 0; c < CG; c++)
                for (long t = 0; t < 9; t++) {
                    long ob = o / k, at = (o / MG) * CG + c - lo[ob];
                    wp[((ob * 9 + t) * cw + at) * k + o % k] = wo[(o * CG + c) * 9 + t];
                }
        float *yg = randoms(N * cbo * H * W * k, &seed, 1.0f);
        mi_bconv_args g = {x, wp, NULL, NULL, yg, N, C, cbi, H, W, M, cbo, H, W, 3, 3, 1, 1, 1, 1,
                           1, 1, k, 0, -INFINITY, INFINITY, 0, 0.0f, 0.0f, G, cw};
        CHECK(mi_bconv2d_f32(&g) == 0, "bconv grouped failed");
        for (long n = 0; n < N; n++)
            for (long o = 0; o < cbo * k; o++)
                for (long oy = 0; oy < H; oy++)
                    for (long ox = 0; ox < W; ox++) {
                        double sum = 0;
                        for (long c = 0; o < M && c < CG; c++)
                            for (long i = 0; i < 3; i++)
                                for (long j = 0; j < 3; j++) {
                                    long iy = oy - 1 + i, ix = ox - 1 + j, ic = (o / MG) * CG + c;
                                    if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                    sum += (double)wo[(o * CG + c) * 9 + i * 3 + j] *
                                           x[(((n * cbi + ic / k) * H + iy) * W + ix) * k + ic % k];
                                }
                        bad += !near(yg[(((n * cbo + o / k) * H + oy) * W + ox) * k + o % k], sum, 1e-4);
                    }
        CHECK(bad == 0, "bconv grouped k=%ld: %ld sums differ from the plain loops", k, bad);
        /* x * a + b per channel, clamped below at 0 */
        float *sa = randoms(cbi * k, &seed, 1.0f), *sb = randoms(cbi * k, &seed, 1.0f);
        float *ys = randoms(N * cbi * H * W * k, &seed, 1.0f);
        mi_bbinary_args ss = {x, sa, ys, N, cbi, H * W, k, 1, 1, 4, 0.0f, INFINITY, sb};
        CHECK(mi_bbinary_f32(&ss) == 0, "bbinary scale_shift failed");
        bad = 0;
        for (long i = 0; i < N * cbi * H * W * k; i++) {
            long v = ((i / (H * W * k)) % cbi) * k + i % k;
            double want = (double)x[i] * sa[v] + sb[v];
            bad += !near(ys[i], want < 0 ? 0 : want, 1e-5);
        }
        CHECK(bad == 0, "bbinary scale_shift k=%ld: %ld values differ", k, bad);
        /* Split of x's C channels into 5 and C - 5 (the second starts inside a block) */
        long cs[2] = {5, C - 5}, cb0 = (5 + k - 1) / k, cb1 = (C - 5 + k - 1) / k;
        float *y0 = randoms(N * cb0 * H * W * k, &seed, 1.0f), *y1 = randoms(N * cb1 * H * W * k, &seed, 1.0f);
        float *const ys2[2] = {y0, y1};
        mi_bsplit_args sp = {x, ys2, cs, 2, N, H * W, k};
        CHECK(mi_bsplit_f32(&sp) == 0, "bsplit failed");
        bad = 0;
        for (long n = 0; n < N; n++)
            for (long q = 0; q < H * W; q++)
                for (long part = 0; part < 2; part++) {
                    long cbp = part ? cb1 : cb0;
                    for (long c = 0; c < cbp * k; c++) {
                        long src = c + part * 5;
                        float want = c >= cs[part] ? 0.0f : x[((n * cbi + src / k) * H * W + q) * k + src % k];
                        bad += ys2[part][((n * cbp + c / k) * H * W + q) * k + c % k] != want;
                    }
                }
        CHECK(bad == 0, "bsplit k=%ld: %ld values differ", k, bad);
        /* Resize to OH x OW: rows and columns two taps each, weights in [0, 1) */
        long rows[2 * OH], cols[2 * OW];
        float ry[OH], rx[OW];
        for (long i = 0; i < OH; i++) {
            rows[2 * i] = (i * 7) % H, rows[2 * i + 1] = (i * 3 + 1) % H;
            ry[i] = (float)(i % 4) * 0.25f;
        }
        for (long i = 0; i < OW; i++) {
            cols[2 * i] = (i * 5) % W, cols[2 * i + 1] = (i * 2 + 3) % W;
            rx[i] = (float)(i % 3) * 0.3f;
        }
        float *yr = randoms(N * cbi * OH * OW * k, &seed, 1.0f);
        mi_bresize_args rz = {x, yr, rows, cols, ry, rx, N, cbi, H, W, OH, OW, k};
        CHECK(mi_bresize_f32(&rz) == 0, "bresize failed");
        bad = 0;
        for (long nb = 0; nb < N * cbi; nb++)
            for (long oy = 0; oy < OH; oy++)
                for (long ox = 0; ox < OW; ox++)
                    for (long l = 0; l < k; l++) {
                        const float *xb = x + nb * H * W * k;
                        double t0 = xb[(rows[2 * oy] * W + cols[2 * ox]) * k + l];
                        double t1 = xb[(rows[2 * oy] * W + cols[2 * ox + 1]) * k + l];
                        double b0 = xb[(rows[2 * oy + 1] * W + cols[2 * ox]) * k + l];
                        double b1 = xb[(rows[2 * oy + 1] * W + cols[2 * ox + 1]) * k + l];
                        double t = t0 + rx[ox] * (t1 - t0), b = b0 + rx[ox] * (b1 - b0);
                        bad += !near(yr[((nb * OH + oy) * OW + ox) * k + l], t + ry[oy] * (b - t), 1e-5);
                    }
        CHECK(bad == 0, "bresize k=%ld: %ld values differ", k, bad);
        free(x), free(wo), free(wp), free(yg), free(sa), free(sb), free(ys), free(y0), free(y1);
        free(yr);
    }
    /* Reformat (_reformat.c): LINEAR (N, C, hw) into blocks of k and back, any k (plain C),
     * hw past one pool item, the lanes past C zeros */
    for (long k = 8; k <= 16; k += 8) {
        const long n = 2, c = 11, hw = 1500, cb = (c + k - 1) / k;
        float *lin = randoms(n * c * hw, &seed, 1.0f), *blk = randoms(n * cb * hw * k, &seed, 1.0f);
        float *back = randoms(n * c * hw, &seed, 1.0f);
        mi_breformat_args to = {lin, blk, n, c, hw, k, 1}, from = {blk, back, n, c, hw, k, 0};
        CHECK(mi_breformat_f32(&to) == 0 && mi_breformat_f32(&from) == 0, "breformat failed");
        long bad = 0;
        for (long i = 0; i < n; i++)
            for (long b = 0; b < cb; b++)
                for (long p = 0; p < hw; p++)
                    for (long l = 0; l < k; l++) {
                        long ch = b * k + l;
                        float want = ch < c ? lin[(i * c + ch) * hw + p] : 0.0f;
                        bad += blk[((i * cb + b) * hw + p) * k + l] != want;
                    }
        for (long i = 0; i < n * c * hw; i++) bad += back[i] != lin[i];
        CHECK(bad == 0, "breformat k=%ld: %ld values differ", k, bad);
        free(lin), free(blk), free(back);
    }
}

/* ReduceLogSumExp over the trailing axes (_vec.c): 5 rows of 7 against double loops, a row
 * with +inf (+inf), a row of -inf (-inf), and no row at all */
static void logsumexp_rows(unsigned seed) {
    const long R = 5, L = 7;
    float *x = randoms(R * L, &seed, 30.0f), *y = malloc(sizeof(float) * R);
    mi_rows_args a = {x, NULL, y, R, L};
    CHECK(mi_row_logsumexp_f32(&a) == MI_OK, "row_logsumexp refused");
    long wrong = 0;
    for (long r = 0; r < R; r++) {
        double m = x[r * L], sum = 0;
        for (long i = 1; i < L; i++) m = x[r * L + i] > m ? x[r * L + i] : m;
        for (long i = 0; i < L; i++) sum += exp((double)x[r * L + i] - m);
        wrong += !near(y[r], log(sum) + m, 1e-5);
    }
    CHECK(wrong == 0, "row_logsumexp: %ld rows wrong", wrong);
    x[3] = INFINITY;
    for (long i = 0; i < L; i++) x[L + i] = -INFINITY;
    CHECK(mi_row_logsumexp_f32(&a) == MI_OK, "row_logsumexp refused infinities");
    CHECK(isinf(y[0]) && y[0] > 0 && isinf(y[1]) && y[1] < 0, "row_logsumexp: %g %g", y[0],
          y[1]);
    mi_rows_args none = {x, NULL, y, 0, L};
    CHECK(mi_row_logsumexp_f32(&none) == MI_OK, "row_logsumexp refused no rows");
    free(x), free(y);
}

/* the integer GEMM reading A in place (AVX-512 VNNI: uint8 A of whole quads, B's zero point
 * 0): a 1 x 1 stride-1 convolution of channels 4..11 of a 12-channel NHWC image (35 rows: a
 * partial last panel, copied) requantized to uint8 (the 8 x 32 tiles in registers), and a
 * MatMulInteger's rows lda > k apart, each A in a buffer of exactly its size; against the
 * plain loops */
int mi_qgemm_set_isa(int level);

static void integer_in_place(unsigned seed) {
    enum { H = 5, W = 7, C = 12, C0 = 4, K = 8, M = 40, ROWS = H * W };
    unsigned char *x = malloc(H * W * C), y[ROWS * M];
    signed char b[K * M], bp[K * M];
    int colsum[M], zb = 0, za = 3, zy = 7, c[ROWS * M];
    float mult = 0.01f;
    for (long i = 0; i < H * W * C; i++) x[i] = (unsigned char)(256.0f * (frand(&seed) + 0.5f));
    for (long i = 0; i < K * M; i++) b[i] = (signed char)(255.0f * frand(&seed));
    mi_qpack_b_args pk = {b, bp, K, M, M, 1, 0};
    CHECK(mi_qpack_b_i8(&pk) == 0, "qpack_b failed");
    mi_qcolsum_args cs = {bp, colsum, K, M};
    CHECK(mi_qcolsum_i8(&cs) == 0, "qcolsum failed");
    mi_qconv_args v = {{0}, x, 1, H, W, C, C0, K, 1, 1, 1, 1, 1, 1, 0, 0, H, W};
    v.gemm.bp = bp, v.gemm.colsum = colsum, v.gemm.c = y, v.gemm.zb = &zb;
    v.gemm.mult = &mult, v.gemm.m = ROWS, v.gemm.n = M, v.gemm.k = K, v.gemm.lda = K;
    v.gemm.ldc = M, v.gemm.za = za, v.gemm.zy = zy, v.gemm.out = MI_Q_U8;
    v.gemm.lo = 0.0f, v.gemm.hi = 255.0f;
    CHECK(mi_qconv_i8(&v) == 0, "qconv in place failed");
    long bad = 0;
    for (long r = 0; r < ROWS; r++)
        for (long j = 0; j < M; j++) {
            long want = 0;
            for (long kk = 0; kk < K; kk++) want += (long)(x[r * C + C0 + kk] - za) * b[kk * M + j];
            float f = (float)want * mult;
            f = f < -zy ? (float)-zy : f;
            f = f > 255 - zy ? (float)(255 - zy) : f;
            bad += y[r * M + j] != (unsigned char)((int)rintf(f) + zy);
        }
    CHECK(bad == 0, "qconv in place: %ld outputs differ from the plain loops", bad);
    enum { LDA = 12 };
    unsigned char *a = malloc(ROWS * LDA);
    for (long i = 0; i < ROWS * LDA; i++) a[i] = (unsigned char)(256.0f * (frand(&seed) + 0.5f));
    mi_qgemm_args g = {0};
    g.a = a, g.bp = bp, g.colsum = colsum, g.c = c, g.zb = &zb;
    g.m = ROWS, g.n = M, g.k = K, g.lda = LDA, g.ldc = M, g.za = za, g.out = MI_Q_INT32;
    CHECK(mi_qgemm_i8(&g) == 0, "qgemm in place failed");
    bad = 0;
    for (long i = 0; i < ROWS; i++)
        for (long j = 0; j < M; j++) {
            long want = 0;
            for (long kk = 0; kk < K; kk++) want += (long)(a[i * LDA + kk] - za) * b[kk * M + j];
            bad += c[i * M + j] != want;
        }
    CHECK(bad == 0, "qgemm in place: %ld sums differ from the plain loops", bad);
    /* K over 1024 (AVX-512 VNNI: in slices of K, the sums kept between them; AMX: a group of
     * 32 whole rows by tiles, K's 3 last quads by the VNNI tile, then 9 rows by it), 41 rows,
     * at both levels (the CPU's best where it lacks AMX) */
    enum { M2 = 41, K2 = 1100, N2 = 32 };
    unsigned char *a2 = malloc(M2 * K2);
    signed char *b2 = malloc(K2 * N2), *bp2 = malloc(K2 * N2);
    int colsum2[N2], c2[M2 * N2];
    for (long i = 0; i < M2 * K2; i++) a2[i] = (unsigned char)(256.0f * (frand(&seed) + 0.5f));
    for (long i = 0; i < K2 * N2; i++) b2[i] = (signed char)(255.0f * frand(&seed));
    mi_qpack_b_args pk2 = {b2, bp2, K2, N2, N2, 1, 0};
    CHECK(mi_qpack_b_i8(&pk2) == 0, "qpack_b failed");
    mi_qcolsum_args cs2 = {bp2, colsum2, K2, N2};
    CHECK(mi_qcolsum_i8(&cs2) == 0, "qcolsum failed");
    for (int level = 3; level <= 4; level++) {
        int used = mi_qgemm_set_isa(level);
        mi_qgemm_args g2 = {0};
        g2.a = a2, g2.bp = bp2, g2.colsum = colsum2, g2.c = c2, g2.zb = &zb;
        g2.m = M2, g2.n = N2, g2.k = K2, g2.lda = K2, g2.ldc = N2, g2.za = za;
        g2.out = MI_Q_INT32;
        CHECK(mi_qgemm_i8(&g2) == 0, "qgemm long K (level %d) failed", used);
        bad = 0;
        for (long i = 0; i < M2; i++)
            for (long j = 0; j < N2; j++) {
                long want = 0;
                for (long kk = 0; kk < K2; kk++)
                    want += (long)(a2[i * K2 + kk] - za) * b2[kk * N2 + j];
                bad += c2[i * N2 + j] != want;
            }
        CHECK(bad == 0, "qgemm long K (level %d): %ld sums differ from the plain loops", used,
              bad);
    }
    mi_qgemm_set_isa(-1);
    free(x), free(a), free(a2), free(b2), free(bp2);
}

/* the depthwise NHWC int8 convolution (_qdw.c) at each ISA level (capped as the integer
 * GEMM's: plain, AVX2, AVX-512 VNNI; each exact, so one answer): int8 x, 70 channels (a full
 * 64-channel block and a masked one), 13 x 12 pixels to 14 x 12 (pads: 1 above, 0 left),
 * per-channel mult, on the pool; then _qelt.c's kernels over 64 KiB and more, on the pool:
 * the per-channel lookup, the lookup (VBMI and plain) and QLinearAdd's pass (one row: pieces
 * of it) */
int mi_qgemm_set_isa(int level);

static void int8_pool_kernels(unsigned seed) {
    enum { C = 70, H = 13, W = 12, OH = 14, OW = 12 };
    signed char *x = malloc(H * W * C), *y = malloc(OH * OW * C);
    short *w = malloc(sizeof(short) * 9 * C);
    int *bias = malloc(sizeof(int) * C);
    float *mult = malloc(sizeof(float) * C);
    for (long i = 0; i < H * W * C; i++) x[i] = (signed char)(256.0f * frand(&seed));
    for (long i = 0; i < 9 * C; i++) w[i] = (short)(510.0f * frand(&seed));
    for (long i = 0; i < C; i++) {
        bias[i] = (int)(20000.0f * frand(&seed));
        mult[i] = 0.0009765625f * (float)(1 + i % 4); /* powers of 2: exact below */
    }
    const int levels[3] = {0, 1, 3};
    for (int l = 0; l < 3; l++) {
        int used = mi_qgemm_set_isa(levels[l]);
        mi_qdwconv_args a = {x, w, bias, mult, y, 1, H, W, C, 3, 3, 1, 1, 1, 1, 1, 0, OH, OW,
                             1, -3, 5, 1, 1};
        CHECK(mi_qdwconv_i8(&a) == 0, "qdwconv (level %d) failed", used);
        long wrong = 0;
        for (long oy = 0; oy < OH; oy++)
            for (long ox = 0; ox < OW; ox++)
                for (long ch = 0; ch < C; ch++) {
                    long acc = bias[ch];
                    for (long ty = 0; ty < 3; ty++)
                        for (long tx = 0; tx < 3; tx++) {
                            long iy = oy - 1 + ty, ix = ox + tx;
                            if (iy >= 0 && iy < H && ix >= 0 && ix < W)
                                acc += ((long)x[(iy * W + ix) * C + ch] + 3) *
                                       w[(ty * 3 + tx) * C + ch];
                        }
                    double t = nearbyint((double)acc * mult[ch]);
                    t = t < -128 - 5 ? -128 - 5 : t > 127 - 5 ? 127 - 5 : t;
                    wrong += y[(oy * OW + ox) * C + ch] != (signed char)(t + 5);
                }
        CHECK(wrong == 0, "qdwconv (level %d): %ld values differ", used, wrong);
    }
    mi_qgemm_set_isa(3);
    enum { LC = 96, LO = 700 };
    unsigned char *tab = malloc(LC * 256), *lx = malloc(LO * LC), *ly = malloc(LO * LC);
    for (long i = 0; i < LC * 256; i++) tab[i] = (unsigned char)(i * 7 + i / 256);
    for (long i = 0; i < LO * LC; i++) lx[i] = (unsigned char)(256.0f * (frand(&seed) + 0.5f));
    for (long inner = 1; inner <= 7; inner += 6) {
        long outer = LO / inner;
        mi_qchlookup_args cl = {lx, tab, ly, outer, LC, inner};
        CHECK(mi_qchlookup_i8(&cl) == 0, "qchlookup failed");
        long wrong = 0;
        for (long i = 0; i < outer * LC * inner; i++)
            wrong += ly[i] != tab[(i / inner % LC) * 256 + lx[i]];
        CHECK(wrong == 0, "qchlookup (inner %ld): %ld values differ", inner, wrong);
    }
    for (int l = 0; l < 3; l++) {
        int used = mi_qgemm_set_isa(levels[l]);
        mi_qlookup_args lk = {lx, tab, ly, LO * LC - 5};
        CHECK(mi_qlookup_i8(&lk) == 0, "qlookup failed");
        long wrong = 0;
        for (long i = 0; i < LO * LC - 5; i++) wrong += ly[i] != tab[lx[i]];
        CHECK(wrong == 0, "qlookup (level %d): %ld values differ", used, wrong);
    }
    mi_qgemm_set_isa(3);
    /* y = sat(rint((a - 10) * 0.5 + (b - 20) * 0.25) + 30): exact, powers of 2 (the fixed
     * part 30 - (10 * 0.5 + 20 * 0.25) = 20) */
    unsigned char *qy = malloc(LO * LC);
    mi_qbinary_args qb = {lx, ly, qy, 1, LO * LC, 1, LO * LC, 0.5f, 0.25f, 20.0f, 10, 20, 30, 0, 0};
    CHECK(mi_qbinary_i8(&qb) == 0, "qbinary failed");
    long wrong = 0;
    for (long i = 0; i < LO * LC; i++) {
        double t = nearbyint(((double)lx[i] - 10) * 0.5 + ((double)ly[i] - 20) * 0.25) + 30;
        t = t < 0 ? 0 : t > 255 ? 255 : t;
        wrong += qy[i] != (unsigned char)t;
    }
    CHECK(wrong == 0, "qbinary (pieces of a row): %ld values differ", wrong);
    free(x), free(y), free(w), free(bias), free(mult), free(tab), free(lx), free(ly), free(qy);
}

/* QLinearGlobalAveragePool on NHWC (_qgap.c) at each ISA level (plain, AVX2, AVX-512: exact
 * int32 sums, so one answer): int8 and uint8, 75 channels (a 64-channel block and a masked
 * 11), 3 images of 17 x 15 pixels (over 64 KiB: on the pool), and one 1x1 image of 3 channels;
 * mult a power of 2 so that the double reference is exact */
static void int8_global_pool(unsigned seed) {
    enum { N = 3, HW = 17 * 15, C = 75 };
    unsigned char *x = malloc(N * HW * C), *y = malloc(N * C);
    for (long i = 0; i < N * HW * C; i++) x[i] = (unsigned char)(256.0f * (frand(&seed) + 0.5f));
    const int levels[3] = {0, 1, 3};
    for (int l = 0; l < 3; l++)
        for (int sgn = 0; sgn < 2; sgn++) {
            int used = mi_qgemm_set_isa(levels[l]);
            const int zx = sgn ? -128 : 255, zy = sgn ? 5 : 3;
            mi_qgap_args a = {x, y, N, HW, C, 1.0f / 256.0f, zx, zy, sgn};
            CHECK(mi_qgap_i8(&a) == 0, "qgap (level %d) failed", used);
            long wrong = 0;
            for (long b = 0; b < N; b++)
                for (long ch = 0; ch < C; ch++) {
                    long acc = -(long)zx * HW;
                    for (long i = 0; i < HW; i++) {
                        unsigned char v = x[(b * HW + i) * C + ch];
                        acc += sgn ? (long)(signed char)v : (long)v;
                    }
                    double t = nearbyint((double)acc / 256.0) + zy;
                    t = sgn ? (t < -128 ? -128 : t > 127 ? 127 : t) : (t < 0 ? 0 : t > 255 ? 255 : t);
                    wrong += (sgn ? (double)(signed char)y[b * C + ch] : (double)y[b * C + ch]) != t;
                }
            CHECK(wrong == 0, "qgap (level %d, signed %d): %ld values differ", used, sgn, wrong);
            mi_qgap_args one = {x, y, 1, 1, 3, 0.5f, 0, 0, sgn};
            CHECK(mi_qgap_i8(&one) == 0, "qgap 1x1 (level %d) failed", used);
        }
    mi_qgemm_set_isa(3);
    mi_qgap_args bad = {x, y, 1, MI_QGAP_MAX_HW + 1, 1, 1.0f, 0, 0, 0};
    CHECK(mi_qgap_i8(&bad) == MI_EARGS, "qgap took a map whose sums overflow int32");
    free(x), free(y);
}

/* the NHWC 8-bit max pool (_qelt.c) at each ISA level (plain; AVX-512BW at level 3): 70
 * channels (a 64-channel block and a masked 6), 2 images of 33 x 37, 3x3 stride 2 pads 1
 * (over 64 KiB of output: on the pool), against loops; int8 and uint8 */
static void int8_max_pool(unsigned seed) {
    enum { N = 2, H = 33, W = 37, C = 70, OH = 17, OW = 19 };
    unsigned char *x = malloc(N * H * W * C), *y = malloc(N * OH * OW * C);
    for (long i = 0; i < N * H * W * C; i++) x[i] = (unsigned char)(256.0f * (frand(&seed) + 0.5f));
    const int levels[2] = {0, 3};
    for (int l = 0; l < 2; l++)
        for (int sgn = 0; sgn < 2; sgn++) {
            int used = mi_qgemm_set_isa(levels[l]);
            mi_qmaxpool_args a = {x, y, N, H, W, C, 3, 3, 2, 2, 1, 1, 1, 1, OH, OW, sgn};
            CHECK(mi_qmaxpool_i8(&a) == 0, "qmaxpool (level %d) failed", used);
            long wrong = 0;
            for (long b = 0; b < N; b++)
                for (long oy = 0; oy < OH; oy++)
                    for (long ox = 0; ox < OW; ox++)
                        for (long c = 0; c < C; c++) {
                            int best = sgn ? -128 : 0;
                            for (long i = 0; i < 3; i++)
                                for (long j = 0; j < 3; j++) {
                                    long iy = oy * 2 - 1 + i, ix = ox * 2 - 1 + j;
                                    if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                    unsigned char u = x[((b * H + iy) * W + ix) * C + c];
                                    int v = sgn ? (int)(signed char)u : (int)u;
                                    best = v > best ? v : best;
                                }
                            unsigned char g = y[((b * OH + oy) * OW + ox) * C + c];
                            wrong += (sgn ? (int)(signed char)g : (int)g) != best;
                        }
            CHECK(wrong == 0, "qmaxpool (level %d, signed %d): %ld maxima differ", used, sgn,
                  wrong);
        }
    mi_qgemm_set_isa(3);
    free(x), free(y);
}

/* QuantizeLinear per tensor (_qquant.c), NCHW and NHWC y, uint8 and int8: 2 images of 5
 * channels x 67 x 71 (over 64 KiB: on the pool; a partial last tile), 3 channels (the image's
 * interleave), one channel, against the formula in double (scale a power of 2: exact) */
static void input_quantize(unsigned seed) {
    enum { N = 2, C = 5, HW = 67 * 71 };
    float *x = malloc(sizeof(float) * N * C * HW);
    unsigned char *y = malloc(N * C * HW);
    for (long i = 0; i < N * C * HW; i++) x[i] = 400.0f * frand(&seed);
    const long chans[3] = {C, 3, 1};
    for (int sgn = 0; sgn < 2; sgn++)
        for (int hwc = 0; hwc < 2; hwc++)
            for (int k = 0; k < 3; k++) {
                const long c = chans[k];
                const int zp = sgn ? -7 : 200;
                mi_qquant_args a = {x, y, N, c, HW, 0.5f, zp, sgn, hwc};
                CHECK(mi_qquant_f32(&a) == 0, "qquant failed");
                long wrong = 0;
                for (long b = 0; b < N; b++)
                    for (long ch = 0; ch < c; ch++)
                        for (long p = 0; p < HW; p++) {
                            double t = nearbyint((double)x[(b * c + ch) * HW + p] / 0.5) + zp;
                            t = sgn ? (t < -128 ? -128 : t > 127 ? 127 : t)
                                    : (t < 0 ? 0 : t > 255 ? 255 : t);
                            long at = hwc ? (b * HW + p) * c + ch : (b * c + ch) * HW + p;
                            wrong += (sgn ? (double)(signed char)y[at] : (double)y[at]) != t;
                        }
                CHECK(wrong == 0, "qquant (signed %d, hwc %d, c %ld): %ld values differ", sgn,
                      hwc, c, wrong);
            }
    /* per channel (NCHW): channel ch by scales[ch] and zps[ch], on the pool */
    const float scales[C] = {0.5f, 0.25f, 3.0f, 1.5f, 0.125f};
    for (int sgn = 0; sgn < 2; sgn++) {
        const int zps[C] = {sgn ? -128 : 0, sgn ? 127 : 255, 3, sgn ? -7 : 200, 100};
        mi_qquant_args a = {x, y, N, C, HW, 0.0f, 0, sgn, 0, scales, zps};
        CHECK(mi_qquant_f32(&a) == 0, "qquant per channel failed");
        long wrong = 0;
        for (long i = 0; i < N * C * HW; i++) {
            const long ch = i / HW % C;
            double t = nearbyint((double)(x[i] / scales[ch])) + zps[ch];
            t = sgn ? (t < -128 ? -128 : t > 127 ? 127 : t) : (t < 0 ? 0 : t > 255 ? 255 : t);
            wrong += (sgn ? (double)(signed char)y[i] : (double)y[i]) != t;
        }
        CHECK(wrong == 0, "qquant per channel (signed %d): %ld values differ", sgn, wrong);
    }
    /* and back (mi_qdequant_i8): y = (x - zps[ch]) * scales[ch], exact here */
    float *back = malloc(sizeof(float) * N * C * HW);
    for (int sgn = 0; sgn < 2; sgn++) {
        const int zps[C] = {sgn ? -128 : 0, sgn ? 127 : 255, 3, sgn ? -7 : 200, 100};
        mi_qdequant_args d = {y, back, N, C, HW, scales, sgn ? zps : NULL, sgn};
        CHECK(mi_qdequant_i8(&d) == 0, "qdequant failed");
        long wrong = 0;
        for (long i = 0; i < N * C * HW; i++) {
            const long ch = i / HW % C;
            const float v = sgn ? (float)(signed char)y[i] : (float)y[i];
            wrong += back[i] != (v - (sgn ? (float)zps[ch] : 0.0f)) * scales[ch];
        }
        CHECK(wrong == 0, "qdequant (signed %d): %ld values differ", sgn, wrong);
    }
    free(back);
    mi_qquant_args bad = {x, y, 1, 1, 1, 1.0f, 256, 0, 0};
    CHECK(mi_qquant_f32(&bad) == MI_EARGS, "qquant took a uint8 zero point of 256");
    free(x), free(y);
}
