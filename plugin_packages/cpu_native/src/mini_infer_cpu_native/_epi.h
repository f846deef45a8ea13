/* The activation a convolution's epilogue applies after its clamp (ConvFusion's ``__act__``):
 * y = act(clamp(sum + bias + residual, lo, hi)), act one of MI_ACT_SIGMOID, MI_ACT_SWISH
 * (alpha), MI_ACT_HARD_SIGMOID (alpha, beta), MI_ACT_HARD_SWISH (_args.h's codes; 0, which
 * is MI_ACT_ERF there, means none here: Erf is never an epilogue). The math is _act.h's, one
 * copy per instruction set:
 *   mi_epi_scalar(float x, int act, float alpha, float beta)
 *   mi_epi_avx2(__m256 x, int act, __m256 alpha, __m256 beta)     target("avx2,fma")
 *   mi_epi_avx512(__m512 x, int act, __m512 alpha, __m512 beta)   target("avx512f,fma")
 * always inlined into a kernel's store (a switch on `act`, the same branch for every vector
 * of a call); and mi_epi_row: in place over a row a scalar epilogue wrote (Winograd's output
 * rows, the grouped direct convolution's), by the best copy this CPU runs (mi_act_isa). */
#ifndef MI_EPI_H
#define MI_EPI_H

#include "_act.h"
#include "_args.h"

#define MI_EPI_NONE 0

/* a call's epilogue after the sums: the clamp [lo, hi], then `act` (alpha, beta) */
typedef struct {
    float lo, hi;
    int act;
    float alpha, beta;
} mi_epi_args;

#define MI_EPI_DEFINE(SUF, V, ATTR)                                                         \
    ATTR V mi_epi_##SUF(V x, int act, V alpha, V beta) {                                    \
        switch (act) {                                                                      \
        case MI_ACT_SIGMOID: return mi_sigmoid_##SUF(x);                                    \
        case MI_ACT_SWISH: return mi_swish_##SUF(x, alpha);                                 \
        case MI_ACT_HARD_SIGMOID: return mi_hard_sigmoid_##SUF(x, alpha, beta);             \
        case MI_ACT_HARD_SWISH: return mi_hard_swish_##SUF(x);                              \
        default: return x;                                                                  \
        }                                                                                   \
    }

MI_EPI_DEFINE(scalar, float, static inline __attribute__((always_inline)))
#if MI_ACT_X86
MI_EPI_DEFINE(avx2, __m256, static inline __attribute__((always_inline, target("avx2,fma"))))
MI_EPI_DEFINE(avx512, __m512,
              static inline __attribute__((always_inline, target("avx512f,fma"))))

/* the end of a store's epilogue for one vector `x` of sums (alpha and biases already in): the
 * residual at `rp` added (NULL: none), clamped to [lo, hi] (a NaN passes through), `act`,
 * stored at `y`; where `part`, only the lanes of `mk` (a row's last, partial vector) */
__attribute__((always_inline, target("avx2,fma"))) static inline void mi_epi_store_avx2(
    float *y, const float *rp, __m256 x, int part, __m256i mk, __m256 lo, __m256 hi, int act,
    __m256 alpha, __m256 beta) {
    if (rp) x = _mm256_add_ps(x, part ? _mm256_maskload_ps(rp, mk) : _mm256_loadu_ps(rp));
    x = mi_epi_avx2(_mm256_min_ps(hi, _mm256_max_ps(lo, x)), act, alpha, beta);
    if (part) _mm256_maskstore_ps(y, mk, x);
    else _mm256_storeu_ps(y, x);
}

/* mi_epi_store_avx2 over an R x V tile of accumulators `acc` (rows `ystep` apart in `y` and
 * in the residual `res`, NULL: none; `cols` columns, the last of the V vectors masked where
 * fewer than 8 remain), `e` the call's mi_epi_args; a macro: `acc` is the caller's array */
#define MI_EPI_STORE_TILE(R, V, acc, y, res, ystep, cols, e)                                \
    do {                                                                                    \
        const __m256 lo_ = _mm256_set1_ps((e)->lo), hi_ = _mm256_set1_ps((e)->hi);          \
        const __m256 al_ = _mm256_set1_ps((e)->alpha), be_ = _mm256_set1_ps((e)->beta);     \
        const long tail_ = (cols) - 8 * ((V) - 1); /* 1..8 columns in the last vector */    \
        const __m256i mk_ = mi_tail_avx2(tail_);                                            \
        _Pragma("GCC unroll 4") for (int i_ = 0; i_ < (R); i_++)                            \
            _Pragma("GCC unroll 4") for (int v_ = 0; v_ < (V); v_++) {                      \
                const long off_ = i_ * (ystep) + 8 * v_;                                    \
                mi_epi_store_avx2((y) + off_, (res) ? (res) + off_ : NULL, (acc)[i_][v_],   \
                                  v_ == (V) - 1 && tail_ < 8, mk_, lo_, hi_, (e)->act, al_, \
                                  be_);                                                     \
            }                                                                               \
    } while (0)

__attribute__((target("avx2,fma"))) static inline void mi_epi_row_avx2(float *y, long n,
                                                                       int act, float alpha,
                                                                       float beta) {
    __m256 a = _mm256_set1_ps(alpha), b = _mm256_set1_ps(beta);
    long i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, mi_epi_avx2(_mm256_loadu_ps(y + i), act, a, b));
    if (i < n) {
        __m256i m = mi_tail_avx2(n - i);
        _mm256_maskstore_ps(y + i, m, mi_epi_avx2(_mm256_maskload_ps(y + i, m), act, a, b));
    }
}
#endif

/* whether `act` is one an epilogue applies (0 included) */
static inline int mi_epi_valid(int act) {
    return act == MI_EPI_NONE || act == MI_ACT_SIGMOID || act == MI_ACT_SWISH ||
           act == MI_ACT_HARD_SIGMOID || act == MI_ACT_HARD_SWISH;
}

/* y[i] = act(y[i]) over n floats, in place (nothing for act 0) */
static inline void mi_epi_row(float *y, long n, int act, float alpha, float beta) {
    if (act == MI_EPI_NONE) return;
#if MI_ACT_X86
    if (mi_act_isa() >= 1) {
        mi_epi_row_avx2(y, n, act, alpha, beta);
        return;
    }
#endif
    for (long i = 0; i < n; i++) y[i] = mi_epi_scalar(y[i], act, alpha, beta);
}

#endif
