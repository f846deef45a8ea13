/* Reformat between LINEAR (N, C, *S) and channel-blocked (N, ceil(C/k), *S, k) float32
 * tensors (the builder's Reformat steps where cpu_native's blocked kernels meet LINEAR ones;
 * the core's NumPy copy of the same, 5-13 ms for a 21-class 512x512 map and 0.45 ms for a
 * 3x224x224 input, reads or writes one float per 64-byte line). Here each (image, block,
 * span of positions) item moves tiles of TILE positions x k lanes lane by lane: a
 * contiguous run of one plane on the LINEAR side, every k-th float of the tile's few
 * cache lines on the blocked side (in L1 while the k lanes pass), the lanes past C 0. Items on the pool (_pool.c) from 64 KiB on.
 * mi_breformat_args: _blocked.h. */

#include <string.h>

#include "_args.h"
#include "_blocked.h"
#include "_common.h"
#include "_pool.h"

#define TILE 64                /* positions per tile */
#define SPAN (16 * TILE)       /* positions per pool item */
#define PARALLEL_FLOATS 16384L /* below: the caller alone */

static long ceil_div(long a, long b) { return (a + b - 1) / b; }

/* positions [p0, p1) of block b of image n */
static void move(const mi_breformat_args *a, long n, long b, long p0, long p1) {
    const long k = a->k, hw = a->hw, cb = ceil_div(a->c, k);
    const long lanes = lmin(k, a->c - b * k); /* real channels of this block */
    float *restrict blk = (float *)(a->to_blocked ? a->y : a->x) + ((n * cb + b) * hw) * k;
    float *restrict lin = (float *)(a->to_blocked ? a->x : a->y) + (n * a->c + b * k) * hw;
    for (long t0 = p0; t0 < p1; t0 += TILE) {
        const long t1 = lmin(p1, t0 + TILE);
        if (a->to_blocked) { /* lane by lane: a contiguous read, stores k floats apart */
            if (lanes < k) memset(blk + t0 * k, 0, sizeof(float) * (size_t)((t1 - t0) * k));
            for (long l = 0; l < lanes; l++) {
                float *dst = blk + l;
                const float *src = lin + l * hw;
                for (long p = t0; p < t1; p++) dst[p * k] = src[p];
            }
        } else {
            for (long l = 0; l < lanes; l++) {
                float *dst = lin + l * hw;
                const float *src = blk + l;
                for (long p = t0; p < t1; p++) dst[p] = src[p * k];
            }
        }
    }
}

static void reformat_part(const void *job, int part, int parts) {
    const mi_breformat_args *a = job;
    const long cb = ceil_div(a->c, a->k), spans = ceil_div(a->hw, SPAN);
    long b0, e0;
    mi_pool_share(a->n * cb * spans, part, parts, &b0, &e0);
    for (long i = b0; i < e0; i++) {
        const long s = i % spans, b = i / spans % cb, n = i / (spans * cb);
        move(a, n, b, s * SPAN, lmin(a->hw, (s + 1) * SPAN));
    }
}

int mi_breformat_f32(const mi_breformat_args *a) {
    if (!a->x || !a->y || a->k < 1 || ANY_NEGATIVE(a->n, a->c, a->hw)) return MI_EARGS;
    const long floats = a->n * ceil_div(a->c, a->k) * a->k * a->hw;
    if (floats == 0) return MI_OK;
    if (floats < PARALLEL_FLOATS || mi_pool_run(reformat_part, a) != 0)
        reformat_part(a, 0, 1);
    return MI_OK;
}
