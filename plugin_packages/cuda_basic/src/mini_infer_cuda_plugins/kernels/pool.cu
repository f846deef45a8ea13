// 2-D max and average pooling, one thread per output element, over row-major (N*C, H, W)
// planes. Window of output (oh, ow): rows g.row(oh, kh), columns g.col(ow, kw) (common.cuh).
#include "common.cuh"

// max over the taps inside the input (padding never wins); NaN propagates
template <typename T>
__device__ void maxpool_2d(const T* __restrict__ x, T* __restrict__ y, mi_window g,
                           long long total) {
    typedef typename mi_acc<T>::type A;
    MI_GRID_STRIDE(i, total) {
        long long r = i;  // plane n * C + c once the two coordinates are peeled off
        int ow = mi_peel(r, g.OW), oh = mi_peel(r, g.OH);
        const T* xp = x + r * (long long)g.H * g.W;
        int kh0, kh1, kw0, kw1;
        g.inside(oh, ow, kh0, kh1, kw0, kw1);
        A best = mi_neg_inf((A)0);
        for (int kh = kh0; kh < kh1 && best == best; ++kh) {
            const T* xr = xp + (long long)g.row(oh, kh) * g.W;
            for (int kw = kw0; kw < kw1 && best == best; ++kw) {
                A v = (A)mi_load(xr + g.col(ow, kw));
                if (v > best || v != v) best = v;
            }
        }
        mi_store(y + i, best);
    }
}

// sum of the taps inside the input divided by the number of taps inside the input, or with
// include_pad inside [-PH, H + PHE) x [-PW, W + PWE) (the explicit pads; windows that
// ceil_mode lets run past the end padding do not count their overhang)
template <typename T>
__device__ void avgpool_2d(const T* __restrict__ x, T* __restrict__ y, mi_window g, int PHE,
                           int PWE, int include_pad, long long total) {
    typedef typename mi_acc<T>::type A;
    int lo_h = include_pad ? -g.PH : 0, hi_h = include_pad ? g.H + PHE : g.H;
    int lo_w = include_pad ? -g.PW : 0, hi_w = include_pad ? g.W + PWE : g.W;
    MI_GRID_STRIDE(i, total) {
        long long r = i;
        int ow = mi_peel(r, g.OW), oh = mi_peel(r, g.OH);
        const T* xp = x + r * (long long)g.H * g.W;
        int count_h = 0, count_w = 0;
        for (int kh = 0; kh < g.KH; ++kh) {
            int ih = g.row(oh, kh);
            if (ih >= lo_h && ih < hi_h) ++count_h;
        }
        for (int kw = 0; kw < g.KW; ++kw) {
            int iw = g.col(ow, kw);
            if (iw >= lo_w && iw < hi_w) ++count_w;
        }
        int kh0, kh1, kw0, kw1;
        g.inside(oh, ow, kh0, kh1, kw0, kw1);
        A sum = (A)0;
        for (int kh = kh0; kh < kh1; ++kh) {
            const T* xr = xp + (long long)g.row(oh, kh) * g.W;
            for (int kw = kw0; kw < kw1; ++kw) sum += (A)mi_load(xr + g.col(ow, kw));
        }
        mi_store(y + i, sum / (A)(count_h * count_w));
    }
}

#define MI_POOL_ENTRIES(SUF, T)                                                              \
    extern "C" __global__ void maxpool_2d_##SUF(const T* x, T* y, MI_WINDOW_PARAMS,          \
                                                long long total) {                           \
        maxpool_2d<T>(x, y, MI_WINDOW, total);                                               \
    }                                                                                        \
    extern "C" __global__ void avgpool_2d_##SUF(const T* x, T* y, MI_WINDOW_PARAMS, int PHE, \
                                                int PWE, int include_pad, long long total) { \
        avgpool_2d<T>(x, y, MI_WINDOW, PHE, PWE, include_pad, total);                        \
    }

MI_POOL_ENTRIES(f32, float)
MI_POOL_ENTRIES(f16, mi_half)
MI_POOL_ENTRIES(f64, double)
