// Convolution helpers: im2col for the GEMM path, and a direct depthwise convolution with a
// fused bias + activation epilogue. Layouts are row-major (NCHW).
#include "common.cuh"

// cols[n][c][kh][kw][oh][ow] = x[n][c][g.row(oh, kh)][g.col(ow, kw)] (0 outside)
template <typename T>
__device__ void im2col_2d(const T* __restrict__ x, T* __restrict__ cols, mi_window g,
                          long long total) {
    MI_GRID_STRIDE(i, total) {
        long long r = i;  // n * C + c once the four coordinates are peeled off
        int ow = mi_peel(r, g.OW), oh = mi_peel(r, g.OH);
        int kw = mi_peel(r, g.KW), kh = mi_peel(r, g.KH);
        int ih = g.row(oh, kh), iw = g.col(ow, kw);
        T v = (T)0;
        if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) v = x[(r * g.H + ih) * g.W + iw];
        cols[i] = v;
    }
}

// y[n][m][oh][ow] = act(bias[m] + sum_kh,kw x[n][m / mult][ih][iw] * w[m][0][kh][kw]),
// C input channels, M = C * mult output channels (group == C)
template <typename T>
__device__ void dwconv_2d(const T* __restrict__ x, const T* __restrict__ w,
                          const T* __restrict__ bias, T* __restrict__ y, int C, int M,
                          mi_window g, int act, long long total) {
    typedef typename mi_acc<T>::type A;
    int mult = M / C;
    MI_GRID_STRIDE(i, total) {
        long long n = i;  // the image once the three coordinates are peeled off
        int ow = mi_peel(n, g.OW), oh = mi_peel(n, g.OH), m = mi_peel(n, M);
        const T* xc = x + (n * C + m / mult) * (long long)g.H * g.W;
        const T* wm = w + (long long)m * g.KH * g.KW;
        int kh0, kh1, kw0, kw1;
        g.inside(oh, ow, kh0, kh1, kw0, kw1);
        A acc = (A)0;
        for (int kh = kh0; kh < kh1; ++kh) {
            const T* xr = xc + (long long)g.row(oh, kh) * g.W;
            for (int kw = kw0; kw < kw1; ++kw)
                acc += (A)mi_load(xr + g.col(ow, kw)) * (A)mi_load(wm + kh * g.KW + kw);
        }
        mi_store(y + i, mi_activate<A>(acc + (A)mi_load(bias + m), act));
    }
}

#define MI_CONV_ENTRIES(SUF, T)                                                              \
    extern "C" __global__ void im2col_2d_##SUF(const T* x, T* cols, MI_WINDOW_PARAMS,        \
                                               long long total) {                            \
        im2col_2d<T>(x, cols, MI_WINDOW, total);                                             \
    }                                                                                        \
    extern "C" __global__ void dwconv_2d_##SUF(const T* x, const T* w, const T* bias, T* y,  \
                                               int C, int M, MI_WINDOW_PARAMS, int act,      \
                                               long long total) {                            \
        dwconv_2d<T>(x, w, bias, y, C, M, MI_WINDOW, act, total);                            \
    }

MI_CONV_ENTRIES(f32, float)
MI_CONV_ENTRIES(f16, mi_half)
MI_CONV_ENTRIES(f64, double)
