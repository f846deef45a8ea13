// Elementwise activations CuPy has no ufunc for: Erf and Gelu (exact and tanh forms).
// Contiguous x and y of n elements; one thread per element.
#include "common.cuh"

template <typename T>
__device__ void erf_kernel(const T* __restrict__ x, T* __restrict__ y, long long n) {
    typedef typename mi_acc<T>::type A;
    MI_GRID_STRIDE(i, n) { mi_store(y + i, mi_erf((A)mi_load(x + i))); }
}

// approximate == 0: 0.5 x (1 + erf(x / sqrt 2));
// approximate == 1: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
template <typename T>
__device__ void gelu_kernel(const T* __restrict__ x, T* __restrict__ y, int approximate,
                            long long n) {
    typedef typename mi_acc<T>::type A;
    MI_GRID_STRIDE(i, n) {
        A v = (A)mi_load(x + i);
        A t;
        if (approximate) {
            t = mi_tanh((A)0.7978845608028654 * (v + (A)0.044715 * v * v * v));
        } else {
            t = mi_erf(v * (A)0.7071067811865476);
        }
        mi_store(y + i, (A)0.5 * v * ((A)1 + t));
    }
}

#define MI_ACTIVATION_ENTRIES(SUF, T)                                                        \
    extern "C" __global__ void erf_##SUF(const T* x, T* y, long long n) {                    \
        erf_kernel<T>(x, y, n);                                                              \
    }                                                                                        \
    extern "C" __global__ void gelu_##SUF(const T* x, T* y, int approximate, long long n) {  \
        gelu_kernel<T>(x, y, approximate, n);                                                \
    }

MI_ACTIVATION_ENTRIES(f32, float)
MI_ACTIVATION_ENTRIES(f16, mi_half)
MI_ACTIVATION_ENTRIES(f64, double)
