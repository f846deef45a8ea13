/* One instruction set's copy of the blocked kernels (_blocked.c includes this twice: AVX-512F
 * with K = 16, AVX2 + FMA with K = 8). Defined by the includer: SUF, K, V, TGT (the target
 * string), LOAD, STORE, SET1, FMA, ADD, MUL, SUB, MAX, MIN, ZERO, MASKZ(v, keep) (the lanes
 * below keep, the others 0), EPI (mi_epi_SUF), OBMAX (output blocks a dense tile sums), RWMAX
 * (output columns a dense tile sums), DWRW (columns a depthwise tile sums). */

#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SUF)
#define AI static inline __attribute__((always_inline, target(TGT)))
#define NI static __attribute__((noinline, target(TGT)))
#define DW_KW_MAX 7 /* the widest depthwise kernel with a tile of its own (stride 1) */
/* loops over a tile's sums unrolled (the sums then stay in registers); not in the
 * sanitizers' builds (MI_NO_CLONES), where the unrolled copies of every tile shape took
 * minutes of compiling each */
#ifdef MI_NO_CLONES
#define UNROLL(n)
#define FEW_SHAPES 1 /* and fewer tile shapes compiled: the same code, other constants */
#else
#define FEW_SHAPES 0
#define UNROLL_(x) _Pragma(#x)
#define UNROLL(n) UNROLL_(GCC unroll n)
#endif

/* a dense tile: OB output blocks from ob0, RW output columns (iw0: the input column tap 0
 * of the first reads, sx the input step from one column to the next), taps rows [r0, r1) and
 * columns [s0, s1) (those inside the input), the input channel blocks [ib0, ib1) of the
 * range [c_lo, c_hi) the blocks read (ob_range). The sums start from zero on the first
 * blocks of the range (first) and from y's partial sums otherwise; the epilogue runs on the
 * last (last), partial sums are stored otherwise. */
AI void FN(dense_tile)(const mi_bconv_args *a, const float *xn, const float *w, float *yp,
                       const float *rp, const int OB, const int RW, const int LIN,
                       const long sx, long ih0,
                       long r0, long r1, long iw0, long s0, long s1, long ob0, long c_lo,
                       long c_hi, long ib0, long ib1, int first, int last) {
    V acc[OBMAX][RWMAX];
    const long yob = a->oh * a->ow * K;
    for (int o = 0; o < OB; o++)
        for (int p = 0; p < RW; p++) acc[o][p] = first ? ZERO : LOAD(yp + o * yob + p * K);
    /* the weights of output block ob0 + o, tap t, lane l of input block icb:
     * one group (OBMAX blocks interleaved): w + (ob0 / OBMAX) gs + icb bs + t ts + l LS + o K;
     * several: w + (ob0 + o) wob + t ts + icb bs + l K - c_lo K (mi_bconv_args) */
    /* LIN: x LINEAR (a stem's few channels in their planes): a pixel 1 float on, a lane
     * (channel) a plane on, one block */
    const long taps = a->kh * a->kw, hwk = a->h * a->wd * K;
    const long px = LIN ? 1 : K, lane = LIN ? a->h * a->wd : 1;
#define DENSE_TAPS(LS, OS, WT, BS)                                                          \
    for (long r = r0; r < r1; r++)                                                          \
        for (long s = s0; s < s1; s++) {                                                    \
            /* the tap's input at block 0, lane 0; its weights, the range's first channel */ \
            const float *xt = xn + ((ih0 + r * a->dh) * a->wd + iw0 + s * a->dw) * px;        \
            const float *wt = (WT);                                                         \
            for (long icb = ib0; icb < ib1; icb++) {                                        \
                const float *xb = xt + icb * hwk, *wb = wt + icb * (BS);                    \
                /* lanes [l0, l1) are in the range */                                       \
                const long l0 = lmax(0, c_lo - icb * K), l1 = lmin(K, c_hi - icb * K);      \
                if (!LIN && l0 == 0 && l1 == K) { /* LIN: c_in <= STEM_CHANNELS < K */     \
                    for (int l = 0; l < K; l++) DENSE_STEP(l, LS, OS);                      \
                } else {                                                                    \
                    for (long l = l0; l < l1; l++) DENSE_STEP(l, LS, OS);                   \
                }                                                                           \
            }                                                                               \
        }
#define DENSE_STEP(l, LS, OS)                                                               \
    do {                                                                                    \
        V wv[OBMAX];                                                                        \
        for (int o = 0; o < OB; o++) wv[o] = LOAD(wb + (l) * (LS) + o * (OS));              \
        for (int p = 0; p < RW; p++) {                                                      \
            V xv = SET1(xb[p * sx + (l) * lane]);                                           \
            for (int o = 0; o < OB; o++) acc[o][p] = FMA(wv[o], xv, acc[o][p]);             \
        }                                                                                   \
    } while (0)
    if (a->group <= 1) {
        /* the OB weight vectors of a step adjacent: immediate offsets from one pointer */
        const long ts = OBMAX * K * K, gs = a->cb_in * taps * ts;
        DENSE_TAPS(OBMAX * K, K, w + (ob0 / OBMAX) * gs + (r * a->kw + s) * ts, taps * ts)
    } else {
        const long cw = w_row(a), wob = cw * taps * K;
        DENSE_TAPS(K, wob, w + ob0 * wob + (r * a->kw + s) * cw * K - c_lo * K, K * K)
    }
#undef DENSE_STEP
#undef DENSE_TAPS
    /* the sums stored: as partial sums (not `last`), or + bias, + residual, clamped,
     * activated, the lanes past the channels zeroed; each step a loop over the whole tile,
     * unrolled, so that the sums stay in registers and no branch is taken per vector (one
     * vector at a time through finish() spilled them: 1x1 convolutions of 16 channels, 16
     * steps a tile, spent a third of their time past the steps) */
#define TILE_LOOP UNROLL(4) for (int o = 0; o < OB; o++) \
                  UNROLL(16) for (int p = 0; p < RW; p++)
    const long keep = a->c_out - (ob0 + OB - 1) * K; /* only the last block can be short */
    if (last) {
        V bv[OBMAX];
        UNROLL(4) for (int o = 0; o < OB; o++)
            bv[o] = a->bias ? LOAD(a->bias + (ob0 + o) * K) : ZERO;
        TILE_LOOP acc[o][p] = ADD(acc[o][p], bv[o]);
        if (rp) TILE_LOOP acc[o][p] = ADD(acc[o][p], LOAD(rp + o * yob + p * K));
        const V lo = SET1(a->lo), hi = SET1(a->hi);
        /* max(lo, x), min(hi, .): a NaN (the second operand) passes through */
        TILE_LOOP acc[o][p] = MIN(hi, MAX(lo, acc[o][p]));
        if (keep < K && !a->act)
            UNROLL(16) for (int p = 0; p < RW; p++)
                acc[OB - 1][p] = MASKZ(acc[OB - 1][p], keep);
    }
    TILE_LOOP STORE(yp + o * yob + p * K, acc[o][p]);
#undef TILE_LOOP
    if (last && a->act) { /* from y, in L1: an unrolled copy of each activation per vector
                           * would multiply the code, a loop over acc would spill it */
        const V al = SET1(a->alpha), be = SET1(a->beta);
        for (int o = 0; o < OB; o++)
            for (int p = 0; p < RW; p++) {
                V v = EPI(LOAD(yp + o * yob + p * K), (int)a->act, al, be);
                STORE(yp + o * yob + p * K, o == OB - 1 && keep < K ? MASKZ(v, keep) : v);
            }
    }
}

/* columns [c0, c1) of output row oy, OB blocks from ob0 (input channels [c_lo, c_hi), their
 * blocks [ib0, ib1) this pass), image n */
AI void FN(dense_cols)(const mi_bconv_args *a, long n, long ob0, long oy, long c0, long c1,
                       const int OB, const int LIN, const long SX, long c_lo, long c_hi,
                       long ib0, long ib1, int first, int last) {
    const float *xn = a->x + n * (LIN ? a->c_in : a->cb_in * K) * a->h * a->wd;
    const long yoff = ((n * a->cb_out + ob0) * a->oh + oy) * a->ow * K;
    float *yrow = a->y + yoff;
    const float *rrow = a->res ? a->res + yoff : NULL;
    long ih0 = oy * a->sh - a->pt;
    long r0 = lmin(first_in(ih0, a->dh), a->kh), r1 = end_in(ih0, a->dh, a->h, a->kh);
    /* interior columns: every tap inside the input */
    long lo = first_in(-a->pl, a->sw), hi = end_in(-a->pl + (a->kw - 1) * a->dw, a->sw, a->wd,
                                                   a->ow);
    lo = lmax(lo, c0), hi = lmin(hi, c1);
    if (hi < lo) hi = lo = c1;
    for (long ox = c0; ox < c1;) {
        if (ox >= lo && ox < hi) {
            /* columns per tile: fewer output blocks, more columns (independent sums); the
             * interior split into tiles of even widths (no narrow last tile) */
            const long rwt = OB >= 3 ? RW_WIDE3 : OB == 2 ? RW_WIDE2 : RW_WIDE1;
            long left = hi - ox, tiles = (left + rwt - 1) / rwt;
            /* a stem (LIN): full tiles, the rest in tiles of 8, 4, 2, 1 (those widths
             * compiled, not every one: the copies of every width cost minutes of compiling
             * in the sanitizers' builds, for a few layers) */
            long rw = !(LIN || FEW_SHAPES) ? (left + tiles - 1) / tiles : left >= rwt ? rwt
                      : left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
            long iw0 = ox * a->sw - a->pl;
            float *yp = yrow + ox * K;
            const float *rp = rrow ? rrow + ox * K : NULL;
#define DENSE_RW(R)                                                                         \
    case R:                                                                                 \
        if (R <= rwt && (!(LIN || FEW_SHAPES) || R == rwt || (R & (R - 1)) == 0))           \
            FN(dense_tile)(a, xn, a->w, yp, rp, OB, R <= RWMAX ? R : RWMAX, LIN, SX, ih0,   \
                           r0, r1, iw0, 0, a->kw, ob0, c_lo, c_hi, ib0, ib1, first, last);  \
        break;
            switch (rw) {
                DENSE_RW(1) DENSE_RW(2) DENSE_RW(3) DENSE_RW(4) DENSE_RW(5) DENSE_RW(6)
                DENSE_RW(7) DENSE_RW(8) DENSE_RW(9) DENSE_RW(10) DENSE_RW(11) DENSE_RW(12)
                DENSE_RW(13) DENSE_RW(14) DENSE_RW(15) DENSE_RW(16)
            default: break;
            }
#undef DENSE_RW
            ox += rw;
        } else {
            long iw0 = ox * a->sw - a->pl;
            long s0 = lmin(first_in(iw0, a->dw), a->kw), s1 = end_in(iw0, a->dw, a->wd, a->kw);
            FN(dense_tile)(a, xn, a->w, yrow + ox * K, rrow ? rrow + ox * K : NULL, OB, 1, LIN,
                           SX, ih0, r0, r1, iw0, s0, s1, ob0, c_lo, c_hi, ib0, ib1, first,
                           last);
            ox++;
        }
    }
}

/* output blocks [ob0, ob0 + OBMAX) of rows [oy0, oy1): tiles of the blocks that read one
 * input channel range (all of them for one group). The range's channel blocks go in passes
 * whose weights fit L1 (the taps of CB_L1 input blocks for the tile's output blocks), each
 * pass over every row and column of the item, the sums kept in y between passes: the
 * weights are read once per item from L2 (or L3), not once per tile */
NI void FN(dense_item)(const mi_bconv_args *a, long n, long ob0, long oy0, long oy1, long c0,
                       long c1) {
    const long end = lmin(a->cb_out, ob0 + OBMAX);
    /* y as a residual's buffer too (in place): one pass, the residual read before y is */
    const int inplace = a->res && a->res + a->n * a->cb_out * a->oh * a->ow * K > a->y &&
                        a->y + a->n * a->cb_out * a->oh * a->ow * K > a->res;
    for (long ob = ob0; ob < end;) {
        long lo, hi, lo2, hi2, run = 1;
        ob_range(a, ob, &lo, &hi);
        while (ob + run < end) {
            ob_range(a, ob + run, &lo2, &hi2);
            if (lo2 != lo || hi2 != hi) break;
            run++;
        }
        const long ib_lo = lo / K, ib_hi = (hi + K - 1) / K;
        long step = inplace ? ib_hi - ib_lo : CB_L1 / (run * a->kh * a->kw * K * K);
        step = lmax(1, step);
        for (long ib0 = ib_lo; ib0 < ib_hi; ib0 += step) {
            const long ib1 = lmin(ib_hi, ib0 + step);
            const int first = ib0 == ib_lo, last = ib1 == ib_hi;
            for (long oy = oy0; oy < oy1; oy++) {
                /* the column step a compile-time constant for strides 1 and 2: the tile's
                 * broadcasts then take immediate offsets from one register (a runtime step
                 * spilled them) */
#define DENSE_OB(R, L, SX)                                                                  \
    FN(dense_cols)(a, n, ob, oy, c0, c1, R, L, SX, lo, hi, ib0, ib1, first, last)
#define DENSE_RUN(L, SX)                                                                    \
        switch (run) {                                                                      \
        case 1: DENSE_OB(1, L, SX); break;                                                  \
        case 2: DENSE_OB(2, L, SX); break;                                                  \
        case 3: if (OBMAX > 2) DENSE_OB(OBMAX > 2 ? 3 : 1, L, SX); break;                   \
        case 4: if (OBMAX > 2) DENSE_OB(OBMAX > 2 ? 4 : 1, L, SX); break;                   \
        default: break;                                                                     \
        }
                if (FEW_SHAPES) {
                    if (a->x_linear) {
                        DENSE_RUN(1, a->sw)
                    } else {
                        DENSE_RUN(0, a->sw * K)
                    }
                } else if (a->x_linear) { /* a stem's planes: a column a float on */
                    if (a->sw == 2) {
                        DENSE_RUN(1, 2)
                    } else {
                        DENSE_RUN(1, a->sw)
                    }
                } else if (a->sw == 1) {
                    DENSE_RUN(0, K)
                } else if (a->sw == 2) {
                    DENSE_RUN(0, 2 * K)
                } else {
                    DENSE_RUN(0, a->sw * K)
                }
#undef DENSE_RUN
#undef DENSE_OB
            }
        }
        ob += run;
    }
}

/* a depthwise tile: RW output columns of block cb */
AI void FN(dw_tile)(const mi_bconv_args *a, const float *xb, const float *wb, float *yp,
                    const float *rp, const int RW, const int KW, long ih0, long r0, long r1,
                    long iw0, long s0, long s1, long cb) {
    V acc[DWRW];
    V bv = a->bias ? LOAD(a->bias + cb * K) : ZERO;
    for (int p = 0; p < RW; p++) acc[p] = bv;
    const long sx = a->sw * K;
    for (long r = r0; r < r1; r++) {
        const float *xr = xb + (ih0 + r * a->dh) * a->wd * K;
        const float *wr = wb + r * a->kw * K;
        if (KW) {
            /* KW taps a row, stride 1, no dilation, all inside: each input vector loaded once
             * for the KW sums it enters (RW + KW - 1 loads for RW * KW FMAs, not one each:
             * 5x5 layers were bound by their loads), each sum still in tap order */
            const float *xs = xr + iw0 * K;
            V wv[DW_KW_MAX];
            UNROLL(8) for (int t = 0; t < KW; t++) wv[t] = LOAD(wr + t * K);
            UNROLL(32) for (int j = 0; j < RW + KW - 1; j++) {
                const V xv = LOAD(xs + j * K);
                UNROLL(8) for (int t = 0; t < KW; t++)
                    if (j - t >= 0 && j - t < RW) acc[j - t] = FMA(xv, wv[t], acc[j - t]);
            }
            continue;
        }
        for (long s = s0; s < s1; s++) {
            const float *xs = xr + (iw0 + s * a->dw) * K;
            V wv = LOAD(wr + s * K);
            for (int p = 0; p < RW; p++) acc[p] = FMA(LOAD(xs + p * sx), wv, acc[p]);
        }
    }
    /* as the dense tile's: each step unrolled over the tile, the activation from y */
    const V lo = SET1(a->lo), hi = SET1(a->hi);
    const long keep = a->c_out - cb * K;
    if (rp) UNROLL(16) for (int p = 0; p < RW; p++)
        acc[p] = ADD(acc[p], LOAD(rp + p * K));
    UNROLL(16) for (int p = 0; p < RW; p++) {
        acc[p] = MIN(hi, MAX(lo, acc[p]));
        STORE(yp + p * K, keep < K && !a->act ? MASKZ(acc[p], keep) : acc[p]);
    }
    if (a->act) {
        const V al = SET1(a->alpha), be = SET1(a->beta);
        for (int p = 0; p < RW; p++) {
            V v = EPI(LOAD(yp + p * K), (int)a->act, al, be);
            STORE(yp + p * K, keep < K ? MASKZ(v, keep) : v);
        }
    }
}

NI void FN(dw_item)(const mi_bconv_args *a, long n, long cb, long oy) {
    const float *xb = a->x + (n * a->cb_in + cb) * a->h * a->wd * K;
    const float *wb = a->w + cb * a->kh * a->kw * K;
    const long yoff = ((n * a->cb_out + cb) * a->oh + oy) * a->ow * K;
    float *yrow = a->y + yoff;
    const float *rrow = a->res ? a->res + yoff : NULL;
    long ih0 = oy * a->sh - a->pt;
    long r0 = lmin(first_in(ih0, a->dh), a->kh), r1 = end_in(ih0, a->dh, a->h, a->kh);
    long lo = first_in(-a->pl, a->sw), hi = end_in(-a->pl + (a->kw - 1) * a->dw, a->sw, a->wd,
                                                   a->ow);
    if (hi < lo) hi = lo = a->ow;
    for (long ox = 0; ox < a->ow;) {
        long iw0 = ox * a->sw - a->pl;
        float *yp = yrow + ox * K;
        const float *rp = rrow ? rrow + ox * K : NULL;
        if (ox >= lo && ox < hi && hi - ox >= DWRW) {
            if (a->sw == 1 && a->dw == 1 && a->kw == 3)
                FN(dw_tile)(a, xb, wb, yp, rp, DWRW, 3, ih0, r0, r1, iw0, 0, 3, cb);
            else if (a->sw == 1 && a->dw == 1 && a->kw == 5)
                FN(dw_tile)(a, xb, wb, yp, rp, DWRW, 5, ih0, r0, r1, iw0, 0, 5, cb);
            else if (a->sw == 1 && a->dw == 1 && a->kw == 7)
                FN(dw_tile)(a, xb, wb, yp, rp, DWRW, 7, ih0, r0, r1, iw0, 0, 7, cb);
            else
                FN(dw_tile)(a, xb, wb, yp, rp, DWRW, 0, ih0, r0, r1, iw0, 0, a->kw, cb);
            ox += DWRW;
        } else {
            long s0 = lmin(first_in(iw0, a->dw), a->kw), s1 = end_in(iw0, a->dw, a->wd, a->kw);
            FN(dw_tile)(a, xb, wb, yp, rp, 1, 0, ih0, r0, r1, iw0, s0, s1, cb);
            ox++;
        }
    }
}

NI void FN(pool_item)(const mi_bpool_args *a, long nb, long oy) {
    const float *xb = a->x + nb * a->h * a->wd * K;
    float *yrow = a->y + (nb * a->oh + oy) * a->ow * K;
    if (a->average && a->oh == 1 && a->ow == 1 && a->kh == a->h && a->kw == a->wd &&
        a->dh == 1 && a->dw == 1 && !a->pt && !a->pl && !a->pb && !a->pr) {
        /* the mean of the whole map (GlobalAveragePool, ReduceMean): four independent sums */
        const long hw = a->h * a->wd;
        V s0 = ZERO, s1 = ZERO, s2 = ZERO, s3 = ZERO;
        long p = 0;
        for (; p + 4 <= hw; p += 4) {
            s0 = ADD(s0, LOAD(xb + p * K));
            s1 = ADD(s1, LOAD(xb + (p + 1) * K));
            s2 = ADD(s2, LOAD(xb + (p + 2) * K));
            s3 = ADD(s3, LOAD(xb + (p + 3) * K));
        }
        for (; p < hw; p++) s0 = ADD(s0, LOAD(xb + p * K));
        V sum = ADD(ADD(s0, s1), ADD(s2, s3));
        STORE(yrow, MUL(sum, SET1(hw > 0 ? 1.0f / (float)hw : 0.0f)));
        return;
    }
    long ih0 = oy * a->sh - a->pt;
    long r0 = lmin(first_in(ih0, a->dh), a->kh), r1 = end_in(ih0, a->dh, a->h, a->kh);
    long rows_pad = 0;
    if (a->include_pad)
        for (long r = 0; r < a->kh; r++) {
            long ih = ih0 + r * a->dh;
            rows_pad += ih >= -a->pt && ih < a->h + a->pb;
        }
    for (long ox = 0; ox < a->ow; ox++) {
        long iw0 = ox * a->sw - a->pl;
        long s0 = lmin(first_in(iw0, a->dw), a->kw), s1 = end_in(iw0, a->dw, a->wd, a->kw);
        V acc = a->average ? ZERO : SET1(-INFINITY);
        for (long r = r0; r < r1; r++) {
            const float *xr = xb + (ih0 + r * a->dh) * a->wd * K;
            for (long s = s0; s < s1; s++) {
                V v = LOAD(xr + (iw0 + s * a->dw) * K);
                acc = a->average ? ADD(acc, v) : MAX(acc, v);
            }
        }
        if (a->average) {
            long count = (r1 - r0) * (s1 - s0);
            if (a->include_pad) {
                long cols = 0;
                for (long s = 0; s < a->kw; s++) {
                    long iw = iw0 + s * a->dw;
                    cols += iw >= -a->pl && iw < a->wd + a->pr;
                }
                count = rows_pad * cols;
            }
            acc = MUL(acc, SET1(count > 0 ? 1.0f / (float)count : 0.0f));
        } else if (r1 <= r0 || s1 <= s0) {
            acc = ZERO; /* a window on padding alone (not an ONNX geometry) */
        }
        STORE(yrow + ox * K, acc);
    }
}

/* y = a OP b for vectors [v0, v1) of one (image, block) of hw positions (b one vector where
 * bv) */
NI void FN(binary_run)(const mi_bbinary_args *a, const float *x, const float *b, int bvec,
                       const float *sh, float *y, long v0, long v1) {
    const V lo = SET1(a->lo), hi = SET1(a->hi);
    V bb = bvec ? LOAD(b) : ZERO;
    if (a->op == 4) { /* x * b + shift (b, shift: one vector each) */
        const V ss = LOAD(sh);
        for (long i = v0; i < v1; i++) STORE(y + i * K, MIN(hi, MAX(lo, FMA(LOAD(x + i * K), bb, ss))));
        return;
    }
    for (long i = v0; i < v1; i++) {
        V u = LOAD(x + i * K), w = bvec ? bb : LOAD(b + i * K), r;
        switch (a->op) {
        case 0: r = ADD(u, w); break;
        case 1: r = MUL(u, w); break;
        case 2: r = SUB(u, w); break;
        default: r = SUB(w, u); break;
        }
        STORE(y + i * K, MIN(hi, MAX(lo, r)));
    }
}

/* output row oy of block nb of a resize (mi_bresize_args) */
NI void FN(resize_row)(const mi_bresize_args *a, long nb, long oy) {
    const float *xb = a->x + nb * a->h * a->wd * K;
    const float *t = xb + a->rows[2 * oy] * a->wd * K, *b = xb + a->rows[2 * oy + 1] * a->wd * K;
    float *y = a->y + (nb * a->oh + oy) * a->ow * K;
    const float wy = a->ry[oy];
    const V vy = SET1(wy);
    for (long ox = 0; ox < a->ow; ox++) {
        const long c0 = a->cols[2 * ox] * K, c1 = a->cols[2 * ox + 1] * K;
        const float wx = a->rx[ox];
        V top = LOAD(t + c0);
        if (wx != 0.0f) top = FMA(SET1(wx), SUB(LOAD(t + c1), top), top);
        if (wy != 0.0f) {
            V bot = LOAD(b + c0);
            if (wx != 0.0f) bot = FMA(SET1(wx), SUB(LOAD(b + c1), bot), bot);
            top = FMA(vy, SUB(bot, top), top);
        }
        STORE(y + ox * K, top);
    }
}

#undef CAT_
#undef CAT
#undef FN
#undef AI
#undef NI
#undef DW_KW_MAX
#undef UNROLL
#undef FEW_SHAPES
#undef UNROLL_
