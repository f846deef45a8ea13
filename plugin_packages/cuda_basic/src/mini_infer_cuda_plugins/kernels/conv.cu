// Convolution helpers: im2col for the GEMM path, and a direct depthwise convolution with a
// fused bias + activation epilogue. Layouts are row-major (NCHW).
#include "common.cuh"

// cols[n][c][kh][kw][oh][ow] = x[n][c][oh*SH - PH + kh*DH][ow*SW - PW + kw*DW] (0 outside)
template <typename T>
__device__ void im2col_2d(const T* __restrict__ x, T* __restrict__ cols, int H, int W,
                          int KH, int KW, int OH, int OW, int SH, int SW, int PH, int PW,
                          int DH, int DW, long long total) {
    MI_GRID_STRIDE(i, total) {
        int ow = (int)(i % OW);
        long long r = i / OW;
        int oh = (int)(r % OH);
        r /= OH;
        int kw = (int)(r % KW);
        r /= KW;
        int kh = (int)(r % KH);
        r /= KH;  // r = n * C + c
        int ih = oh * SH - PH + kh * DH;
        int iw = ow * SW - PW + kw * DW;
        T v = (T)0;
        if (ih >= 0 && ih < H && iw >= 0 && iw < W) v = x[(r * H + ih) * W + iw];
        cols[i] = v;
    }
}

// y[n][m][oh][ow] = act(bias[m] + sum_kh,kw x[n][m / mult][ih][iw] * w[m][0][kh][kw]),
// C input channels, M = C * mult output channels (group == C)
template <typename T>
__device__ void dwconv_2d(const T* __restrict__ x, const T* __restrict__ w,
                          const T* __restrict__ bias, T* __restrict__ y, int C, int H, int W,
                          int M, int KH, int KW, int OH, int OW, int SH, int SW, int PH, int PW,
                          int DH, int DW, int act, long long total) {
    typedef typename mi_acc<T>::type A;
    int mult = M / C;
    MI_GRID_STRIDE(i, total) {
        int ow = (int)(i % OW);
        long long r = i / OW;
        int oh = (int)(r % OH);
        r /= OH;
        int m = (int)(r % M);
        long long n = r / M;
        const T* xc = x + (n * C + m / mult) * (long long)H * W;
        const T* wm = w + (long long)m * KH * KW;
        A acc = (A)0;
        for (int kh = 0; kh < KH; ++kh) {
            int ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                int iw = ow * SW - PW + kw * DW;
                if (iw < 0 || iw >= W) continue;
                acc += (A)mi_load(xc + (long long)ih * W + iw) * (A)mi_load(wm + kh * KW + kw);
            }
        }
        mi_store(y + i, mi_activate<A>(acc + (A)mi_load(bias + m), act));
    }
}

#define MI_CONV_ENTRIES(SUF, T)                                                              \
    extern "C" __global__ void im2col_2d_##SUF(                                              \
        const T* x, T* cols, int H, int W, int KH, int KW, int OH, int OW, int SH, int SW,   \
        int PH, int PW, int DH, int DW, long long total) {                                   \
        im2col_2d<T>(x, cols, H, W, KH, KW, OH, OW, SH, SW, PH, PW, DH, DW, total);          \
    }                                                                                        \
    extern "C" __global__ void dwconv_2d_##SUF(                                              \
        const T* x, const T* w, const T* bias, T* y, int C, int H, int W, int M, int KH,     \
        int KW, int OH, int OW, int SH, int SW, int PH, int PW, int DH, int DW, int act,     \
        long long total) {                                                                   \
        dwconv_2d<T>(x, w, bias, y, C, H, W, M, KH, KW, OH, OW, SH, SW, PH, PW, DH, DW, act, \
                     total);                                                                 \
    }

MI_CONV_ENTRIES(f32, float)
MI_CONV_ENTRIES(f16, mi_half)
MI_CONV_ENTRIES(f64, double)
