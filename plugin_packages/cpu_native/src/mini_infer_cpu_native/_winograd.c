/*
 * Winograd convolution transforms, F(2x2, 3x3) and F(4x4, 3x3): a 3x3 stride-1 convolution as
 * GEMMs on transformed input tiles (16 of them for 2x2 output tiles, 36 for 4x4). These
 * functions do the input, output and weight transforms; the GEMMs run between them (see
 * _winograd.py). Part of the _kernels extension (same conventions: one argument struct per
 * exported kernel, _args.h; C-contiguous float32, every size a long). The input and output
 * transforms run on the pool (_pool.c), split by channels, each thread with rows of its own.
 */
#include <string.h>

#include "_args.h"
#include "_common.h"
#include "_epi.h"
#include "_pool.h"

/* d[i] and e[i] (i < n): consecutive rows of wp floats in rows (d first, then e) */
static inline void split_rows(float *rows, int n, long wp, float **d, float **e) {
    for (int i = 0; i < n; i++) {
        d[i] = rows + i * wp;
        e[i] = rows + (n + i) * wp;
    }
}

/* d[i] (i < n) = input row first + i of plane (h x wd), placed at column pl of a zero row of
 * wp floats (rows outside the plane stay zero); cols: how many input columns fit */
static inline void load_rows(float *const *d, int n, const float *plane, long first, long h,
                             long wd, long wp, long pl, long cols) {
    for (int i = 0; i < n; i++) {
        long r = first + i;
        memset(d[i], 0, sizeof(float) * wp);
        if (r >= 0 && r < h && cols > 0) memcpy(d[i] + pl, plane + r * wd, sizeof(float) * cols);
    }
}

/*
 * Winograd F(2x2, 3x3): a 3x3 stride-1 convolution as 16 GEMMs on transformed 4x4 input
 * tiles, 2.25x fewer multiplications than the direct product. Output tile (ty, tx) covers
 * output rows 2ty, 2ty+1 and columns 2tx, 2tx+1 and reads the 4x4 input patch d at
 * (2ty - pt, 2tx - pl) (zero outside the input). These two functions do the transforms of
 * the tile rows [ty0, ty1) of one image; the GEMMs run between them (the compiled GEMM's
 * batch, or NumPy's matmul on a CPU without AVX-512).
 *
 * Input: v[k, c, t] = (B^T d B)[k] with t = (ty - ty0) * tw + tx, v (16, C, T).
 * B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. The row combinations run over whole
 * (zero-bordered) input rows first, then each tile's column combinations (vectorised over
 * the tiles of a row). rows: 8 * (2*tw + 2) floats (the d and e rows).
 */
CLONES static void wino_in(const float *restrict x, float *restrict v, float *restrict rows,
                           long c, long h, long wd, long pt, long pl, long tw, long ty0,
                           long ty1, long ch0, long ch1) {
    long wp = 2 * tw + 2, t_all = (ty1 - ty0) * tw, cols = lmin(wd, wp - pl);
    float *d[4], *e[4];
    split_rows(rows, 4, wp, d, e);
    for (long ch = ch0; ch < ch1; ch++) {
        const float *plane = x + ch * h * wd;
        for (long ty = ty0; ty < ty1; ty++) {
            load_rows(d, 4, plane, 2 * ty - pt, h, wd, wp, pl, cols);
            for (long j = 0; j < wp; j++) {
                e[0][j] = d[0][j] - d[2][j];
                e[1][j] = d[1][j] + d[2][j];
                e[2][j] = d[2][j] - d[1][j];
                e[3][j] = d[1][j] - d[3][j];
            }
            float *out = v + ch * t_all + (ty - ty0) * tw;
            long ks = c * t_all; /* from one k to the next */
            for (int i = 0; i < 4; i++) {
                const float *r = e[i];
                float *o0 = out + (4 * i) * ks, *o1 = o0 + ks, *o2 = o1 + ks, *o3 = o2 + ks;
                for (long t = 0; t < tw; t++) {
                    float a = r[2 * t], b = r[2 * t + 1], cc = r[2 * t + 2], dd = r[2 * t + 3];
                    o0[t] = a - cc;
                    o1[t] = b + cc;
                    o2[t] = cc - b;
                    o3[t] = b - dd;
                }
            }
        }
    }
}

/*
 * Output: y tile = A^T m A with A^T = [1 1 1 0; 0 1 -1 -1], m[k] = mm[k, m, t] (16, M, T),
 * plus bias, residual and the clamp, written into y (M, oh, ow) (the image's output; the
 * tiles past an odd edge are dropped). rows: 4 * tw floats.
 */
CLONES static void wino_out(const float *restrict mm, float *restrict y,
                            const float *restrict bias, const float *restrict res,
                            float *restrict rows, long m, long oh, long ow, long tw, long ty0,
                            long ty1, float lo, float hi, long f0, long f1) {
    long t_all = (ty1 - ty0) * tw, ks = m * t_all;
    float *y0 = rows, *y1 = rows + 2 * tw;
    for (long f = f0; f < f1; f++) {
        float b = bias ? bias[f] : 0.0f;
        for (long ty = ty0; ty < ty1; ty++) {
            const float *in = mm + f * t_all + (ty - ty0) * tw;
            for (long t = 0; t < tw; t++) {
                float q[16];
                for (int k = 0; k < 16; k++) q[k] = in[k * ks + t];
                float s00 = q[0] + q[4] + q[8], s01 = q[1] + q[5] + q[9];
                float s02 = q[2] + q[6] + q[10], s03 = q[3] + q[7] + q[11];
                float s10 = q[4] - q[8] - q[12], s11 = q[5] - q[9] - q[13];
                float s12 = q[6] - q[10] - q[14], s13 = q[7] - q[11] - q[15];
                y0[2 * t] = s00 + s01 + s02 + b;
                y0[2 * t + 1] = s01 - s02 - s03 + b;
                y1[2 * t] = s10 + s11 + s12 + b;
                y1[2 * t + 1] = s11 - s12 - s13 + b;
            }
            long r = 2 * ty;
            long base = f * oh * ow;
            finish_row(y + base + r * ow, y0, res ? res + base + r * ow : NULL, ow, lo, hi);
            if (r + 1 < oh)
                finish_row(y + base + (r + 1) * ow, y1, res ? res + base + (r + 1) * ow : NULL,
                           ow, lo, hi);
        }
    }
}

/* the weight transforms: u[k, f, ch] (nk x M x C) = per_filter of each 3x3 filter w[f, ch],
 * a block of filters at a time, whose nk rows are then written out at once */
enum { WBLOCK = 128 };
typedef void (*filter_fn)(const float *g, float *out, long stride);

static inline void weights_by_block(const float *restrict w, float *restrict u, long mc, int nk,
                                    filter_fn per_filter) {
    float blk[36 * WBLOCK];
    for (long i0 = 0; i0 < mc; i0 += WBLOCK) {
        long nb = lmin(WBLOCK, mc - i0);
        for (long b = 0; b < nb; b++) per_filter(w + 9 * (i0 + b), blk + b, WBLOCK);
        for (int k = 0; k < nk; k++)
            memcpy(u + k * mc + i0, blk + k * WBLOCK, sizeof(float) * nb);
    }
}

/* out[k * stride] = (G g G^T)[k] for the 3x3 filter g, G of F(2x2, 3x3) (below) */
static inline void filter2(const float *g, float *out, long stride) {
    float t[4][3];
    for (int j = 0; j < 3; j++) { /* G g: rows */
        t[0][j] = g[j];
        t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
        t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
        t[3][j] = g[6 + j];
    }
    for (int r = 0; r < 4; r++) { /* (G g) G^T: columns */
        out[(4 * r + 0) * stride] = t[r][0];
        out[(4 * r + 1) * stride] = 0.5f * (t[r][0] + t[r][1] + t[r][2]);
        out[(4 * r + 2) * stride] = 0.5f * (t[r][0] - t[r][1] + t[r][2]);
        out[(4 * r + 3) * stride] = t[r][2];
    }
}

/*
 * Winograd weights: u[k, f, ch] = (G g G^T)[k] for each 3x3 filter g = w[f, ch] (w is M x C
 * x 3 x 3), G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]; u is 16 x M x C.
 */
CLONES static void wino_weights(const float *restrict w, float *restrict u, long m, long c) {
    weights_by_block(w, u, m * c, 16, filter2);
}

/*
 * Winograd F(4x4, 3x3): output tile (ty, tx) covers output rows 4ty..4ty+3 and columns
 * 4tx..4tx+3 and reads the 6x6 input patch d at (4ty - pt, 4tx - pl) (zero outside the input):
 * 36 GEMMs for 16 outputs, 4x fewer multiplications than the direct product (F(2x2, 3x3):
 * 2.25x) for larger transforms and a little more rounding (interpolation points 0, +-1, +-2).
 *
 * Input: v[k, c, t] = (B^T d B)[k] with k = 6 * row + col, t = (ty - ty0) * tw + tx, v (36, C, T).
 * B^T rows: [4 0 -5 0 1 0], [0 -4 -4 1 1 0], [0 4 -4 -1 1 0], [0 -2 -1 2 1 0],
 * [0 2 -1 -2 1 0], [0 4 0 -5 0 1]; rows first over whole zero-bordered input rows, then each
 * tile's columns. rows: 12 * (4*tw + 2) floats.
 */
#define BT6(o0, o1, o2, o3, o4, o5, a0, a1, a2, a3, a4, a5) \
    do {                                                    \
        o0 = 4.0f * (a0) - 5.0f * (a2) + (a4);              \
        o1 = -4.0f * ((a1) + (a2)) + (a3) + (a4);           \
        o2 = 4.0f * ((a1) - (a2)) - (a3) + (a4);            \
        o3 = 2.0f * ((a3) - (a1)) - (a2) + (a4);            \
        o4 = 2.0f * ((a1) - (a3)) - (a2) + (a4);            \
        o5 = 4.0f * (a1) - 5.0f * (a3) + (a5);              \
    } while (0)

CLONES static void wino4_in(const float *restrict x, float *restrict v, float *restrict rows,
                            long c, long h, long wd, long pt, long pl, long tw, long ty0,
                            long ty1, long ch0, long ch1) {
    long wp = 4 * tw + 2, t_all = (ty1 - ty0) * tw, cols = lmin(wd, wp - pl);
    long ks = c * t_all; /* from one k to the next */
    float *d[6], *e[6];
    split_rows(rows, 6, wp, d, e);
    for (long ch = ch0; ch < ch1; ch++) {
        const float *plane = x + ch * h * wd;
        for (long ty = ty0; ty < ty1; ty++) {
            load_rows(d, 6, plane, 4 * ty - pt, h, wd, wp, pl, cols);
            for (long j = 0; j < wp; j++)
                BT6(e[0][j], e[1][j], e[2][j], e[3][j], e[4][j], e[5][j],
                    d[0][j], d[1][j], d[2][j], d[3][j], d[4][j], d[5][j]);
            float *out = v + ch * t_all + (ty - ty0) * tw;
            for (int i = 0; i < 6; i++) {
                const float *r = e[i];
                float *o0 = out + (6 * i) * ks, *o1 = o0 + ks, *o2 = o1 + ks, *o3 = o2 + ks,
                      *o4 = o3 + ks, *o5 = o4 + ks;
                for (long t = 0; t < tw; t++) {
                    const float *a = r + 4 * t;
                    BT6(o0[t], o1[t], o2[t], o3[t], o4[t], o5[t],
                        a[0], a[1], a[2], a[3], a[4], a[5]);
                }
            }
        }
    }
}

/*
 * Output: y tile = A^T m A with A^T rows [1 1 1 1 1 0], [0 1 -1 2 -2 0], [0 1 1 4 4 0],
 * [0 1 -1 8 -8 1], m[k] = mm[k, m, t] (36, M, T), plus bias, residual and the clamp, into y
 * (M, oh, ow) (the tile rows and columns past the edge are dropped). rows: 16 * tw floats.
 */
#define AT6(o0, o1, o2, o3, a0, a1, a2, a3, a4, a5)  \
    do {                                             \
        float p1 = (a1) + (a2), m1 = (a1) - (a2);    \
        float p2 = (a3) + (a4), m2 = (a3) - (a4);    \
        o0 = (a0) + p1 + p2;                         \
        o1 = m1 + 2.0f * m2;                         \
        o2 = p1 + 4.0f * p2;                         \
        o3 = m1 + 8.0f * m2 + (a5);                  \
    } while (0)

CLONES static void wino4_out(const float *restrict mm, float *restrict y,
                             const float *restrict bias, const float *restrict res,
                             float *restrict rows, long m, long oh, long ow, long tw, long ty0,
                             long ty1, float lo, float hi, long f0, long f1) {
    enum { TB = 16 }; /* tiles per step: the loops over them vectorise */
    long t_all = (ty1 - ty0) * tw, ks = m * t_all;
    float *yr[4];
    for (int i = 0; i < 4; i++) yr[i] = rows + i * 4 * tw;
    for (long f = f0; f < f1; f++) {
        float b = bias ? bias[f] : 0.0f;
        for (long ty = ty0; ty < ty1; ty++) {
            const float *in = mm + f * t_all + (ty - ty0) * tw;
            for (long t0 = 0; t0 < tw; t0 += TB) {
                long nt = lmin(TB, tw - t0);
                float s[4][6][TB];
                for (int j = 0; j < 6; j++) { /* A^T m: rows, tile by tile */
                    const float *q = in + j * ks + t0;
                    for (long t = 0; t < nt; t++)
                        AT6(s[0][j][t], s[1][j][t], s[2][j][t], s[3][j][t], q[t],
                            q[6 * ks + t], q[12 * ks + t], q[18 * ks + t], q[24 * ks + t],
                            q[30 * ks + t]);
                }
                for (int r = 0; r < 4; r++) { /* (A^T m) A: columns */
                    float *o = yr[r] + 4 * t0;
                    for (long t = 0; t < nt; t++) {
                        AT6(o[4 * t], o[4 * t + 1], o[4 * t + 2], o[4 * t + 3], s[r][0][t],
                            s[r][1][t], s[r][2][t], s[r][3][t], s[r][4][t], s[r][5][t]);
                        o[4 * t] += b, o[4 * t + 1] += b, o[4 * t + 2] += b, o[4 * t + 3] += b;
                    }
                }
            }
            long base = f * oh * ow;
            for (int r = 0; r < 4 && 4 * ty + r < oh; r++) {
                long row = base + (4 * ty + r) * ow;
                finish_row(y + row, yr[r], res ? res + row : NULL, ow, lo, hi);
            }
        }
    }
}

/*
 * F(4x4, 3x3) weights: u[k, f, ch] = (G g G^T)[k] for each 3x3 filter g = w[f, ch], G rows
 * [1/4 0 0], [-1/6 -1/6 -1/6], [-1/6 1/6 -1/6], [1/24 1/12 1/6], [1/24 -1/12 1/6], [0 0 1];
 * u is 36 x M x C.
 */
#define G3(o, a0, a1, a2) /* products by the reciprocals: divisions made it 4x slower */ \
    do {                                                                                   \
        const float s6 = 1.0f / 6.0f, s12 = 1.0f / 12.0f, s24 = 1.0f / 24.0f;              \
        o[0] = 0.25f * (a0);                                                               \
        o[1] = -((a0) + (a1) + (a2)) * s6;                                                 \
        o[2] = -((a0) - (a1) + (a2)) * s6;                                                 \
        o[3] = (a0) * s24 + (a1) * s12 + (a2) * s6;                                        \
        o[4] = (a0) * s24 - (a1) * s12 + (a2) * s6;                                        \
        o[5] = (a2);                                                                       \
    } while (0)

/* out[k * stride] = (G g G^T)[k] for the 3x3 filter g, G of F(4x4, 3x3) (G3) */
static inline void filter4(const float *g, float *out, long stride) {
    float t[3][6], col[6];
    for (int j = 0; j < 3; j++) G3(t[j], g[j], g[3 + j], g[6 + j]); /* G g, by column */
    for (int r = 0; r < 6; r++) { /* (G g) G^T: row r of G g is t[0..2][r] */
        G3(col, t[0][r], t[1][r], t[2][r]);
        for (int s = 0; s < 6; s++) out[(6 * r + s) * stride] = col[s];
    }
}

CLONES static void wino4_weights(const float *restrict w, float *restrict u, long m,
                                 long c) {
    weights_by_block(w, u, m * c, 36, filter4);
}

/* ---- the transforms on the pool: channels split between the threads ---- */
typedef struct {
    const float *in, *bias, *res;
    float *out, *rows;
    long rows_floats, c, h, wd, pt, pl, tw, ty0, ty1;
    float lo, hi;
    int tile;
    int act; /* after the clamp (_epi.h) */
    float act_alpha, act_beta;
} wino_job;

/* the rows scratch of part `part`: the caller's for part 0, the thread's own otherwise */
static float *part_rows(const wino_job *j, int part) {
    return part == 0 ? j->rows : mi_pool_scratch(j->rows_floats);
}

static void in_part(const void *arg, int part, int parts) {
    const wino_job *j = arg;
    long c0, c1;
    mi_pool_share(j->c, part, parts, &c0, &c1);
    float *rows = part_rows(j, part);
    if (c0 >= c1 || !rows) return;
    (j->tile == 2 ? wino_in : wino4_in)(j->in, j->out, rows, j->c, j->h, j->wd, j->pt, j->pl,
                                        j->tw, j->ty0, j->ty1, c0, c1);
}

static void out_part(const void *arg, int part, int parts) {
    const wino_job *j = arg;
    long f0, f1;
    mi_pool_share(j->c, part, parts, &f0, &f1);
    float *rows = part_rows(j, part);
    if (f0 >= f1 || !rows) return;
    (j->tile == 2 ? wino_out : wino4_out)(j->in, j->out, j->bias, j->res, rows, j->c, j->h,
                                          j->wd, j->tw, j->ty0, j->ty1, j->lo, j->hi, f0, f1);
    if (j->act == MI_EPI_NONE) return;
    long r0 = j->tile * j->ty0, r1 = lmin(j->h, j->tile * j->ty1); /* h: oh here */
    for (long f = f0; f < f1; f++) /* the rows just written, still in cache */
        mi_epi_row(j->out + (f * j->h + r0) * j->wd, (r1 - r0) * j->wd, j->act, j->act_alpha,
                   j->act_beta);
}

/* input tiles, F(2x2, 3x3) (tile 2) or F(4x4, 3x3) (tile 4), on the pool */
int mi_wino_in_f32(const mi_wino_in_args *a) {
    if (!a->x || !a->v || !a->rows || (a->tile != 2 && a->tile != 4) ||
        ANY_NEGATIVE(a->c, a->h, a->wd, a->pt, a->pl, a->tw, a->ty0, a->ty1 - a->ty0))
        return MI_EARGS;
    wino_job j = {a->x, NULL, NULL, a->v, a->rows, 2 * (a->tile + 2) * (a->tile * a->tw + 2),
                  a->c, a->h, a->wd, a->pt, a->pl, a->tw, a->ty0, a->ty1, 0.0f, 0.0f, a->tile,
                  MI_EPI_NONE, 0.0f, 0.0f};
    if (mi_pool_run(in_part, &j)) in_part(&j, 0, 1);
    return MI_OK;
}

/* output tiles, plus bias and residual, clamped, on the pool */
int mi_wino_out_f32(const mi_wino_out_args *a) {
    if (!a->mm || !a->y || !a->rows || (a->tile != 2 && a->tile != 4) ||
        ANY_NEGATIVE(a->m, a->oh, a->ow, a->tw, a->ty0, a->ty1 - a->ty0) ||
        a->tile * a->tw < a->ow || (a->ty1 > a->ty0 && a->tile * (a->ty1 - 1) >= a->oh) ||
        !mi_epi_valid(a->act))
        return MI_EARGS;
    wino_job j = {a->mm, a->bias, a->res, a->y, a->rows, a->tile * a->tile * a->tw, a->m,
                  a->oh, a->ow, 0, 0, a->tw, a->ty0, a->ty1, a->lo, a->hi, a->tile,
                  a->act, a->act_alpha, a->act_beta};
    if (mi_pool_run(out_part, &j)) out_part(&j, 0, 1);
    return MI_OK;
}

/* the weight transform of either tile size */
int mi_wino_weights_f32(const mi_wino_weights_args *a) {
    if (!a->w || !a->u || (a->tile != 2 && a->tile != 4) || ANY_NEGATIVE(a->m, a->c))
        return MI_EARGS;
    (a->tile == 2 ? wino_weights : wino4_weights)(a->w, a->u, a->m, a->c);
    return MI_OK;
}
