/* Shared by the compiled kernels: the CPU dispatch attribute and small helpers. */
#ifndef MI_COMMON_H
#define MI_COMMON_H
#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* One copy of each kernel for AVX2 and one for baseline x86-64, chosen when the library loads
 * by the CPU's features. ISA names, not "arch=" ones: those dispatch on the exact CPU model, so
 * any CPU but a Skylake-SP or a Haswell (Ice Lake, Sapphire Rapids, Zen) got the baseline
 * copy. No AVX-512 copy: these kernels are bound by memory, and on a Sapphire Rapids the
 * AVX-512 copies of the Winograd transforms ran 10-80% slower than the AVX2/baseline ones.
 * MI_NO_CLONES: one copy (the sanitizers' builds, tests/sanitize: the loader runs the copies'
 * resolvers before a sanitizer's runtime is ready). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(MI_NO_CLONES)
#define CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLONES
#endif

/* the kernels' level a library chose (`*level`: -1 until first asked, then what `detect`
 * found, unless the tests set another); relaxed: a call reads it once, into its job */
static inline int cached_isa(atomic_int *level, int (*detect)(void)) {
    int on = atomic_load_explicit(level, memory_order_relaxed);
    if (on < 0) {
        on = detect();
        atomic_store_explicit(level, on, memory_order_relaxed);
    }
    return on;
}

static inline long lmax(long a, long b) { return a > b ? a : b; }

/* whether one of the longs given is below 0 (the exported kernels' argument checks) */
static inline int any_negative(const long *v, int n) {
    long acc = 0;
    for (int i = 0; i < n; i++) acc |= v[i];
    return acc < 0;
}
#define ANY_NEGATIVE(...)                                                                   \
    any_negative((const long[]){__VA_ARGS__},                                               \
                 (int)(sizeof((const long[]){__VA_ARGS__}) / sizeof(long)))

static inline long lmin(long a, long b) { return a < b ? a : b; }

/* first output index o >= 0 whose read o*s + off is >= 0, and one past the last one whose
 * read is < n (clipped to [0, out)) */
static inline long first_in(long off, long s) { return off >= 0 ? 0 : (-off + s - 1) / s; }
static inline long end_in(long off, long s, long n, long out) {
    if (n - 1 - off < 0) return 0;
    return lmin(out, (n - 1 - off) / s + 1);
}

/* y = clamp(acc + residual, lo, hi) over n values */
static inline void finish_row(float *restrict y, const float *restrict acc,
                              const float *restrict res, long n, float lo, float hi) {
    if (res) {
        for (long i = 0; i < n; i++) {
            float v = acc[i] + res[i];
            v = v < lo ? lo : v;
            y[i] = v > hi ? hi : v;
        }
    } else {
        for (long i = 0; i < n; i++) {
            float v = acc[i];
            v = v < lo ? lo : v;
            y[i] = v > hi ? hi : v;
        }
    }
}

#endif
