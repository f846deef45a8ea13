// 2-D max and average pooling, one thread per output element, over row-major (N*C, H, W)
// planes. Window of output (oh, ow): rows oh*SH - PH + kh*DH, columns ow*SW - PW + kw*DW.
#include "common.cuh"

// max over the taps inside the input (padding never wins); NaN propagates
template <typename T>
__device__ void maxpool_2d(const T* __restrict__ x, T* __restrict__ y, int H, int W, int OH,
                           int OW, int KH, int KW, int SH, int SW, int PH, int PW, int DH,
                           int DW, long long total) {
    typedef typename mi_acc<T>::type A;
    MI_GRID_STRIDE(i, total) {
        int ow = (int)(i % OW);
        long long r = i / OW;
        int oh = (int)(r % OH);
        r /= OH;  // plane n * C + c
        const T* xp = x + r * (long long)H * W;
        A best = mi_neg_inf((A)0);
        for (int kh = 0; kh < KH; ++kh) {
            int ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                int iw = ow * SW - PW + kw * DW;
                if (iw < 0 || iw >= W) continue;
                A v = (A)mi_load(xp + (long long)ih * W + iw);
                if (v > best || v != v) best = v;
                if (best != best) break;
            }
            if (best != best) break;
        }
        mi_store(y + i, best);
    }
}

// sum of the taps inside the input divided by the number of taps inside the input, or with
// include_pad inside [-PH, H + PHE) x [-PW, W + PWE) (the explicit pads; windows that
// ceil_mode lets run past the end padding do not count their overhang)
template <typename T>
__device__ void avgpool_2d(const T* __restrict__ x, T* __restrict__ y, int H, int W, int OH,
                           int OW, int KH, int KW, int SH, int SW, int PH, int PW, int PHE,
                           int PWE, int DH, int DW, int include_pad, long long total) {
    typedef typename mi_acc<T>::type A;
    int lo_h = include_pad ? -PH : 0, hi_h = include_pad ? H + PHE : H;
    int lo_w = include_pad ? -PW : 0, hi_w = include_pad ? W + PWE : W;
    MI_GRID_STRIDE(i, total) {
        int ow = (int)(i % OW);
        long long r = i / OW;
        int oh = (int)(r % OH);
        r /= OH;
        const T* xp = x + r * (long long)H * W;
        A sum = (A)0;
        int count_h = 0, count_w = 0;
        for (int kw = 0; kw < KW; ++kw) {
            int iw = ow * SW - PW + kw * DW;
            if (iw >= lo_w && iw < hi_w) ++count_w;
        }
        for (int kh = 0; kh < KH; ++kh) {
            int ih = oh * SH - PH + kh * DH;
            if (ih >= lo_h && ih < hi_h) ++count_h;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                int iw = ow * SW - PW + kw * DW;
                if (iw < 0 || iw >= W) continue;
                sum += (A)mi_load(xp + (long long)ih * W + iw);
            }
        }
        mi_store(y + i, sum / (A)(count_h * count_w));
    }
}

#define MI_POOL_ENTRIES(SUF, T)                                                              \
    extern "C" __global__ void maxpool_2d_##SUF(                                             \
        const T* x, T* y, int H, int W, int OH, int OW, int KH, int KW, int SH, int SW,      \
        int PH, int PW, int DH, int DW, long long total) {                                   \
        maxpool_2d<T>(x, y, H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, total);            \
    }                                                                                        \
    extern "C" __global__ void avgpool_2d_##SUF(                                             \
        const T* x, T* y, int H, int W, int OH, int OW, int KH, int KW, int SH, int SW,      \
        int PH, int PW, int PHE, int PWE, int DH, int DW, int include_pad, long long total) { \
        avgpool_2d<T>(x, y, H, W, OH, OW, KH, KW, SH, SW, PH, PW, PHE, PWE, DH, DW,          \
                      include_pad, total);                                                   \
    }

MI_POOL_ENTRIES(f32, float)
MI_POOL_ENTRIES(f16, mi_half)
MI_POOL_ENTRIES(f64, double)
