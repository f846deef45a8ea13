/*
 * Direct 2-D convolution of narrow groups (depthwise: one channel per group; RegNet's groups
 * of 8), float32, with bias, residual, a clamp (Relu/Clip) and an activation in the same pass:
 * y[n, m] = act(clamp(bias[m] + res[n, m] + sum_{c, ky, kx} w[m, c, ky, kx] x[n, g(m) c, ...])).
 *
 * im2col + GEMM spends its time copying here (each group's GEMM is 8 rows deep, its K 72),
 * and the depthwise kernel of _kernels.c rewrites its accumulator once per tap. This one
 * keeps the sums in registers: per output row, blocks of 8 output columns (a vector), for up
 * to MB output channels of a group at once, every tap of every input channel of the group
 * adds w * (8 input values) to them; the inputs come from a zero-bordered copy of the group's
 * channels whose columns are split by phase (column mod stride), so that every tap reads 8
 * consecutive floats whatever the stride. Depthwise (one output channel per group) runs
 * four blocks of columns at once: four independent sums hide the latency of the FMAs.
 *
 * Where AVX2 + FMA run (mi_act_isa, chosen per call), the sums are intrinsics tiles instead
 * (dw_tile_*, group_tile_*: FMAs, a tile's accumulators all in registers, the epilogue -
 * residual, clamp and the fused activation of _epi.h - applied to them before the one
 * store): on one core, depthwise 3x3 stride 2 (64 channels, 112x112) 1.3 -> 0.4-0.66 ms, 5x5
 * over 7x7-14x14 maps 0.4 -> 0.25-0.3 ms, RegNet's groups of 8 (208 channels, 14x14) 0.35 ->
 * 0.20 ms. Elsewhere the vectors are GCC's vector extension (8 floats): one AVX2 register in
 * the AVX2 copy, two SSE ones in the baseline copy (target_clones, _common.h), the
 * activation applied to the rows once written (mi_epi_row). On the pool, split by (image,
 * group), each thread with its own copy of the inputs (mi_pool_scratch).
 */
#include "_args.h"
#include "_common.h"
#include "_epi.h"
#include "_pool.h"

#define PARALLEL_MIN 16384L
#define VW 8 /* floats per vector */
#define MB 8 /* output channels of a group summed at once */
#define BAND_FLOATS 4096L /* a band's copy: 16 KB */
#define BAND_MIN 32768L
#define MAX_TAPS 121 /* kernels up to 11x11 (the Python side sends larger ones elsewhere) */

typedef float v8 __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));
#define EVEN ((v8i){0, 2, 4, 6, 8, 10, 12, 14})
#define v8_splat(f) ((v8){0} + (f))
#define ODD ((v8i){1, 3, 5, 7, 9, 11, 13, 15})

/* 8 floats from any address (GCC statement expression: no vector crosses a call) */
#define load8(p)                                                                            \
    __extension__({                                                                         \
        v8 v_;                                                                              \
        memcpy(&v_, (p), sizeof v_);                                                        \
        v_;                                                                                 \
    })

/* geometry of one call, derived once */
typedef struct {
    long cg, mg, taps, hp, wq, ow8;
} dgeo;

static dgeo geometry(const mi_dconv2d_args *a) {
    dgeo g;
    g.cg = a->c / a->group;
    g.mg = a->m / a->group;
    g.taps = a->kh * a->kw;
    g.hp = (a->oh - 1) * a->sh + (a->kh - 1) * a->dh + 1;
    g.ow8 = (a->ow + VW - 1) / VW * VW;
    /* phase columns a tap reads: up to (kw - 1) dw / sw past its output column */
    g.wq = g.ow8 + ((a->kw - 1) * a->dw) / a->sw + 1;
    return g;
}

/* floats of the per-thread copy: cg channels of hp rows of sw phases of wq columns */
static long copy_floats(const mi_dconv2d_args *a, const dgeo *g) {
    return g->cg * g->hp * a->sw * g->wq;
}

/* and the line a stride-2 copy goes through (copy_in) */
static long work_floats(const mi_dconv2d_args *a, const dgeo *g) {
    return copy_floats(a, g) + 2 * g->wq + 2 * VW;
}

/* the group's channels, columns split by phase (the border: zeroed once per range):
 * q[((c * hp + i) * sw + p) * wq + j] = x[c, i - pt, j * sw + p - pl] (0 outside). Stride 2
 * goes through `line` (2 * wq + 2 VW floats, zero but where rows are copied to): each row
 * copied into it at column pl, then split in vectors with no edge cases (short rows, 7-28
 * columns, spent more time on their edges than on their convolution) */
CLONES static void copy_in(const float *restrict x, float *restrict q, float *restrict line,
                           long cg, long h, long wd, long hp, long sw, long wq, long pt,
                           long pl) {
    long i0 = lmax(0, pt), i1 = lmin(hp, h + pt); /* rows inside the input */
    long n2 = lmax(0, lmin(wd, 2 * wq - pl));     /* the columns a stride-2 copy reads */
    for (long c = 0; c < cg; c++)
        for (long i = i0; i < i1; i++) {
            const float *row = x + (c * h + i - pt) * wd;
            if (sw == 2) {
                float *e = q + (c * hp + i) * 2 * wq, *o = e + wq;
                memcpy(line + pl, row, sizeof(float) * n2);
                long j = 0;
                for (; j + VW <= wq; j += VW) { /* 16 inputs: 8 even, 8 odd */
                    v8 lo = load8(line + 2 * j), hi = load8(line + 2 * j + VW);
                    v8 ev = __builtin_shuffle(lo, hi, EVEN), od = __builtin_shuffle(lo, hi, ODD);
                    memcpy(e + j, &ev, sizeof ev);
                    memcpy(o + j, &od, sizeof od);
                }
                for (; j < wq; j++) {
                    e[j] = line[2 * j];
                    o[j] = line[2 * j + 1];
                }
                continue;
            }
            for (long p = 0; p < sw; p++) {
                float *dst = q + ((c * hp + i) * sw + p) * wq;
                /* j with 0 <= j * sw + p - pl < wd */
                long j0 = lmin(wq, lmax(0, (pl - p + sw - 1) / sw));
                long j1 = lmax(j0, lmin(wq, (wd + pl - p + sw - 1) / sw));
                const float *src = row + j0 * sw + p - pl;
                if (sw == 1)
                    for (long j = 0; j < j1 - j0; j++) dst[j0 + j] = src[j];
                else
                    for (long j = 0; j < j1 - j0; j++) dst[j0 + j] = src[j * sw];
            }
        }
}

/* y row segment = clamp(acc + res, lo, hi) for `cnt` <= VW columns (a macro: no vector
 * crosses a call) */
#define store_block(y, res, acc, cnt, lo, hi)                                               \
    do {                                                                                    \
        float *y_ = (y);                                                                    \
        const float *r_ = (res);                                                            \
        v8 v_ = (acc);                                                                      \
        long n_ = (cnt);                                                                    \
        if (r_ && n_ == VW) v_ += load8(r_);                                                \
        if (n_ == VW) {                                                                     \
            v8 l_ = v8_splat(lo), h_ = v8_splat(hi);                                        \
            v8i m_ = v_ < l_;                                                               \
            v_ = (v8)(((v8i)l_ & m_) | ((v8i)v_ & ~m_));                                    \
            m_ = v_ > h_;                                                                   \
            v_ = (v8)(((v8i)h_ & m_) | ((v8i)v_ & ~m_));                                    \
            memcpy(y_, &v_, sizeof v_);                                                     \
        } else {                                                                            \
            float t_[VW];                                                                   \
            memcpy(t_, &v_, sizeof t_);                                                     \
            for (long i_ = 0; i_ < n_; i_++) {                                              \
                float w_ = t_[i_] + (r_ ? r_[i_] : 0.0f);                                   \
                w_ = w_ < (lo) ? (lo) : w_;                                                 \
                y_[i_] = w_ > (hi) ? (hi) : w_;                                             \
            }                                                                               \
        }                                                                                   \
    } while (0)

/* one group of one image: mg output channels from cg input ones copied to q */
CLONES static void group_rows(const mi_dconv2d_args *a, const dgeo *g, const float *restrict q,
                              const long *restrict toff, const float *restrict wg,
                              const float *restrict bg, const float *restrict rg,
                              float *restrict yg) {
    long ow = a->ow, oh = a->oh, sw = a->sw, taps = g->taps, cg = g->cg;
    long plane = g->hp * sw * g->wq; /* one channel's copy */
    long rowq = sw * g->wq;          /* one padded row, all phases */
    long nbk = g->ow8 / VW, units = oh * nbk; /* (output row, block of columns) pairs */
    for (long m0 = 0; m0 < g->mg; m0 += MB) {
        long mb = lmin(MB, g->mg - m0);
        if (mb == 1) { /* one output channel: four pairs at once (four chains of FMAs) */
            const float *wm = wg + m0 * cg * taps;
            float b = bg ? bg[m0] : 0.0f;
            long r = 0, o = 0; /* the next pair: output row, first column */
            for (long u0 = 0; u0 < units; u0 += 4) {
                long cnt = lmin(4, units - u0);
                long base[4], out[4], col[4];
                for (long j = 0; j < 4; j++) { /* past the end: the last pair again */
                    base[j] = r * a->sh * rowq + o;
                    col[j] = o;
                    out[j] = (m0 * oh + r) * ow + o;
                    if (j < cnt - 1 || u0 + 4 < units) { /* next pair, no division */
                        o += VW;
                        if (o >= g->ow8) {
                            o = 0;
                            r++;
                        }
                    }
                }
                v8 s0 = v8_splat(b), s1 = s0, s2 = s0, s3 = s0;
                const float *p0 = q + base[0], *p1 = q + base[1], *p2 = q + base[2],
                            *p3 = q + base[3];
                for (long c = 0; c < cg; c++) {
                    const float *wc = wm + c * taps;
                    long co = c * plane;
                    for (long t = 0; t < taps; t++) {
                        long off = co + toff[t];
                        float k = wc[t];
                        s0 += k * load8(p0 + off);
                        s1 += k * load8(p1 + off);
                        s2 += k * load8(p2 + off);
                        s3 += k * load8(p3 + off);
                    }
                }
                /* each sum stored from its own register (an array of them spilled one) */
                store_block(yg + out[0], rg ? rg + out[0] : NULL, s0, lmin(VW, ow - col[0]),
                            a->lo, a->hi);
                if (cnt > 1)
                    store_block(yg + out[1], rg ? rg + out[1] : NULL, s1,
                                lmin(VW, ow - col[1]), a->lo, a->hi);
                if (cnt > 2)
                    store_block(yg + out[2], rg ? rg + out[2] : NULL, s2,
                                lmin(VW, ow - col[2]), a->lo, a->hi);
                if (cnt > 3)
                    store_block(yg + out[3], rg ? rg + out[3] : NULL, s3,
                                lmin(VW, ow - col[3]), a->lo, a->hi);
            }
            continue;
        }
        for (long u = 0; u < units; u++) { /* up to MB output channels, one pair */
            long r = u / nbk, o0 = u % nbk * VW;
            v8 s[MB];
            for (long i = 0; i < MB; i++) {
                v8 z = {0};
                s[i] = z + (i < mb && bg ? bg[m0 + i] : 0.0f);
            }
            for (long c = 0; c < cg; c++)
                for (long t = 0; t < taps; t++) {
                    v8 v = load8(q + c * plane + r * a->sh * rowq + toff[t] + o0);
                    const float *wt = wg + (m0 * cg + c) * taps + t;
                    if (mb == MB) {
                        for (long i = 0; i < MB; i++) s[i] += wt[i * cg * taps] * v;
                    } else {
                        for (long i = 0; i < mb; i++) s[i] += wt[i * cg * taps] * v;
                    }
                }
            for (long i = 0; i < mb; i++) {
                long off = ((m0 + i) * oh + r) * ow + o0;
                store_block(yg + off, rg ? rg + off : NULL, s[i], lmin(VW, ow - o0), a->lo,
                            a->hi);
            }
        }
    }
}

#if MI_ACT_X86
/* ---- depthwise, AVX2 + FMA (chosen at run time: mi_act_isa) ---------------------------- *
 * One channel: R output rows x V vectors of 8 columns summed in R * V registers over every
 * tap (the tap's weight broadcast, each input vector an operand of its FMA), then the
 * epilogue on the registers (residual, clamp, activation) and one store, the last vector
 * masked where the row ends inside it. Rows of 1-2 vectors (7x7, 14x14 maps) take 4 or 2
 * rows at once so that four chains of FMAs hide each other's latency. */
#define DW_TILE(R, V)                                                                       \
    __attribute__((target("avx2,fma"))) static void dw_tile_##R##_##V(                      \
        const float *restrict q, long rstep, const long *restrict toff, long taps,          \
        const float *restrict wt, float b, float *restrict y, const float *restrict res,    \
        long ow, long cols, const mi_epi_args *e) {                                         \
        __m256 acc[R][V];                                                                   \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)                                 \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) acc[r][v] = _mm256_set1_ps(b); \
        for (long t = 0; t < taps; t++) {                                                   \
            const __m256 k = _mm256_broadcast_ss(wt + t);                                   \
            const float *p = q + toff[t];                                                   \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)                             \
                _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) acc[r][v] =             \
                    _mm256_fmadd_ps(k, _mm256_loadu_ps(p + r * rstep + 8 * v), acc[r][v]);  \
        }                                                                                   \
        MI_EPI_STORE_TILE(R, V, acc, y, res, ow, cols, e);                                  \
    }
DW_TILE(1, 1)
DW_TILE(1, 2)
DW_TILE(1, 3)
DW_TILE(1, 4)
DW_TILE(2, 1)
DW_TILE(2, 2)
DW_TILE(3, 1)
DW_TILE(4, 1)

typedef void (*dw_tile_fn)(const float *, long, const long *, long, const float *, float,
                           float *, const float *, long, long, const mi_epi_args *);
static const dw_tile_fn dw_row_tiles[4] = {dw_tile_1_1, dw_tile_1_2, dw_tile_1_3, dw_tile_1_4};

#include "_dw_avx2.h"

/* one channel copied to q (copy_in's layout) into y (oh, ow); res (oh, ow) or NULL */
static void dw_channel_avx2(const mi_dconv2d_args *a, const dgeo *g, const float *q,
                            const long *toff, const float *wt, float b, const float *res,
                            float *y, const mi_epi_args *e) {
    long ow = a->ow, oh = a->oh, rstep = a->sh * a->sw * g->wq, taps = g->taps;
    long nv = g->ow8 / VW, r = 0;
    if (nv <= 2) { /* several rows at once */
        long rb = nv == 1 ? 4 : 2;
        dw_tile_fn f = nv == 1 ? dw_tile_4_1 : dw_tile_2_2;
        for (; r + rb <= oh; r += rb)
            f(q + r * rstep, rstep, toff, taps, wt, b, y + r * ow, res ? res + r * ow : NULL,
              ow, ow, e);
        if (nv == 1 && r + 1 < oh) { /* the last 2 or 3 rows together */
            (r + 2 == oh ? dw_tile_2_1 : dw_tile_3_1)(q + r * rstep, rstep, toff, taps, wt, b,
                                                      y + r * ow, res ? res + r * ow : NULL,
                                                      ow, ow, e);
            r = oh;
        }
    }
    for (; r < oh; r++) {
        const float *qr = q + r * rstep;
        float *yr = y + r * ow;
        const float *rr = res ? res + r * ow : NULL;
        for (long o = 0; o < ow; o += 4 * VW) {
            long cols = lmin(4 * VW, ow - o);
            dw_row_tiles[(cols + VW - 1) / VW - 1](qr + o, rstep, toff, taps, wt, b, yr + o,
                                                   rr ? rr + o : NULL, ow, cols, e);
        }
    }
}
/* ---- groups of several channels, AVX2 + FMA ----------------------------------------------
 * MBK output channels x V vectors of 8 columns of one output row in MBK * V registers over
 * every (input channel, tap) of the group: V input vectors loaded, each output channel's
 * weight broadcast (4 x 2: 6 loads per 8 FMAs, where 8 channels x 1 vector took 9), then the
 * epilogue on the registers. */
#define GROUP_TILE(MBK, V)                                                                  \
    __attribute__((target("avx2,fma"))) static void group_tile_##MBK##_##V(                 \
        const float *restrict q, long plane, const long *restrict toff, long taps, long cg,  \
        const float *restrict wm, const float *restrict bias, float *restrict y,            \
        const float *restrict res, long ystep, long cols, const mi_epi_args *e) {           \
        __m256 acc[MBK][V];                                                                 \
        const long wstep = cg * taps;                                                       \
        _Pragma("GCC unroll 4") for (int i = 0; i < MBK; i++)                               \
            _Pragma("GCC unroll 2") for (int v = 0; v < V; v++) acc[i][v] =                 \
                _mm256_set1_ps(bias ? bias[i] : 0.0f);                                      \
        for (long c = 0; c < cg; c++) {                                                     \
            const float *qc = q + c * plane, *wc = wm + c * taps;                           \
            for (long t = 0; t < taps; t++) {                                               \
                __m256 d[V];                                                                \
                _Pragma("GCC unroll 2") for (int v = 0; v < V; v++) d[v] =                  \
                    _mm256_loadu_ps(qc + toff[t] + 8 * v);                                  \
                _Pragma("GCC unroll 4") for (int i = 0; i < MBK; i++) {                     \
                    const __m256 k = _mm256_broadcast_ss(wc + i * wstep + t);               \
                    _Pragma("GCC unroll 2") for (int v = 0; v < V; v++) acc[i][v] =         \
                        _mm256_fmadd_ps(k, d[v], acc[i][v]);                                \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        MI_EPI_STORE_TILE(MBK, V, acc, y, res, ystep, cols, e);                             \
    }
GROUP_TILE(4, 2)
GROUP_TILE(4, 1)
GROUP_TILE(1, 2)
GROUP_TILE(1, 1)

typedef void (*group_tile_fn)(const float *, long, const long *, long, long, const float *,
                              const float *, float *, const float *, long, long,
                              const mi_epi_args *);

/* one group's output rows [r0, r1): its mg output channels (mo planes from yg) from the
 * padded rows of a band copied to q (copy_in's layout, hb rows per channel, the first the
 * one output row r0 starts at) */
static void group_avx2(const mi_dconv2d_args *a, const dgeo *g, const float *q, long hb,
                       long r0, long r1, const long *toff, const float *wg, const float *bg,
                       const float *rg, float *yg, const mi_epi_args *e) {
    long ow = a->ow, oh = a->oh, rstep = a->sh * a->sw * g->wq, ystep = oh * ow;
    long plane = hb * a->sw * g->wq, wstep = g->cg * g->taps;
    for (long m0 = 0; m0 < g->mg;) {
        int four = g->mg - m0 >= 4;
        group_tile_fn wide = four ? group_tile_4_2 : group_tile_1_2;
        group_tile_fn narrow = four ? group_tile_4_1 : group_tile_1_1;
        for (long r = r0; r < r1; r++)
            for (long o = 0; o < ow; o += 2 * VW) {
                long cols = lmin(2 * VW, ow - o), off = m0 * ystep + r * ow + o;
                (cols > VW ? wide : narrow)(q + (r - r0) * rstep + o, plane, toff, g->taps, g->cg,
                                            wg + m0 * wstep, bg ? bg + m0 : NULL, yg + off,
                                            rg ? rg + off : NULL, ystep, cols, e);
            }
        m0 += four ? 4 : 1;
    }
}
#endif

/* units [u0, u1) = (image, group) pairs */
static void dconv_range(const mi_dconv2d_args *a, const dgeo *g, float *work, long u0,
                        long u1) {
    long plane_in = a->h * a->wd, plane_out = a->oh * a->ow;
    long rowq = a->sw * g->wq;
    long toff[MAX_TAPS]; /* each tap's offset in a channel's copy */
    for (long t = 0; t < g->taps; t++) {
        long col = t % a->kw * a->dw;
        toff[t] = t / a->kw * a->dh * rowq + (col % a->sw) * g->wq + col / a->sw;
    }
    /* the border: every group's copy writes the same interior cells */
    memset(work, 0, sizeof(float) * work_floats(a, g));
#if MI_ACT_X86
    int fast = mi_act_isa() >= 1;
    int depthwise = g->cg == 1 && g->mg == 1;
    const dwk_fn *fam = fast && depthwise ? dwk_family(a) : NULL;
    mi_epi_args e = {a->lo, a->hi, a->act, a->act_alpha, a->act_beta};
    mi_epi_args e_plain = {a->lo, a->hi, MI_EPI_NONE, 0.0f, 0.0f};
    /* Sigmoid and Swish (SiLU) in the family's tiles cost ~2x their own time (the exp's
     * constants and the tile's registers do not fit together): their bands are stored
     * clamped and activated in one pass over the rows just written (in cache). Depthwise
     * + SiLU, one thread, node time, interleaved: 3x3 32@112x112 0.876 -> 0.782 ms, 144@56x56
     * 0.944 -> 0.853, 5x5 240@28x28 0.625 -> 0.565, stride 2 0.4-10% less; the same values */
    int post = a->act == MI_ACT_SIGMOID || a->act == MI_ACT_SWISH;
    const float *xlo = a->x, *xhi = a->x + a->n * a->c * plane_in;
    int copy_fast = fast && a->sw <= 2 && g->wq <= 8 * DW_COPY_VECS;
    /* copies over BAND_MIN floats by bands of output rows, a band's copy ~BAND_FLOATS (a
     * multiple of 4 rows): RegNet's groups of 8 at 112x112 (stride 2, a group's copy 420
     * KB) 1.5 -> 1.1 ms at one thread; smaller copies (104 channels at 56x56, 124 KB) and
     * depthwise ones ran as fast or faster whole */
    long band = a->oh;
    if (copy_fast && (fam || !depthwise) && copy_floats(a, g) > BAND_MIN) {
        long per = g->cg * rowq, halo = (a->kh - 1) * a->dh + 1 - a->sh;
        band = lmax(1, (BAND_FLOATS / per - lmax(0, halo)) / a->sh);
        band = band >= a->oh ? a->oh : band > 4 ? band / 4 * 4 : band;
    }
#endif
    for (long u = u0; u < u1; u++) {
        long img = u / a->group, grp = u % a->group;
        const float *xg = a->x + (img * a->c + grp * g->cg) * plane_in;
        long mo = img * a->m + grp * g->mg;
        const float *wg = a->w + grp * g->mg * g->cg * g->taps;
        const float *rg = a->res ? a->res + mo * plane_out : NULL;
#if MI_ACT_X86
        if (copy_fast && (fam || !depthwise)) { /* by bands of output rows */
            float *yg = a->y + mo * plane_out;
            for (long r0 = 0; r0 < a->oh; r0 += band) {
                long r1 = lmin(a->oh, r0 + band);
                long ia = r0 * a->sh, ib = (r1 - 1) * a->sh + (a->kh - 1) * a->dh + 1;
                dw_copy_avx2(xg, work, g->cg, a->h, a->wd, ia, ib, a->sw, g->wq, a->pt, a->pl,
                             xlo, xhi);
                if (fam) {
                    dwk_channel(fam, rowq, g->wq, r1 - r0, a->ow, work, wg,
                                a->bias ? a->bias[grp] : 0.0f, rg ? rg + r0 * a->ow : NULL,
                                yg + r0 * a->ow, post ? &e_plain : &e);
                    if (post)
                        mi_epi_row_avx2(yg + r0 * a->ow, (r1 - r0) * a->ow, a->act,
                                        a->act_alpha, a->act_beta);
                } else
                    group_avx2(a, g, work, ib - ia, r0, r1, toff, wg,
                               a->bias ? a->bias + grp * g->mg : NULL, rg, yg, &e);
            }
            continue;
        }
        if (copy_fast)
            dw_copy_avx2(xg, work, g->cg, a->h, a->wd, 0, g->hp, a->sw, g->wq, a->pt, a->pl,
                         xlo, xhi);
        else
#endif
        copy_in(xg, work, work + copy_floats(a, g), g->cg, a->h, a->wd, g->hp, a->sw, g->wq,
                a->pt, a->pl);
#if MI_ACT_X86
        if (fast && depthwise) {
            dw_channel_avx2(a, g, work, toff, wg, a->bias ? a->bias[grp] : 0.0f, rg,
                            a->y + mo * plane_out, &e);
            continue;
        }
        if (fast) {
            group_avx2(a, g, work, g->hp, 0, a->oh, toff, wg,
                       a->bias ? a->bias + grp * g->mg : NULL, rg, a->y + mo * plane_out, &e);
            continue;
        }
#endif
        group_rows(a, g, work, toff, wg, a->bias ? a->bias + grp * g->mg : NULL, rg,
                   a->y + mo * plane_out);
        mi_epi_row(a->y + mo * plane_out, g->mg * plane_out, a->act, a->act_alpha,
                   a->act_beta);
    }
}

typedef struct {
    const mi_dconv2d_args *a;
    dgeo g;
} dconv_job;

static void dconv_part(const void *arg, int part, int parts) {
    const dconv_job *j = arg;
    long u0, u1;
    mi_pool_share(j->a->n * j->a->group, part, parts, &u0, &u1);
    float *work = part == 0 ? j->a->work : mi_pool_scratch(work_floats(j->a, &j->g));
    if (work && u0 < u1) dconv_range(j->a, &j->g, work, u0, u1);
}

long mi_dconv2d_work(const mi_dconv2d_args *a) {
    if (a->group < 1 || a->sw < 1) return -1;
    dgeo g = geometry(a);
    return work_floats(a, &g);
}

int mi_dconv2d_f32(const mi_dconv2d_args *a) {
    if (!a->x || !a->w || !a->y || !a->work ||
        ANY_NEGATIVE(a->n, a->c, a->h, a->wd, a->m, a->oh, a->ow, a->pt, a->pl) ||
        ANY_NEGATIVE(a->group - 1, a->kh - 1, a->kw - 1, a->sh - 1, a->sw - 1, a->dh - 1,
                     a->dw - 1, MAX_TAPS - a->kh * a->kw) ||
        a->c % a->group || a->m % a->group ||
        !mi_epi_valid(a->act))
        return MI_EARGS;
    if (a->n == 0 || a->m == 0 || a->oh == 0 || a->ow == 0) return MI_OK;
    dconv_job j = {a, geometry(a)};
    if (a->n * a->m * a->oh * a->ow < PARALLEL_MIN || mi_pool_run(dconv_part, &j))
        dconv_range(a, &j.g, a->work, 0, a->n * a->group);
    return MI_OK;
}
