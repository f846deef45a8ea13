// Per-channel epilogues over row-major tensors: the channel of flat element i is
// (i / inner) % channels (NCHW with inner = H*W; a GEMM's columns with inner = 1).
#include "common.cuh"

// y = act(y + bias[channel]), in place
template <typename T>
__device__ void bias_act(T* __restrict__ y, const T* __restrict__ bias, long long inner,
                         int channels, int act, long long total) {
    typedef typename mi_acc<T>::type A;
    MI_GRID_STRIDE(i, total) {
        A v = (A)mi_load(y + i) + (A)mi_load(bias + (i / inner) % channels);
        mi_store(y + i, mi_activate<A>(v, act));
    }
}

// y = act(y + bias[channel] + res), in place: a convolution's fused bias, residual and Relu
template <typename T>
__device__ void bias_res_act(T* __restrict__ y, const T* __restrict__ bias,
                             const T* __restrict__ res, long long inner, int channels, int act,
                             long long total) {
    typedef typename mi_acc<T>::type A;
    MI_GRID_STRIDE(i, total) {
        A v = (A)mi_load(y + i) + (A)mi_load(bias + (i / inner) % channels)
              + (A)mi_load(res + i);
        mi_store(y + i, mi_activate<A>(v, act));
    }
}

// y = act(x * scale[channel] + shift[channel]); scale and shift in the accumulation type
template <typename T>
__device__ void channel_affine(const T* __restrict__ x, T* __restrict__ y,
                               const typename mi_acc<T>::type* __restrict__ scale,
                               const typename mi_acc<T>::type* __restrict__ shift,
                               long long inner, int channels, int act, long long total) {
    typedef typename mi_acc<T>::type A;
    MI_GRID_STRIDE(i, total) {
        int c = (int)((i / inner) % channels);
        A v = (A)mi_load(x + i) * scale[c] + shift[c];
        mi_store(y + i, mi_activate<A>(v, act));
    }
}

#define MI_EPILOGUE_ENTRIES(SUF, T, A)                                                        \
    extern "C" __global__ void bias_act_##SUF(T* y, const T* bias, long long inner,          \
                                              int channels, int act, long long total) {      \
        bias_act<T>(y, bias, inner, channels, act, total);                                   \
    }                                                                                        \
    extern "C" __global__ void bias_res_act_##SUF(T* y, const T* bias, const T* res,         \
                                                  long long inner, int channels, int act,    \
                                                  long long total) {                         \
        bias_res_act<T>(y, bias, res, inner, channels, act, total);                          \
    }                                                                                        \
    extern "C" __global__ void channel_affine_##SUF(const T* x, T* y, const A* scale,        \
                                                    const A* shift, long long inner,         \
                                                    int channels, int act, long long total) { \
        channel_affine<T>(x, y, scale, shift, inner, channels, act, total);                  \
    }

MI_EPILOGUE_ENTRIES(f32, float, float)
MI_EPILOGUE_ENTRIES(f16, mi_half, float)
MI_EPILOGUE_ENTRIES(f64, double, double)
