/*
 * Resize of the last two axes by separable two-tap interpolation (ONNX linear and nearest),
 * float32: y[p, oy, ox] = lerp(lerp(x[p, iy0, ix0], x[p, iy0, ix1], wx),
 *                              lerp(x[p, iy1, ix0], x[p, iy1, ix1], wx), wy)
 * with lerp(a, b, t) = a + t * (b - a). The Python side computes the source rows and columns
 * of every output row and column and their weights (the coordinate transformation, rounding
 * and clamping of ONNX's modes: nearest is one tap, weight 0), so the kernel knows no mode.
 *
 * Each input row is interpolated along the width once into a row buffer (upsampling reads
 * it for several output rows), and each output row is then one vectorisable pass over two
 * buffers. On the pool, split by output rows of all planes, each thread with its own two
 * buffers (mi_pool_scratch).
 */
#include "_args.h"
#include "_common.h"
#include "_pool.h"

#define PARALLEL_MIN 16384L

CLONES static void hrow(const float *restrict row, const long *restrict ix,
                        const float *restrict wx, float *restrict out, long ow) {
    for (long o = 0; o < ow; o++) {
        float a = row[ix[2 * o]], b = row[ix[2 * o + 1]];
        out[o] = a + wx[o] * (b - a);
    }
}

CLONES static void vrow(const float *restrict a, const float *restrict b, float t,
                        float *restrict y, long ow) {
    if (t == 0.0f) {
        memcpy(y, a, (size_t)ow * sizeof(float));
        return;
    }
    for (long o = 0; o < ow; o++) y[o] = a[o] + t * (b[o] - a[o]);
}

/* output rows [u0, u1) of all planes (u = plane * oh + oy); work: 2 * ow floats */
static void resize_range(const mi_resize2d_args *j, float *work, long u0, long u1) {
    long ow = j->ow, oh = j->oh;
    float *buf[2] = {work, work + ow};
    long key[2] = {-1, -1}; /* plane * h + input row held by each buffer */
    for (long u = u0; u < u1; u++) {
        long p = u / oh, oy = u % oh;
        const float *plane = j->x + p * j->h * j->wd;
        long need[2] = {p * j->h + j->iy[2 * oy], p * j->h + j->iy[2 * oy + 1]};
        int slot[2];
        for (int t = 0; t < 2; t++) {
            int s = key[0] == need[t] ? 0 : key[1] == need[t] ? 1 : -1;
            if (s < 0) { /* fill the buffer the other tap does not use */
                s = t == 0 ? (key[0] == need[1] ? 1 : 0) : 1 - slot[0];
                hrow(plane + (need[t] - p * j->h) * j->wd, j->ix, j->wx, buf[s], ow);
                key[s] = need[t];
            }
            slot[t] = s;
        }
        vrow(buf[slot[0]], buf[slot[1]], j->wy[oy], j->y + u * ow, ow);
    }
}

static void resize_part(const void *arg, int part, int parts) {
    const mi_resize2d_args *j = arg;
    long u0, u1;
    mi_pool_share(j->planes * j->oh, part, parts, &u0, &u1);
    float *work = part == 0 ? j->work : mi_pool_scratch(2 * j->ow);
    if (work && u0 < u1) resize_range(j, work, u0, u1);
}

int mi_resize2d_f32(const mi_resize2d_args *a) {
    if (!a->x || !a->y || !a->iy || !a->wy || !a->ix || !a->wx || !a->work ||
        ANY_NEGATIVE(a->planes, a->h, a->wd, a->oh, a->ow))
        return MI_EARGS;
    /* every source index inside its axis (the Python side clamps them) */
    for (long i = 0; i < 2 * a->oh; i++)
        if (a->iy[i] < 0 || a->iy[i] >= a->h) return MI_EARGS;
    for (long i = 0; i < 2 * a->ow; i++)
        if (a->ix[i] < 0 || a->ix[i] >= a->wd) return MI_EARGS;
    if (a->planes * a->oh * a->ow < PARALLEL_MIN || mi_pool_run(resize_part, a))
        resize_range(a, a->work, 0, a->planes * a->oh);
    return MI_OK;
}
