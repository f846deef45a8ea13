/*
 * Channel-blocked float32 kernels (issue 26 item 3): tensors held as (N, ceil(C/k), H, W, k),
 * k = 16 on AVX-512F CPUs (TensorFormat CHW16) and 8 on AVX2 + FMA ones (CHW8), the last
 * block's missing channels zeros. The builder's formats pass (builder/formats.py) keeps runs
 * of nodes whose plugins take these formats blocked end to end, reformatting only at their
 * edges, as onnxruntime's NCHWc and OpenVINO's nChw16c do; blocked.py declares them.
 *
 *   * mi_bconv2d_f32: 2-D convolutions of one group (direct and pointwise), grouped ones (each
 *     output block reads its lanes' groups' input channels: ob_range) and depthwise ones (a
 *     1-D convolution is one of height 1), with bias, residual, clamp (Relu / Clip) and the
 *     epilogue activations (_epi.h) in
 *     registers. A dense tile sums OB output blocks x RW output columns (AVX-512: 4 x 6,
 *     2 x 12 or 1 x 16 vectors; AVX2: 2 x 6 or 1 x 12; fewer blocks, more columns, so that
 *     enough sums are independent): per input channel and tap, OB weight vectors
 *     (k output channels each) and one broadcast input value per column, so no im2col and no
 *     transposes: a tap's input value is one float, its weights one vector (a tile's OB
 *     weight vectors adjacent in memory, 64-byte aligned by the packing). Columns whose
 *     taps all lie inside the input run in full tiles of even widths; the border ones one by
 *     one, their taps clipped. An item's input blocks go in passes whose weights fit L1, the
 *     partial sums kept in y. A 1x1 stride-1 unpadded convolution runs over the map as one
 *     row; narrow rows go several to an item. Depthwise:
 *     one block's k channels are one vector, DWRW columns per tile.
 *   * mi_bpool2d_f32: max / average pooling (GlobalAveragePool: one window over the map);
 *   * mi_bbinary_f32: Add / Mul / Sub of two blocked tensors, or of one and a vector per
 *     (image, block) (squeeze-and-excitation's scale, a per-channel constant), and the
 *     scale-and-shift x * a + b of inference BatchNormalization in one pass;
 *   * mi_bpadzero_f32: the padding lanes zeroed again (after an activation f(0) != 0);
 *   * mi_bconcat_f32 / mi_bsplit_f32: Concat and Split on channels (whole blocks copied where
 *     a part starts on a block boundary, lane by lane otherwise);
 *   * mi_bresize_f32: Resize of the spatial axes by _resize.c's two-tap tables (linear,
 *     nearest), one vector of k channels per tap.
 *
 * On the pool (_pool.c): split by (image, block group, output row, column chunk) for the
 * convolutions, (image x block, output row) for pooling, ranges of vectors for the rest.
 * Each output is computed by one thread, so results do not depend on the thread count.
 */
#include "_blocked.h"

#include <stddef.h>

#include "_args.h"
#include "_common.h"
#include "_epi.h"
#include "_pool.h"

#define PARALLEL_MIN 32768L /* multiply-adds (or values) below which one thread does it */
#define CHUNK 64            /* most output columns per dense item (rows split evenly) */
#define ROWS_COLS 96        /* output columns a dense item of narrow rows takes, in rows */
#define CB_L1 8192          /* weight floats a dense pass keeps in L1 (32 KiB) */

/* the widest input channel range a weight row of output block ob spans (c_in for one
 * group) */
static long w_row(const mi_bconv_args *a) { return a->group > 1 ? a->c_w : a->c_in; }

/* the input channels output block ob reads: every one for one group, else those of the
 * groups of its lanes (grouped convolutions: a block may span groups, or a group blocks) */
static void ob_range(const mi_bconv_args *a, long ob, long *lo, long *hi) {
    if (a->group <= 1) {
        *lo = 0, *hi = a->c_in;
        return;
    }
    long cg = a->c_in / a->group, mg = a->c_out / a->group;
    long first = ob * a->k, last = lmin(a->c_out, first + a->k) - 1;
    *lo = (first / mg) * cg, *hi = (last / mg + 1) * cg;
}

#if MI_ACT_X86
#include <immintrin.h>

/* ---- AVX-512F: 16 lanes ---------------------------------------------------------------- */
#define SUF avx512
#define K 16
#define V __m512
#define TGT "avx512f,fma"
#define LOAD(p) _mm512_loadu_ps(p)
#define STORE(p, v) _mm512_storeu_ps(p, v)
#define SET1(f) _mm512_set1_ps(f)
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define ADD(a, b) _mm512_add_ps(a, b)
#define MUL(a, b) _mm512_mul_ps(a, b)
#define SUB(a, b) _mm512_sub_ps(a, b)
#define MAX(a, b) _mm512_max_ps(a, b)
#define MIN(a, b) _mm512_min_ps(a, b)
#define ZERO _mm512_setzero_ps()
#define MASKZ(v, keep) _mm512_maskz_mov_ps((__mmask16)((1u << (keep)) - 1u), v)
#define EPI mi_epi_avx512
#define OBMAX 4
#define RWMAX 16
#define RW_WIDE1 16
#define RW_WIDE2 12
#define RW_WIDE3 6
#define DWRW 8
#include "_blocked_isa.h"
#undef SUF
#undef K
#undef V
#undef TGT
#undef LOAD
#undef STORE
#undef SET1
#undef FMA
#undef ADD
#undef MUL
#undef SUB
#undef MAX
#undef MIN
#undef ZERO
#undef MASKZ
#undef EPI
#undef OBMAX
#undef RWMAX
#undef RW_WIDE1
#undef RW_WIDE2
#undef RW_WIDE3
#undef DWRW

/* ---- AVX2 + FMA: 8 lanes ---------------------------------------------------------------- */
#define SUF avx2
#define K 8
#define V __m256
#define TGT "avx2,fma"
#define LOAD(p) _mm256_loadu_ps(p)
#define STORE(p, v) _mm256_storeu_ps(p, v)
#define SET1(f) _mm256_set1_ps(f)
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define ADD(a, b) _mm256_add_ps(a, b)
#define MUL(a, b) _mm256_mul_ps(a, b)
#define SUB(a, b) _mm256_sub_ps(a, b)
#define MAX(a, b) _mm256_max_ps(a, b)
#define MIN(a, b) _mm256_min_ps(a, b)
#define ZERO _mm256_setzero_ps()
#define MASKZ(v, keep) _mm256_and_ps(v, _mm256_castsi256_ps(mi_tail_avx2(keep)))
#define EPI mi_epi_avx2
#define OBMAX 2
#define RWMAX 12
#define RW_WIDE1 12
#define RW_WIDE2 6
#define RW_WIDE3 6
#define DWRW 8
#include "_blocked_isa.h"
#undef SUF
#undef K
#undef V
#undef TGT
#undef LOAD
#undef STORE
#undef SET1
#undef FMA
#undef ADD
#undef MUL
#undef SUB
#undef MAX
#undef MIN
#undef ZERO
#undef MASKZ
#undef EPI
#undef OBMAX
#undef RWMAX
#undef RW_WIDE1
#undef RW_WIDE2
#undef RW_WIDE3
#undef DWRW

static int cpu_has(int bits) {
    int got = 0;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) got |= 1;
    if (__builtin_cpu_supports("avx512f") && (got & 1)) got |= 2;
    return got & bits;
}
#else
static int cpu_has(int bits) {
    (void)bits;
    return 0;
}
#endif

int mi_blocked_isa(void) { return cpu_has(3); }

void mi_blocked_sizes(long *out) {
    out[0] = (long)sizeof(mi_bconv_args);
    out[1] = (long)sizeof(mi_bpool_args);
    out[2] = (long)sizeof(mi_bbinary_args);
    out[3] = (long)sizeof(mi_bpad_args);
    out[4] = (long)sizeof(mi_bconcat_args);
    out[5] = (long)sizeof(mi_bsplit_args);
    out[6] = (long)sizeof(mi_bresize_args);
    out[7] = (long)sizeof(mi_breformat_args);
}

/* whether this CPU runs blocks of k */
static int runs(long k) { return (k == 16 && cpu_has(2)) || (k == 8 && cpu_has(1)); }

static long ceil_div(long a, long b) { return (a + b - 1) / b; }

/* ---- convolution ------------------------------------------------------------------------ */

typedef struct {
    mi_bconv_args a; /* the geometry run (a pointwise map flattened to one row) */
    long obmax, groups, chunks, width, rows, rblocks, items;
} conv_job;

static void conv_range(const conv_job *j, long i0, long i1) {
    const mi_bconv_args *a = &j->a;
    for (long i = i0; i < i1; i++) {
        if (a->depthwise) {
            long oy = i % a->oh, nb = i / a->oh;
            long cb = nb % a->cb_out, n = nb / a->cb_out;
#if MI_ACT_X86
            if (a->k == 16) dw_item_avx512(a, n, cb, oy);
            else dw_item_avx2(a, n, cb, oy);
#endif
            continue;
        }
        long ch = i % j->chunks, rest = i / j->chunks;
        long rb = rest % j->rblocks;
        rest /= j->rblocks;
        long g = rest % j->groups, n = rest / j->groups;
        long c0 = ch * j->width, c1 = lmin(a->ow, c0 + j->width);
        long oy0 = rb * j->rows, oy1 = lmin(a->oh, oy0 + j->rows);
#if MI_ACT_X86
        if (a->k == 16) dense_item_avx512(a, n, g * j->obmax, oy0, oy1, c0, c1);
        else dense_item_avx2(a, n, g * j->obmax, oy0, oy1, c0, c1);
#endif
        (void)c0, (void)c1, (void)g, (void)n, (void)oy0, (void)oy1;
    }
}

static void conv_part(const void *job, int part, int parts) {
    const conv_job *j = job;
    long b, e;
    mi_pool_share(j->items, part, parts, &b, &e);
    conv_range(j, b, e);
}

int mi_bconv2d_f32(const mi_bconv_args *a) {
    if (!a->x || !a->w || !a->y || !runs(a->k) ||
        ANY_NEGATIVE(a->n, a->c_in, a->c_out, a->pt, a->pl, a->oh, a->ow, a->h, a->wd) ||
        a->kh < 1 || a->kw < 1 || a->sh < 1 || a->sw < 1 || a->dh < 1 || a->dw < 1 ||
        a->cb_in != ceil_div(a->c_in, a->k) || a->cb_out != ceil_div(a->c_out, a->k) ||
        (a->depthwise && a->c_in != a->c_out) || !mi_epi_valid((int)a->act) || a->group < 0 ||
        (a->group > 1 && (a->depthwise || a->c_in % a->group || a->c_out % a->group)) ||
        (a->x_linear && (a->x_linear != 1 || a->depthwise || a->group > 1 || a->cb_in != 1)))
        return MI_EARGS;
    if (a->group > 1) { /* c_w: the widest block's channel range */
        long widest = 0, lo, hi;
        for (long ob = 0; ob < a->cb_out; ob++) {
            ob_range(a, ob, &lo, &hi);
            widest = lmax(widest, hi - lo);
        }
        if (a->c_w != widest) return MI_EARGS;
    }
    conv_job j = {*a, a->k == 16 ? 4 : 2, 0, 0, 0, 0, 0, 0};
    mi_bconv_args *g = &j.a;
    if (!a->depthwise && a->kh == 1 && a->kw == 1 && a->sh == 1 && a->sw == 1 && a->pt == 0 &&
        a->pl == 0 && a->oh == a->h && a->ow == a->wd) { /* pointwise: the map as one row */
        g->wd = g->ow = a->h * a->wd;
        g->h = g->oh = 1;
    }
    long macs;
    if (a->depthwise) {
        j.items = a->n * a->cb_out * a->oh;
        macs = j.items * a->ow * a->kh * a->kw * a->k;
    } else {
        j.groups = ceil_div(a->cb_out, j.obmax);
        /* a row in even chunks (no narrow last chunk and its narrow tiles) */
        j.chunks = ceil_div(g->ow, CHUNK);
        j.width = ceil_div(g->ow, lmax(1, j.chunks));
        /* narrow rows: several per item (their weights read once for all), evenly split */
        j.rows = g->ow >= CHUNK ? 1 : lmax(1, lmin(g->oh, ROWS_COLS / lmax(1, g->ow)));
        j.rblocks = ceil_div(g->oh, j.rows);
        j.rows = ceil_div(g->oh, j.rblocks);
        j.items = a->n * j.groups * j.rblocks * j.chunks;
        macs = a->n * a->cb_out * a->k * a->oh * a->ow * w_row(a) * a->kh * a->kw;
    }
    if (j.items == 0) return MI_OK;
    if (macs < PARALLEL_MIN || mi_pool_run(conv_part, &j)) conv_range(&j, 0, j.items);
    return MI_OK;
}

/* ---- pooling ---------------------------------------------------------------------------- */

static void pool_range(const mi_bpool_args *a, long i0, long i1) {
    for (long i = i0; i < i1; i++) {
#if MI_ACT_X86
        if (a->k == 16) pool_item_avx512(a, i / a->oh, i % a->oh);
        else pool_item_avx2(a, i / a->oh, i % a->oh);
#else
        (void)a;
#endif
    }
}

static void pool_part(const void *job, int part, int parts) {
    const mi_bpool_args *a = job;
    long b, e;
    mi_pool_share(a->n * a->cb * a->oh, part, parts, &b, &e);
    pool_range(a, b, e);
}

int mi_bpool2d_f32(const mi_bpool_args *a) {
    if (!a->x || !a->y || !runs(a->k) ||
        ANY_NEGATIVE(a->n, a->cb, a->h, a->wd, a->oh, a->ow, a->pt, a->pl, a->pb, a->pr) ||
        a->kh < 1 || a->kw < 1 || a->sh < 1 || a->sw < 1 || a->dh < 1 || a->dw < 1)
        return MI_EARGS;
    long work = a->n * a->cb * a->oh * a->ow * a->kh * a->kw * a->k;
    if (work < PARALLEL_MIN || mi_pool_run(pool_part, a)) pool_range(a, 0, a->n * a->cb * a->oh);
    return MI_OK;
}

/* ---- elementwise ------------------------------------------------------------------------ */

static void binary_range(const mi_bbinary_args *a, long i0, long i1) {
    /* items: vectors of the output, (image, block, position) */
    while (i0 < i1) {
        long nb = i0 / a->hw, p0 = i0 % a->hw, p1 = lmin(a->hw, p0 + (i1 - i0));
        const float *x = a->a + nb * a->hw * a->k, *b;
        int bvec = a->bmode == 1;
        if (bvec) {
            long n = nb / a->cb, cb = nb % a->cb;
            b = a->b + ((a->nbi == 1 ? 0 : n) * a->cb + cb) * a->k;
        } else {
            b = a->b + nb * a->hw * a->k;
        }
        float *y = a->y + nb * a->hw * a->k;
        const float *sh = a->op == 4 ? a->shift + (b - a->b) : NULL;
#if MI_ACT_X86
        if (a->k == 16) binary_run_avx512(a, x, b, bvec, sh, y, p0, p1);
        else binary_run_avx2(a, x, b, bvec, sh, y, p0, p1);
#else
        (void)x, (void)b, (void)y, (void)bvec, (void)sh;
#endif
        i0 += p1 - p0;
    }
}

static void binary_part(const void *job, int part, int parts) {
    const mi_bbinary_args *a = job;
    long b, e;
    mi_pool_share(a->n * a->cb * a->hw, part, parts, &b, &e);
    binary_range(a, b, e);
}

int mi_bbinary_f32(const mi_bbinary_args *a) {
    if (!a->a || !a->b || !a->y || !runs(a->k) || ANY_NEGATIVE(a->n, a->cb, a->hw) ||
        a->bmode < 0 || a->bmode > 1 || a->op < 0 || a->op > 4 ||
        (a->op == 4 && (a->bmode != 1 || !a->shift)) ||
        (a->bmode == 1 && a->nbi != 1 && a->nbi != a->n))
        return MI_EARGS;
    long items = a->n * a->cb * a->hw;
    if (items * a->k < PARALLEL_MIN || mi_pool_run(binary_part, a)) binary_range(a, 0, items);
    return MI_OK;
}

int mi_bpadzero_f32(const mi_bpad_args *a) {
    if (!a->y || ANY_NEGATIVE(a->n, a->cb, a->hw, a->c) || a->k < 1 ||
        a->cb != ceil_div(a->c, a->k))
        return MI_EARGS;
    long keep = a->c - (a->cb - 1) * a->k;
    if (a->cb == 0 || keep == a->k) return MI_OK;
    for (long n = 0; n < a->n; n++) {
        float *y = a->y + ((n * a->cb + a->cb - 1) * a->hw) * a->k;
        for (long p = 0; p < a->hw; p++)
            for (long l = keep; l < a->k; l++) y[p * a->k + l] = 0.0f;
    }
    return MI_OK;
}

int mi_bconcat_f32(const mi_bconcat_args *a) {
    if (!a->xs || !a->cs || !a->y || a->k < 1 || ANY_NEGATIVE(a->count, a->n, a->hw))
        return MI_EARGS;
    long total = 0;
    for (long i = 0; i < a->count; i++) {
        if (!a->xs[i] || a->cs[i] < 0) return MI_EARGS;
        total += a->cs[i];
    }
    const long k = a->k, cbo = ceil_div(total, k), blk = a->hw * k;
    for (long n = 0; n < a->n; n++) {
        long off = 0;
        for (long i = 0; i < a->count; i++) {
            long c = a->cs[i], cbi = ceil_div(c, k);
            const float *x = a->xs[i] + n * cbi * blk;
            float *y = a->y + n * cbo * blk;
            if (off % k == 0) { /* whole blocks (the last one's zeros overwritten after) */
                memcpy(y + (off / k) * blk, x, sizeof(float) * (size_t)(cbi * blk));
            } else {
                for (long ch = 0; ch < c; ch++) {
                    const float *src = x + (ch / k) * blk + ch % k;
                    float *dst = y + ((off + ch) / k) * blk + (off + ch) % k;
                    for (long p = 0; p < a->hw; p++) dst[p * k] = src[p * k];
                }
            }
            off += c;
        }
    }
    mi_bpad_args z = {a->y, a->n, cbo, a->hw, k, total};
    return mi_bpadzero_f32(&z);
}

int mi_bsplit_f32(const mi_bsplit_args *a) {
    if (!a->x || !a->ys || !a->cs || a->k < 1 || ANY_NEGATIVE(a->count, a->n, a->hw))
        return MI_EARGS;
    long total = 0;
    for (long i = 0; i < a->count; i++) {
        if (!a->ys[i] || a->cs[i] < 0) return MI_EARGS;
        total += a->cs[i];
    }
    const long k = a->k, cbi = ceil_div(total, k), blk = a->hw * k;
    for (long n = 0; n < a->n; n++) {
        long off = 0;
        for (long i = 0; i < a->count; i++) {
            long c = a->cs[i], cbo = ceil_div(c, k);
            const float *x = a->x + n * cbi * blk;
            float *y = a->ys[i] + n * cbo * blk;
            if (off % k == 0) { /* whole blocks (the last one's lanes past c zeroed after) */
                memcpy(y, x + (off / k) * blk, sizeof(float) * (size_t)(cbo * blk));
            } else {
                for (long ch = 0; ch < c; ch++) {
                    const float *src = x + ((off + ch) / k) * blk + (off + ch) % k;
                    float *dst = y + (ch / k) * blk + ch % k;
                    for (long p = 0; p < a->hw; p++) dst[p * k] = src[p * k];
                }
            }
            off += c;
        }
    }
    for (long i = 0; i < a->count; i++) {
        mi_bpad_args z = {a->ys[i], a->n, ceil_div(a->cs[i], k), a->hw, k, a->cs[i]};
        if (mi_bpadzero_f32(&z)) return MI_EARGS;
    }
    return MI_OK;
}

static void resize_range(const mi_bresize_args *a, long i0, long i1) {
    for (long i = i0; i < i1; i++) {
#if MI_ACT_X86
        if (a->k == 16) resize_row_avx512(a, i / a->oh, i % a->oh);
        else resize_row_avx2(a, i / a->oh, i % a->oh);
#else
        (void)a;
#endif
    }
}

static void resize_part(const void *job, int part, int parts) {
    const mi_bresize_args *a = job;
    long b, e;
    mi_pool_share(a->n * a->cb * a->oh, part, parts, &b, &e);
    resize_range(a, b, e);
}

int mi_bresize_f32(const mi_bresize_args *a) {
    if (!a->x || !a->y || !a->rows || !a->cols || !a->ry || !a->rx || !runs(a->k) ||
        ANY_NEGATIVE(a->n, a->cb, a->h, a->wd, a->oh, a->ow))
        return MI_EARGS;
    for (long i = 0; i < 2 * a->oh; i++)
        if (a->rows[i] < 0 || a->rows[i] >= a->h) return MI_EARGS;
    for (long i = 0; i < 2 * a->ow; i++)
        if (a->cols[i] < 0 || a->cols[i] >= a->wd) return MI_EARGS;
    long items = a->n * a->cb * a->oh;
    if (items * a->ow * a->k < PARALLEL_MIN || mi_pool_run(resize_part, a))
        resize_range(a, 0, items);
    return MI_OK;
}
