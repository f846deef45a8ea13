/* Shared by the sanitizers' driver (pool_stress.c: the threads; families.c: one check per
 * kernel family): the checks' failure count and a small random generator. */
#ifndef MI_SANITIZE_DRIVER_H
#define MI_SANITIZE_DRIVER_H

#include <stdatomic.h>
#include <stdio.h>

#include "../../src/mini_infer_cpu_native/_args.h"
#include "../../src/mini_infer_cpu_native/_pool.h"

/* checks that failed, from any thread */
extern atomic_int failures;

#define CHECK(cond, ...)                                                                    \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fprintf(stderr, "\n");                                                           \
            atomic_fetch_add(&failures, 1);                                                  \
        }                                                                                    \
    } while (0)

/* a value in [-0.5, 0.5) */
static inline float frand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xFFFF) / 65536.0f - 0.5f;
}

/* the kernels' ISA settings (_gemm.c, _act.c): the level set, or the best below it */
int mi_gemm_set_isa(int level);
int mi_gemm_isa(void);
int mi_gemm_available(void);
void mi_gemm_set_plain(int plain);

/* _pw.c's entry points (not in _args.h: they share mi_dconv2d_args) */
int mi_pwconv2d_f32(const mi_dconv2d_args *a);
long mi_pwconv2d_work(const mi_dconv2d_args *a);

/* every kernel family of families.c once, each against plain loops (seed: the data) */
void families(unsigned seed);

#endif
