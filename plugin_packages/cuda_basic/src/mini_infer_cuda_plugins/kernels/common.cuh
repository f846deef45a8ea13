// Helpers shared by the mini-infer-cuda-plugins kernels.
//
// Standalone CUDA C++: no system or toolkit headers, so every .cu file compiles with NVRTC
// (CuPy RawModule, which gets this header inlined by the Python loader) and with nvcc alike.
//
// Element types: float (f32), double (f64) and IEEE binary16 (f16) handled as its raw 16 bits
// (CuPy's float16 storage) and converted with the PTX cvt instructions, so no cuda_fp16.h is
// needed. Arithmetic runs in mi_acc<T>::type: float for f16/f32, double for f64.
//
// With MI_HOST_EMULATION defined (the tests do, with a shim header that defines the CUDA
// keywords and built-in variables) the same sources compile as plain host C++: a "launch" is
// one thread whose grid-stride loop visits every element.
#ifndef MI_COMMON_CUH
#define MI_COMMON_CUH

typedef unsigned short mi_half;

template <typename T> struct mi_acc { typedef float type; };
template <> struct mi_acc<double> { typedef double type; };

__device__ __forceinline__ float mi_load(const float* p) { return *p; }
__device__ __forceinline__ double mi_load(const double* p) { return *p; }
#ifndef MI_HOST_EMULATION
__device__ __forceinline__ float mi_load(const mi_half* p) {
    float f;
    unsigned short h = *p;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
#else  // the kernels compiled as host C++ by the tests (see tests/test_cuda_sources.py)
__device__ __forceinline__ float mi_load(const mi_half* p) { return mi_host_half_to_float(*p); }
#endif

__device__ __forceinline__ void mi_store(float* p, float v) { *p = v; }
__device__ __forceinline__ void mi_store(double* p, double v) { *p = v; }
#ifndef MI_HOST_EMULATION
__device__ __forceinline__ void mi_store(mi_half* p, float v) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    *p = h;
}
#else
__device__ __forceinline__ void mi_store(mi_half* p, float v) { *p = mi_host_float_to_half(v); }
#endif

__device__ __forceinline__ float mi_neg_inf(float) { return __int_as_float((int)0xff800000u); }
__device__ __forceinline__ double mi_neg_inf(double) {
    return __longlong_as_double((long long)0xfff0000000000000ull);
}
__device__ __forceinline__ float mi_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double mi_pow(double a, double b) { return pow(a, b); }
__device__ __forceinline__ float mi_erf(float a) { return erff(a); }
__device__ __forceinline__ double mi_erf(double a) { return erf(a); }
__device__ __forceinline__ float mi_tanh(float a) { return tanhf(a); }
__device__ __forceinline__ double mi_tanh(double a) { return tanh(a); }

// activation codes of the fused epilogues (see ops/_raw.py)
#define MI_ACT_NONE 0
#define MI_ACT_RELU 1

template <typename A>
__device__ __forceinline__ A mi_activate(A v, int act) {
    return (act == MI_ACT_RELU && v < (A)0) ? (A)0 : v;
}

// one thread per element, grid-stride (the launcher caps the grid)
#define MI_GRID_STRIDE(i, n)                                                   \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;     \
         i < (n); i += (long long)blockDim.x * gridDim.x)

// i = i' * n + q: returns q and leaves i' in i (a flat index's coordinates, innermost first)
__device__ __forceinline__ int mi_peel(long long& i, int n) {
    int q = (int)(i % n);
    i /= n;
    return q;
}

// the taps k of [0, K) whose position at + k * D lies in [0, N): k0 <= k < k1 (D >= 1)
__device__ __forceinline__ void mi_taps_inside(int at, int D, int K, int N, int& k0, int& k1) {
    k0 = at < 0 ? (D - 1 - at) / D : 0;
    k1 = at < N ? (N - at + D - 1) / D : 0;
    if (k1 > K) k1 = K;
}

// A 2-D window over row-major H x W planes: output OH x OW, kernel KH x KW, strides SH, SW,
// begin pads PH, PW, dilations DH, DW. The entry points take it as twelve ints in this order
// (MI_WINDOW_PARAMS; ops/conv.py's window_args on the launchers' side) and hand it to the
// kernel as one value (MI_WINDOW).
struct mi_window {
    int H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW;
    // the input row of output row oh under kernel row kh (outside [0, H) in the padding)
    __device__ __forceinline__ int row(int oh, int kh) const { return oh * SH - PH + kh * DH; }
    // the input column of output column ow under kernel column kw
    __device__ __forceinline__ int col(int ow, int kw) const { return ow * SW - PW + kw * DW; }
    // the kernel rows [kh0, kh1) and columns [kw0, kw1) of output (oh, ow) inside the input
    __device__ __forceinline__ void inside(int oh, int ow, int& kh0, int& kh1, int& kw0,
                                           int& kw1) const {
        mi_taps_inside(row(oh, 0), DH, KH, H, kh0, kh1);
        mi_taps_inside(col(ow, 0), DW, KW, W, kw0, kw1);
    }
};
#define MI_WINDOW_PARAMS                                                                   \
    int H, int W, int OH, int OW, int KH, int KW, int SH, int SW, int PH, int PW, int DH, int DW
#define MI_WINDOW (mi_window{H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW})

#endif  // MI_COMMON_CUH
