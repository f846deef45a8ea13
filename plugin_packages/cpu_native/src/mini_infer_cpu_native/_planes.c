/* Planes of floats gathered and moved on the pool (_conv_frames.py: a 3-D convolution's
 * input frames stacked along the channels, its residual and output between (N, M, OT) and
 * (N, OT, M) planes). Each destination plane is one memcpy of its source plane, or zeros
 * where its frame f lies outside the source (the temporal padding); the planes are shared
 * out on the pool from 64 KiB on. mi_planes_args: _args.h. */

#include <string.h>

#include "_args.h"
#include "_common.h"
#include "_pool.h"

static void planes_part(const void *job, int part, int parts) {
    const mi_planes_args *a = job;
    long b, e;
    mi_pool_share(a->d0 * a->d1 * a->d2 * a->d3, part, parts, &b, &e);
    const size_t bytes = (size_t)a->plane * sizeof(float);
    for (long i = b; i < e; i++) {
        const long i3 = i % a->d3, i2 = i / a->d3 % a->d2, i1 = i / (a->d3 * a->d2) % a->d1;
        const long i0 = i / (a->d3 * a->d2 * a->d1);
        const long f = i1 * a->s1 + i2 * a->s2 - a->pad;
        float *dst = a->dst + i * a->plane;
        if (f < 0 || f >= a->frames)
            memset(dst, 0, bytes);
        else
            memcpy(dst, a->src + (i0 * a->s0 + i3 * a->s3 + f) * a->plane, bytes);
    }
}

int mi_planes_f32(const mi_planes_args *a) {
    if (!a->src || !a->dst || ANY_NEGATIVE(a->d0, a->d1, a->d2, a->d3, a->s0, a->s1, a->s2,
                                           a->s3, a->pad, a->frames, a->plane, a->src_planes))
        return MI_EARGS;
    const long total = a->d0 * a->d1 * a->d2 * a->d3;
    if (total == 0 || a->plane == 0) return MI_OK;
    /* the largest source plane read: f at most frames - 1 */
    if (a->frames > 0 && (a->d0 - 1) * a->s0 + (a->d3 - 1) * a->s3 + a->frames - 1 >= a->src_planes)
        return MI_EARGS;
    if (total * a->plane < 16384L || mi_pool_run(planes_part, a) != 0) planes_part(a, 0, 1);
    return MI_OK;
}
