/* The accuracy of _act.h's functions against float64 libm, by hand (not in CI):
 *
 *   gcc -O2 -std=c11 -I../../src/mini_infer_cpu_native act_ulp.c -lm -o act_ulp && ./act_ulp [STEP]
 *
 * Evaluates every STEP-th float32 bit pattern (default 1: all 2^32) with each copy this CPU
 * runs (plain C, AVX2+FMA, AVX-512F) and prints, per function and copy, the largest error
 * in ulps of the float32 result (an ulp of a subnormal is 2^-149) over the domain given,
 * and where it is. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_act.h"

enum { EXP, ERF, TANH, SIGMOID, GELU, GELU_TANH, SWISH, NFN };
static const char *names[NFN] = {"exp", "erf", "tanh", "sigmoid", "gelu", "gelu_tanh", "swish"};
/* the domain each maximum is taken over (NaN and infinities are checked separately) */
static const double lo_x[NFN] = {-1e30, -1e30, -1e30, -1e30, -5.6, -5.6, -80};

static double ref(int f, double x) {
    switch (f) {
    case EXP: return exp(x);
    case ERF: return erf(x);
    case TANH: return tanh(x);
    case SIGMOID: return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
    case GELU: return 0.5 * x * erfc(-x / sqrt(2.0));
    case GELU_TANH: {
        double u = sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x);
        return x * (u >= 0 ? 1.0 / (1.0 + exp(-2 * u)) : exp(2 * u) / (1.0 + exp(2 * u)));
    }
    default: return x >= 0 ? x / (1.0 + exp(-x)) : x * exp(x) / (1.0 + exp(x));
    }
}

static float scalar(int f, float x) {
    switch (f) {
    case EXP: return mi_exp_scalar(x);
    case ERF: return mi_erf_scalar(x);
    case TANH: return mi_tanh_scalar(x);
    case SIGMOID: return mi_sigmoid_scalar(x);
    case GELU: return mi_gelu_scalar(x);
    case GELU_TANH: return mi_gelu_tanh_scalar(x);
    default: return mi_swish_scalar(x, 1.0f);
    }
}

#define N 4096
#if MI_ACT_X86
/* one copy per instruction set, named after the suffix SFX of _act.h's functions (mi_exp_avx2,
 * ...): vector type T of W floats, intrinsics prefixed P (_mm256_loadu_ps, ...) */
#define ACT_COPY(SFX, TARGET, T, W, P)                                                       \
    __attribute__((target(TARGET))) static void SFX(int f, const float *x, float *y) {     \
        for (int i = 0; i < N; i += W) {                                                    \
            T v = P##_loadu_ps(x + i), r;                                                   \
            switch (f) {                                                                    \
            case EXP: r = mi_exp_##SFX(v); break;                                           \
            case ERF: r = mi_erf_##SFX(v); break;                                           \
            case TANH: r = mi_tanh_##SFX(v); break;                                         \
            case SIGMOID: r = mi_sigmoid_##SFX(v); break;                                   \
            case GELU: r = mi_gelu_##SFX(v); break;                                         \
            case GELU_TANH: r = mi_gelu_tanh_##SFX(v); break;                               \
            default: r = mi_swish_##SFX(v, P##_set1_ps(1.0f));                              \
            }                                                                               \
            P##_storeu_ps(y + i, r);                                                        \
        }                                                                                   \
    }
ACT_COPY(avx2, "avx2,fma", __m256, 8, _mm256)
ACT_COPY(avx512, "avx512f,fma", __m512, 16, _mm512)
#undef ACT_COPY
#endif

/* y = f(x) over all N floats with copy c (0 plain C, 1 AVX2+FMA, 2 AVX-512F) */
static void run_copy(int c, int f, const float *x, float *y) {
#if MI_ACT_X86
    if (c == 1) {
        avx2(f, x, y);
        return;
    }
    if (c == 2) {
        avx512(f, x, y);
        return;
    }
#else
    (void)c;
#endif
    for (int i = 0; i < N; i++) y[i] = scalar(f, x[i]);
}

/* |got - want| in ulps of want rounded to float */
static double ulps(float got, double want) {
    if (isnan(want)) return isnan(got) ? 0 : INFINITY;
    if (isnan(got)) return INFINITY;
    float w = (float)want;
    if (isinf(w) || isinf(got)) return (got == w) ? 0 : INFINITY;
    double a = fabs((double)w);
    double ulp = a < 0x1p-126 ? 0x1p-149 : ldexp(1.0, ilogb(a) - 23);
    return fabs((double)got - want) / ulp;
}

int main(int argc, char **argv) {
    uint64_t step = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    int copies = 1;
#if MI_ACT_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) copies = 2;
    if (copies == 2 && __builtin_cpu_supports("avx512f")) copies = 3;
#endif
    static const char *copy_names[3] = {"plain", "avx2", "avx512"};
    static float x[N], y[N];
    for (int f = 0; f < NFN; f++) {
        for (int c = 0; c < copies; c++) {
            double worst = 0, at = 0;
            int filled = 0;
            for (uint64_t b = 0; b < (1ull << 32); b += step) {
                uint32_t bits = (uint32_t)b;
                float v;
                memcpy(&v, &bits, 4);
                if (isnan(v) || isinf(v) || v < lo_x[f]) continue;
                x[filled++] = v;
                if (filled < N && b + step < (1ull << 32)) continue;
                for (int i = filled; i < N; i++) x[i] = 0.0f;
                run_copy(c, f, x, y);
                for (int i = 0; i < filled; i++) {
                    double e = ulps(y[i], ref(f, x[i]));
                    if (e > worst) worst = e, at = x[i];
                }
                filled = 0;
            }
            /* the special values */
            float sp[4] = {NAN, INFINITY, -INFINITY, 0.0f}, sy[4];
            for (int i = 0; i < N; i++) x[i] = sp[i % 4];
            run_copy(c, f, x, y);
            memcpy(sy, y, sizeof sy);
            printf("%-9s %-6s max %.3f ulp at x = %.9g   f(nan, inf, -inf, 0) = %g %g %g %g\n",
                   names[f], copy_names[c], worst, at, sy[0], sy[1], sy[2], sy[3]);
            fflush(stdout);
        }
    }
    return 0;
}
