/*
 * _dconv.c's AVX2 + FMA parts for the common shapes (included by it where MI_ACT_X86):
 *
 * dw_copy_avx2: copy_in's layout (a group's channels, zero-bordered, columns split by phase)
 * by whole-vector loads and masks, the stride-2 phases split in registers (shuffle_ps + permute4x64: 16
 * inputs -> 8 even, 8 odd). copy_in went through a line buffer that memcpy had just written,
 * and its 32-byte loads straddled those stores: on this EPYC the store-forwarding stalls made
 * the copy 2.5x the convolution's own time (240 channels at 28x28, 3x3 stride 2: 23% of the
 * node's time in copy_in, 9% in the FMAs).
 *
 * dw_k*_s*: depthwise 3x3 / 5x5, stride 1 or 2 both ways, dilation 1: the taps known when
 * compiled, so every input vector's address is a row pointer plus a constant (no offset
 * table, no tap loop), the 3x3 weights stay in registers over the channel, and the rows
 * that two output rows share load once (stride 1: rows r + ky; stride 2: r * 2 + 2 = (r + 1)
 * * 2). One call runs a whole channel's rows in tiles of R rows x V vectors of 8 columns:
 * maps of 8 columns or fewer (7x7) 4 rows at once, of 16 (14x14) 2 x 2, wider ones 1 x up
 * to 4 vectors, so that four to eight chains of FMAs hide each other's latency; the
 * epilogue (residual, clamp, activation) on the registers. A row's last vector is stored
 * whole where what it spills into the next rows is written after it (no residual, the
 * whole row in one strip, the store inside the plane): masked stores, ~10x a store on AMD,
 * only elsewhere.
 */
#ifndef MI_DW_AVX2_H
#define MI_DW_AVX2_H

#define DW_COPY_VECS 32 /* dw_copy_avx2's rows: wq <= 256 columns (copy_in's beyond) */

/* copy_in's copy (stride 1 or 2) of rows of wq <= 8 DW_COPY_VECS columns, padded rows
 * [ia, ib) only (a band: row ia first, channels (ib - ia) rows apart), padding rows zeroed. Each vector of a row reads 8 (16) whole source
 * floats and zeroes the lanes outside the row by a mask: the masks depend on the column
 * only, so they are made once per call; where a row's reads could leave the input tensor
 * [xlo, xhi) (its first and last rows) masked loads instead. A row's last vector goes
 * first: it spills zeros (lanes past wq) into the next phase's or row's first columns,
 * written after it or border zeros (AMD's masked stores cost ~10x a store); then the others
 * in order (all of them last to first ran 1.5-2x slower over 112x112 maps: the streams
 * backwards).
 * 240 channels at 28x28, stride 2: 150 -> ~40 us (the masks made per vector: 92 us; the
 * convolution itself ~50 us) */
__attribute__((target("avx2,fma"))) static void dw_copy_avx2(const float *restrict x,
                                                             float *restrict q, long cg,
                                                             long h, long wd, long ia,
                                                             long ib,
                                                             long sw, long wq, long pt,
                                                             long pl, const float *xlo,
                                                             const float *xhi) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i zero = _mm256_setzero_si256(), wdv = _mm256_set1_epi32((int)wd);
    __m256i mlo[DW_COPY_VECS], mhi[DW_COPY_VECS]; /* per vector: source lanes kept */
    long nvec = (wq + 7) / 8;
    for (long v = 0; v < nvec; v++) {
        long j = 8 * v, s = j * sw - pl; /* lane 0's output column, its source column */
        __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(wq - j)), lane);
        __m256i ix = _mm256_add_epi32(lane, _mm256_set1_epi32((int)s));
        __m256i in = _mm256_andnot_si256(_mm256_cmpgt_epi32(zero, ix), _mm256_cmpgt_epi32(wdv, ix));
        if (sw == 2) { /* source lane 2l, 2l + 1 of lo -> output lane l; of hi -> l + 4 */
            __m256i ix2 = _mm256_add_epi32(ix, _mm256_set1_epi32(8));
            __m256i in2 = _mm256_andnot_si256(_mm256_cmpgt_epi32(zero, ix2),
                                              _mm256_cmpgt_epi32(wdv, ix2));
            mlo[v] = _mm256_and_si256(
                in, _mm256_permutevar8x32_epi32(keep, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3)));
            mhi[v] = _mm256_and_si256(
                in2, _mm256_permutevar8x32_epi32(keep, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7)));
        } else {
            mlo[v] = _mm256_and_si256(in, keep);
            mhi[v] = zero;
        }
    }
    for (long c = 0; c < cg; c++)
        for (long i = ia; i < ib; i++) {
            float *dst = q + (c * (ib - ia) + i - ia) * sw * wq;
            if (i < pt || i >= h + pt) { /* padding: zeros */
                memset(dst, 0, sizeof(float) * sw * wq);
                continue;
            }
            const float *row = x + (c * h + i - pt) * wd;
            /* whether every vector's plain loads stay inside the input tensor */
            int whole = row - pl >= xlo && row - pl + 8 * nvec * sw <= xhi;
            for (long vv = 0; vv < nvec; vv++) { /* the last vector, then in order */
                long v = vv == 0 ? nvec - 1 : vv - 1;
                long j = 8 * v;
                const float *src = row + j * sw - pl;
                __m256 lo, hi = _mm256_setzero_ps();
                if (whole) {
                    lo = _mm256_and_ps(_mm256_loadu_ps(src), _mm256_castsi256_ps(mlo[v]));
                    if (sw == 2)
                        hi = _mm256_and_ps(_mm256_loadu_ps(src + 8), _mm256_castsi256_ps(mhi[v]));
                } else {
                    lo = _mm256_maskload_ps(src, mlo[v]);
                    if (sw == 2) hi = _mm256_maskload_ps(src + 8, mhi[v]);
                }
                if (sw == 2) { /* [a0 a2 b0 b2 | a4 a6 b4 b6] -> a0 a2 a4 a6 b0 b2 b4 b6 */
                    __m256 ev = _mm256_shuffle_ps(lo, hi, 0x88), od = _mm256_shuffle_ps(lo, hi, 0xDD);
                    _mm256_storeu_ps(dst + j, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), 0xD8)));
                    _mm256_storeu_ps(dst + wq + j, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(od), 0xD8)));
                } else {
                    _mm256_storeu_ps(dst + j, lo);
                }
            }
        }
}

/* rows [r0, r1) (a multiple of R of them) x columns [o, o + cols) (8 (V - 1) < cols <= 8 V)
 * of one channel: q its copy (rows rowq floats apart, phases wq), wt its K x K weights */
#define DWK(K, S, R, V)                                                                     \
    __attribute__((target("avx2,fma"))) static void dw_k##K##_s##S##_##R##_##V(             \
        const float *restrict q, long rowq, long wq, const float *restrict wt, float b,     \
        float *restrict y, const float *restrict res, long ow, long oh, long r0, long r1,   \
        long o, long cols, const mi_epi_args *e) {                                          \
        __m256 w[K == 3 ? 9 : 1]; /* 3x3: in registers; 5x5: broadcast at each use */      \
        _Pragma("GCC unroll 9") for (int t = 0; t < (K == 3 ? 9 : 0); t++) w[t] =           \
            _mm256_broadcast_ss(wt + t);                                                    \
        const __m256 lo = _mm256_set1_ps(e->lo), hi = _mm256_set1_ps(e->hi);                \
        const __m256 al = _mm256_set1_ps(e->alpha), be = _mm256_set1_ps(e->beta);           \
        const __m256 bv = _mm256_set1_ps(b);                                                \
        const long tail = cols - 8 * (V - 1);                                               \
        const __m256i mk = mi_tail_avx2(tail);                                              \
        for (long r = r0; r < r1; r += R) {                                                 \
            const float *p = q + r * S * rowq + o;                                          \
            __m256 acc[R][V];                                                               \
            _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                             \
                _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) acc[i][v] = bv;         \
            _Pragma("GCC unroll 5") for (int ky = 0; ky < K; ky++)                          \
                _Pragma("GCC unroll 5") for (int kx = 0; kx < K; kx++)                      \
                    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                     \
                        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) acc[i][v] =     \
                            _mm256_fmadd_ps(K == 3 ? w[(ky * K + kx) % 9]                   \
                                                   : _mm256_broadcast_ss(wt + ky * K + kx), \
                                            _mm256_loadu_ps(p + (i * S + ky) * rowq +       \
                                                            kx % S * wq + kx / S + 8 * v),  \
                                            acc[i][v]);                                     \
            _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                             \
                _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                       \
                    const int part = v == V - 1 && tail < 8;                                \
                    float *yp = y + (r + i) * ow + o + 8 * v;                               \
                    __m256 x = acc[i][v];                                                   \
                    if (res) {                                                              \
                        const float *rp = res + (r + i) * ow + o + 8 * v;                   \
                        x = _mm256_add_ps(x, part ? _mm256_maskload_ps(rp, mk)              \
                                                  : _mm256_loadu_ps(rp));                   \
                    }                                                                       \
                    x = _mm256_min_ps(hi, _mm256_max_ps(lo, x)); /* a NaN passes */         \
                    x = mi_epi_avx2(x, e->act, al, be);                                     \
                    if (part && (res || cols < ow || (r + i) * ow + 8 * V > oh * ow))      \
                        _mm256_maskstore_ps(yp, mk, x);                                     \
                    else _mm256_storeu_ps(yp, x);                                           \
                }                                                                           \
        }                                                                                   \
    }

typedef void (*dwk_fn)(const float *, long, long, const float *, float, float *,
                       const float *, long, long, long, long, long, long, const mi_epi_args *);

/* a family: tiles 4x1, 2x1, 1x1, 2x2, 1x2, 1x3, 1x4, 3x1 (rows x vectors) */
#define DWK_FAMILY(K, S)                                                                    \
    DWK(K, S, 4, 1)                                                                         \
    DWK(K, S, 2, 1)                                                                         \
    DWK(K, S, 1, 1)                                                                         \
    DWK(K, S, 2, 2)                                                                         \
    DWK(K, S, 1, 2)                                                                         \
    DWK(K, S, 1, 3)                                                                         \
    DWK(K, S, 1, 4)                                                                         \
    DWK(K, S, 3, 1)                                                                         \
    static const dwk_fn dwk_##K##_##S[8] = {                                                \
        dw_k##K##_s##S##_4_1, dw_k##K##_s##S##_2_1, dw_k##K##_s##S##_1_1,                   \
        dw_k##K##_s##S##_2_2, dw_k##K##_s##S##_1_2, dw_k##K##_s##S##_1_3,                   \
        dw_k##K##_s##S##_1_4, dw_k##K##_s##S##_3_1};

DWK_FAMILY(3, 1)
DWK_FAMILY(3, 2)
DWK_FAMILY(5, 1)
DWK_FAMILY(5, 2)

/* the family for this call, or NULL (other kernels, strides or dilations: DW_TILE's) */
static const dwk_fn *dwk_family(const mi_dconv2d_args *a) {
    if (a->kh != a->kw || a->sh != a->sw || a->dh != 1 || a->dw != 1) return NULL;
    if (a->kh == 3) return a->sh == 1 ? dwk_3_1 : a->sh == 2 ? dwk_3_2 : NULL;
    if (a->kh == 5) return a->sh == 1 ? dwk_5_1 : a->sh == 2 ? dwk_5_2 : NULL;
    return NULL;
}

/* one channel copied to q: all its rows by the family's tiles */
static void dwk_channel(const dwk_fn *f, long rowq, long wq, long oh, long ow,
                        const float *q, const float *wt, float b, const float *res, float *y,
                        const mi_epi_args *e) {
    long nv = (ow + 7) / 8;
    if (nv == 1) { /* 4 rows at once, the last 1-3 together (7x7: 4 + 3) */
        long r4 = oh / 4 * 4, left = oh - r4;
        if (r4) f[0](q, rowq, wq, wt, b, y, res, ow, oh, 0, r4, 0, ow, e);
        if (left) f[left == 3 ? 7 : left == 2 ? 1 : 2](q, rowq, wq, wt, b, y, res, ow, oh, r4, oh, 0, ow, e);
        return;
    }
    if (nv == 2) { /* 2 x 2, then the last row */
        long r2 = oh / 2 * 2;
        if (r2) f[3](q, rowq, wq, wt, b, y, res, ow, oh, 0, r2, 0, ow, e);
        if (oh > r2) f[4](q, rowq, wq, wt, b, y, res, ow, oh, r2, oh, 0, ow, e);
        return;
    }
    for (long o = 0; o < ow; o += 32) { /* strips of up to 4 vectors */
        long cols = lmin(32, ow - o);
        f[cols <= 8 ? 2 : (cols + 7) / 8 + 2](q, rowq, wq, wt, b, y, res, ow, oh, 0, oh, o, cols, e);
    }
}

#endif
