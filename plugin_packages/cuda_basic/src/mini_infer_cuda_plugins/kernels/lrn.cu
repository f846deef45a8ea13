// Local response normalisation across channels (ONNX):
//   y = x / (bias + alpha / size * sum_{j in window(c)} x[j]^2) ^ beta,
//   window(c) = [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] clipped to [0, C).
// x and y are row-major (N, C, inner); one thread per element.
#include "common.cuh"

template <typename T>
__device__ void lrn(const T* __restrict__ x, T* __restrict__ y, int C, long long inner,
                    int size, typename mi_acc<T>::type alpha_over_size,
                    typename mi_acc<T>::type beta, typename mi_acc<T>::type bias,
                    long long total) {
    typedef typename mi_acc<T>::type A;
    MI_GRID_STRIDE(i, total) {
        long long s = i % inner;
        long long r = i / inner;
        int c = (int)(r % C);
        long long n = r / C;
        int lo = c - (size - 1) / 2;
        int hi = c + size / 2;
        if (lo < 0) lo = 0;
        if (hi > C - 1) hi = C - 1;
        A sq = (A)0;
        for (int j = lo; j <= hi; ++j) {
            A v = (A)mi_load(x + (n * C + j) * inner + s);
            sq += v * v;
        }
        A v = (A)mi_load(x + i);
        mi_store(y + i, v / mi_pow(bias + alpha_over_size * sq, beta));
    }
}

#define MI_LRN_ENTRY(SUF, T, A)                                                              \
    extern "C" __global__ void lrn_##SUF(const T* x, T* y, int C, long long inner, int size, \
                                         A alpha_over_size, A beta, A bias, long long total) { \
        lrn<T>(x, y, C, inner, size, alpha_over_size, beta, bias, total);                    \
    }

MI_LRN_ENTRY(f32, float, float)
MI_LRN_ENTRY(f16, mi_half, float)
MI_LRN_ENTRY(f64, double, double)
