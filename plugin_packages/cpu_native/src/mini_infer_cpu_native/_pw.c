/*
 * Convolutions whose product is short (K = C * kh * kw rows, at most MAX_K) over a large map,
 * group 1, float32, with bias, residual, a clamp (Relu/Clip) and an activation in the same
 * pass: y[n, m] = act(clamp(bias[m] + res[n, m] + sum_k w[m, k] x_k[n]))
 *   * pointwise: 1x1, stride 1, unpadded (x_k = input channel k; MobileNetV3's 16->64 over
 *     112x112, RegNet's 32->48, EfficientNet's 40->120 over 28x28);
 *   * direct: a few input channels (the stems: 3 channels, 3x3 or 7x7, stride 2; x_k = the
 *     input shifted by tap k).
 *
 * The general GEMM (_gemm.c) spent its time on per-tile overheads and memory traffic there
 * (K 16-64: a tile's FMAs are few for the panels it packs and the partial sums it keeps), and
 * im2col wrote the stems' 27-147 rows of columns out and read them back. Here the map is read
 * once: per tile of NR = 24 output columns, the K rows of those columns are gathered into a
 * small buffer (K x 24 floats, in L1: rows of a large map lie a multiple of 4 KiB apart and
 * evict each other when read in place), then every block of 4 output channels sums them in
 * 12 registers (4 x 3 vectors: 3 loads and 4 broadcasts per 12 FMAs), applies the epilogue
 * (_epi.h) to the registers and stores once. The direct case gathers per band of BAND output
 * rows the input rows they read, zero-bordered and split by column phase (column mod stride,
 * as _dconv.c does), so that each tap's 24 columns are 24 consecutive floats; x_k is then
 * that copy at tap k's offset (koff).
 *
 * Measured on a loaded 2-core Zen (AVX2), one thread, engine runs interleaved with the GEMM
 * path and onnxruntime (Relu -> Conv -> Relu models): 24->72 over 56x56 1.39 -> 0.95 ms (ort
 * 0.88), 40->120 over 28x28 0.69 -> 0.58 ms (ort 0.47), 64->24 over 56x56 0.98 -> 0.84 ms;
 * the stems 3->32 3x3 stride 2 over 224x224 1.62 -> 1.38 ms (ort 1.31), 3->16 0.87 -> 0.81;
 * at two threads 20-40% less than the GEMM path for the same layers. The strips (pointwise,
 * below) took 16->64 over 112x112 from 0.96 to 0.73 ms (kernel alone, one thread).
 *
 * AVX2 + FMA only (mi_act_isa() >= 1; the Python side sends nothing else here); a plain C
 * loop computes the same sums elsewhere (tests that lower the ISA). On the pool, split by
 * (image, tile) or (image, band), each thread gathering into its own buffer.
 */
#include "_args.h"
#include "_common.h"
#include "_epi.h"
#include "_pool.h"

#define NR 24               /* output columns per tile (3 vectors) */
#define MAX_K 256           /* c * kh * kw at most */
#define BAND 4              /* output rows per band (direct case) */
#define STRIP_FLOATS 6144L  /* pointwise: a strip's gathered columns (24 KiB: in L1) */
#define PARALLEL_MIN 65536L /* outputs below which one thread does it all */

int mi_pwconv2d_f32(const mi_dconv2d_args *a);
long mi_pwconv2d_work(const mi_dconv2d_args *a);

/* geometry of a call: pointwise or direct; for the direct case the copy's rows per band
 * (hb), phase width (wq) */
typedef struct {
    int pointwise;
    long k, hb, wq, ow8, nb;
} pw_geo;

static pw_geo geometry(const mi_dconv2d_args *a) {
    pw_geo g = {0, a->c * a->kh * a->kw, 0, 0, 0, NR};
    /* pointwise: columns per strip, a multiple of NR whose K rows fill STRIP_FLOATS */
    g.nb = lmax(NR, STRIP_FLOATS / lmax(g.k, 1) / NR * NR);
    g.pointwise = a->kh == 1 && a->kw == 1 && a->sh == 1 && a->sw == 1 && a->pt == 0 &&
                  a->pl == 0 && a->oh == a->h && a->ow == a->wd;
    g.hb = (BAND - 1) * a->sh + (a->kh - 1) * a->dh + 1;
    g.ow8 = (a->ow + 7) / 8 * 8;
    g.wq = g.ow8 + (a->kw - 1) * a->dw / a->sw + 1;
    return g;
}

static long work_floats(const mi_dconv2d_args *a, const pw_geo *g) {
    return g->pointwise ? g->k * g->nb : a->c * g->hb * a->sw * g->wq;
}

/* the K rows of `cols` <= nb columns (row kk at x + kk * ld) as q[kk * nb + j], zero past
 * cols to the next vector */
static void gather_cols(const float *restrict x, long ld, long k, long cols, long nb,
                        float *restrict q) {
    long pad = (cols + 7) / 8 * 8 - cols;
    for (long kk = 0; kk < k; kk++) {
        memcpy(q + kk * nb, x + kk * ld, sizeof(float) * cols);
        if (pad) memset(q + kk * nb + cols, 0, sizeof(float) * pad);
    }
}

/* input rows [row0, row0 + hb) of c channels, zero-bordered, columns split by phase:
 * q[((ch * hb + i) * sw + p) * wq + j] = x[ch, row0 + i, j * sw + p - pl] (0 outside) */
CLONES static void gather_band(const float *restrict x, float *restrict q, long c, long h,
                               long wd, long hb, long sw, long wq, long row0, long pl) {
    for (long ch = 0; ch < c; ch++)
        for (long i = 0; i < hb; i++) {
            long ih = row0 + i;
            for (long p = 0; p < sw; p++) {
                float *dst = q + ((ch * hb + i) * sw + p) * wq;
                if (ih < 0 || ih >= h) {
                    memset(dst, 0, sizeof(float) * wq);
                    continue;
                }
                const float *row = x + (ch * h + ih) * wd;
                /* j with 0 <= j * sw + p - pl < wd */
                long j0 = lmin(wq, lmax(0, (pl - p + sw - 1) / sw));
                long j1 = lmax(j0, lmin(wq, (wd + pl - p + sw - 1) / sw));
                memset(dst, 0, sizeof(float) * j0);
                const float *src = row + j0 * sw + p - pl;
                if (sw == 1)
                    memcpy(dst + j0, src, sizeof(float) * (j1 - j0));
                else if (sw == 2)
                    for (long j = 0; j < j1 - j0; j++) dst[j0 + j] = src[2 * j];
                else
                    for (long j = 0; j < j1 - j0; j++) dst[j0 + j] = src[j * sw];
                memset(dst + j1, 0, sizeof(float) * (wq - j1));
            }
        }
}

/* a tile in plain C: mr output channels x cols columns */
static void tile_scalar(const float *xb, const long *koff, long k, const float *w, long mr,
                        const float *bias, float *y, const float *res, long ystep, long cols,
                        const mi_epi_args *e) {
    for (long i = 0; i < mr; i++)
        for (long j = 0; j < cols; j++) {
            float s = bias ? bias[i] : 0.0f;
            for (long kk = 0; kk < k; kk++) s += w[i * k + kk] * xb[koff[kk] + j];
            if (res) s += res[i * ystep + j];
            s = s < e->lo ? e->lo : s;
            s = s > e->hi ? e->hi : s;
            y[i * ystep + j] = mi_epi_scalar(s, e->act, e->alpha, e->beta);
        }
}

typedef void (*tile_fn)(const float *, const long *, long, const float *, const float *,
                        float *, const float *, long, long, const mi_epi_args *);

#if MI_ACT_X86
/* MR output channels (rows of w, k apart) x V vectors of 8 columns: x_kk's V vectors loaded
 * once, each channel's weight broadcast, MR * V FMAs; then residual, clamp, activation on the
 * registers and one store per vector, the last masked where fewer than 8 columns remain */
#define PW_TILE(MR, V)                                                                      \
    __attribute__((target("avx2,fma"))) static void tile_##MR##_##V(                        \
        const float *restrict xb, const long *restrict koff, long k,                        \
        const float *restrict w, const float *restrict bias, float *restrict y,             \
        const float *restrict res, long ystep, long cols, const mi_epi_args *e) {           \
        __m256 acc[MR][V];                                                                  \
        _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++)                                \
            _Pragma("GCC unroll 3") for (int v = 0; v < V; v++) acc[i][v] =                 \
                _mm256_set1_ps(bias ? bias[i] : 0.0f);                                      \
        for (long kk = 0; kk < k; kk++) {                                                   \
            const float *p = xb + koff[kk];                                                 \
            __m256 d[V];                                                                    \
            _Pragma("GCC unroll 3") for (int v = 0; v < V; v++) d[v] =                      \
                _mm256_loadu_ps(p + 8 * v);                                                 \
            _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++) {                          \
                const __m256 c = _mm256_broadcast_ss(w + i * k + kk);                       \
                _Pragma("GCC unroll 3") for (int v = 0; v < V; v++) acc[i][v] =             \
                    _mm256_fmadd_ps(c, d[v], acc[i][v]);                                    \
            }                                                                               \
        }                                                                                   \
        MI_EPI_STORE_TILE(MR, V, acc, y, res, ystep, cols, e);                              \
    }
PW_TILE(4, 1)
PW_TILE(4, 2)
PW_TILE(4, 3)
PW_TILE(2, 1)
PW_TILE(2, 2)
PW_TILE(2, 3)
PW_TILE(1, 1)
PW_TILE(1, 2)
PW_TILE(1, 3)

/* [MR 4, 2, 1][V - 1] */
static const tile_fn tiles[3][3] = {{tile_4_1, tile_4_2, tile_4_3},
                                    {tile_2_1, tile_2_2, tile_2_3},
                                    {tile_1_1, tile_1_2, tile_1_3}};
#endif

/* every output channel of `ncols` columns (tiles of NR): y, res at the first channel's
 * first column. Each block of channels runs along all the columns before the next: its
 * weights stay in L1, and each output row is written NR * 4 bytes at a time in one stream */
static void channels(const mi_dconv2d_args *a, int fast, int pointwise, const float *xb,
                     const long *koff,
                     long k, float *y, const float *res, long ystep, long ncols,
                     const mi_epi_args *e0) {
    mi_epi_args plain = {e0->lo, e0->hi, MI_EPI_NONE, 0.0f, 0.0f};
    /* the direct case (stems) with Sigmoid or Swish: the tiles store the clamped sums and
     * one pass activates each block's rows just written (the exp's constants and the 12
     * accumulators do not fit the registers together): EfficientNet's stem, 3->32 3x3
     * stride 2 over 224x224 + SiLU, 1.61 -> 1.48 and 2.06 -> 1.72 ms (two interleaved runs,
     * one thread). Pointwise tiles gained nothing measurable that way; they keep it in the
     * registers */
    int post = fast && !pointwise && (e0->act == MI_ACT_SIGMOID || e0->act == MI_ACT_SWISH);
    const mi_epi_args *e = post ? &plain : e0;
    for (long m0 = 0; m0 < a->m;) {
        long mr = a->m - m0 >= 4 ? 4 : a->m - m0 >= 2 ? 2 : 1;
        const float *w = a->w + m0 * k, *b = a->bias ? a->bias + m0 : NULL;
        for (long o = 0; o < ncols; o += NR) {
            long cols = lmin(NR, ncols - o);
            float *yo = y + m0 * ystep + o;
            const float *ro = res ? res + m0 * ystep + o : NULL;
#if MI_ACT_X86
            if (fast) {
                tiles[mr == 4 ? 0 : mr == 2 ? 1 : 2][(cols + 7) / 8 - 1](
                    xb + o, koff, k, w, b, yo, ro, ystep, cols, e);
                continue;
            }
#endif
            tile_scalar(xb + o, koff, k, w, mr, b, yo, ro, ystep, cols, e);
        }
#if MI_ACT_X86
        if (post)
            for (long i = 0; i < mr; i++)
                mi_epi_row_avx2(y + (m0 + i) * ystep, ncols, e0->act, e0->alpha, e0->beta);
#endif
        (void)fast;
        m0 += mr;
    }
}

typedef struct {
    const mi_dconv2d_args *a;
    pw_geo g;
} pw_job;

/* units [u0, u1): (image, tile of NR columns) pairs (pointwise) or (image, band of BAND
 * output rows) pairs (direct) */
static void pw_range(const mi_dconv2d_args *a, const pw_geo *g, float *work, long u0,
                     long u1) {
    mi_epi_args e = {a->lo, a->hi, a->act, a->act_alpha, a->act_beta};
    int fast = 0;
#if MI_ACT_X86
    fast = mi_act_isa() >= 1;
#endif
    long k = g->k, koff[MAX_K];
    if (g->pointwise) {
        long p = a->h * a->wd, per = (p + g->nb - 1) / g->nb;
        for (long kk = 0; kk < k; kk++) koff[kk] = kk * g->nb;
        for (long u = u0; u < u1; u++) {
            long img = u / per, p0 = u % per * g->nb, cols = lmin(g->nb, p - p0);
            gather_cols(a->x + img * a->c * p + p0, p, k, cols, g->nb, work);
            long yo = img * a->m * p + p0;
            channels(a, fast, 1, work, koff, k, a->y + yo, a->res ? a->res + yo : NULL, p,
                     cols, &e);
        }
        return;
    }
    long rowq = a->sw * g->wq, taps = a->kh * a->kw, plane = a->oh * a->ow;
    for (long kk = 0; kk < k; kk++) { /* (channel, tap) */
        long t = kk % taps, col = t % a->kw * a->dw;
        koff[kk] = (kk / taps * g->hb + t / a->kw * a->dh) * rowq + (col % a->sw) * g->wq +
                   col / a->sw;
    }
    long per = (a->oh + BAND - 1) / BAND;
    for (long u = u0; u < u1; u++) {
        long img = u / per, r0 = u % per * BAND, r1 = lmin(a->oh, r0 + BAND);
        gather_band(a->x + img * a->c * a->h * a->wd, work, a->c, a->h, a->wd, g->hb, a->sw,
                    g->wq, r0 * a->sh - a->pt, a->pl);
        for (long r = r0; r < r1; r++)
            {
                long yo = img * a->m * plane + r * a->ow;
                channels(a, fast, 0, work + (r - r0) * a->sh * rowq, koff, k, a->y + yo,
                         a->res ? a->res + yo : NULL, plane, a->ow, &e);
            }
    }
}

static long units(const mi_dconv2d_args *a, const pw_geo *g) {
    if (g->pointwise) return a->n * ((a->h * a->wd + g->nb - 1) / g->nb);
    return a->n * ((a->oh + BAND - 1) / BAND);
}

static void pw_part(const void *arg, int part, int parts) {
    const pw_job *j = arg;
    long u0, u1;
    mi_pool_share(units(j->a, &j->g), part, parts, &u0, &u1);
    float *work = part == 0 ? j->a->work : mi_pool_scratch(work_floats(j->a, &j->g));
    if (work && u0 < u1) pw_range(j->a, &j->g, work, u0, u1);
}

long mi_pwconv2d_work(const mi_dconv2d_args *a) {
    if (a->group != 1 || a->sw < 1 || a->kh < 1 || a->kw < 1) return -1;
    pw_geo g = geometry(a);
    return work_floats(a, &g);
}

int mi_pwconv2d_f32(const mi_dconv2d_args *a) {
    if (!a->x || !a->w || !a->y || !a->work ||
        ANY_NEGATIVE(a->n, a->c, a->h, a->wd, a->m, a->oh, a->ow, a->pt, a->pl) ||
        ANY_NEGATIVE(a->kh - 1, a->kw - 1, a->sh - 1, a->sw - 1, a->dh - 1, a->dw - 1,
                     MAX_K - a->c * a->kh * a->kw) ||
        a->group != 1 || !mi_epi_valid(a->act))
        return MI_EARGS;
    if (a->n == 0 || a->m == 0 || a->oh == 0 || a->ow == 0) return MI_OK;
    pw_job j = {a, geometry(a)};
    if (a->n * a->m * a->oh * a->ow < PARALLEL_MIN || mi_pool_run(pw_part, &j))
        pw_range(a, &j.g, a->work, 0, units(a, &j.g));
    return MI_OK;
}
