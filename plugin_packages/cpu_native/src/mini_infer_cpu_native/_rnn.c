/*
 * Recurrent layers (ONNX LSTM, GRU with linear_before_reset 0 and 1, RNN) in float32, one
 * direction per call, every time step inside the call:
 *
 *   1. the input projection of all steps, X W^T + bias, as one product on the compiled GEMM
 *      (mi_matmul_f32, on the pool when large), into work (t * b rows of GH);
 *   2. per step the recurrent product h R^T added to that step's rows (the GEMM's residual:
 *      one pass): up to 4 batch rows on AVX-512 by row48 here, else mi_gemv_f32 for one or
 *      two rows and mi_matmul_f32 above; GRU
 *      takes two products (z and r, then the h gate: (r h) Rh^T, or h Rh^T + Rbh with
 *      linear_before_reset);
 *   3. the gate arithmetic of each batch row fused in one pass over its H values (_rnn_cell.h:
 *      _act.h's vectorised sigmoid and tanh, AVX-512, AVX2 or plain C as mi_act_isa says),
 *      writing h (and c) in place and Y's row.
 *
 * sequence_lens: a row past its length keeps its state and gets zeros in Y (the reverse
 * direction starts at its last valid step). The weights come packed (the plugin packs them
 * when the engine is built; mi_gemm_pack_b_f32's panels). Arguments: _args.h.
 */
#include <math.h>
#include <string.h>

#include "_args.h"
#include "_common.h"

#define MI_ACT_EXTRA "_rnn_cell.h"
#include "_act.h"

int mi_gemm_isa(void); /* _gemm.c: 0 plain C, 1 AVX2, 2 AVX-512 */

#if MI_ACT_X86
/* one row: c (n) = a (k) . B + cbias + res, B in panels of 48 columns (each k rows of its
 * width, the last one narrower), on AVX-512: a panel's 3 vectors x 4 streams of k (12
 * accumulators: the FMAs' latency hidden), the panel's rows loaded masked; the recurrent
 * product of a step (h R^T, R^T in L1/L2 from the step before): mi_gemv_f32's AVX2 tiles of
 * 24 columns ran it at about half this rate */
__attribute__((target("avx512f,fma"))) static void row48(const float *a, long k,
                                                          const float *bp, long n,
                                                          const float *cbias,
                                                          const float *res, float *c) {
    for (long p0 = 0; p0 < n; p0 += 48) {
        const long w = n - p0 < 48 ? n - p0 : 48;
        const float *pb = bp + p0 * k;
        __mmask16 m[3];
        for (int v = 0; v < 3; v++) {
            long lanes = w - 16 * v;
            lanes = lanes < 0 ? 0 : lanes > 16 ? 16 : lanes;
            m[v] = (__mmask16)((1u << lanes) - 1u);
        }
        __m512 acc[4][3];
        for (int u = 0; u < 4; u++)
            for (int v = 0; v < 3; v++) acc[u][v] = _mm512_setzero_ps();
        long kk = 0;
        for (; kk + 4 <= k; kk += 4)
            for (int u = 0; u < 4; u++) {
                const __m512 av = _mm512_set1_ps(a[kk + u]);
                const float *row = pb + (kk + u) * w;
                for (int v = 0; v < 3; v++)
                    acc[u][v] = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m[v], row + 16 * v),
                                                acc[u][v]);
            }
        for (; kk < k; kk++) {
            const __m512 av = _mm512_set1_ps(a[kk]);
            for (int v = 0; v < 3; v++)
                acc[0][v] = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m[v], pb + kk * w + 16 * v),
                                            acc[0][v]);
        }
        for (int v = 0; v < 3; v++) {
            if (!m[v]) break;
            __m512 s = _mm512_add_ps(_mm512_add_ps(acc[0][v], acc[1][v]),
                                     _mm512_add_ps(acc[2][v], acc[3][v]));
            const long j = p0 + 16 * v;
            if (cbias) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m[v], cbias + j));
            if (res) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m[v], res + j));
            _mm512_mask_storeu_ps(c + j, m[v], s);
        }
    }
}
#endif

/* c (m x n, rows ldc apart) = a (m x k, rows a_rs apart) . B (packed, panels of `panel`) +
 * cbias + res (rows ldr apart) */
static int product(const float *a, long a_rs, const float *bp, long panel, float *c, long ldc,
                   const float *res, long ldr, const float *cbias, long m, long n, long k) {
#if MI_ACT_X86
    if (m <= 4 && panel == 48 && mi_gemm_isa() == 2) {
        for (long r = 0; r < m; r++)
            row48(a + r * a_rs, k, bp, n, cbias, res ? res + r * ldr : NULL, c + r * ldc);
        return MI_OK;
    }
#endif
    if (m <= 2) {
        mi_gemv_args g = {.a = a, .b = bp, .c = c, .cbias = cbias, .res = res, .m = m, .n = n,
                          .k = k, .a_rs = a_rs, .a_ks = 1, .ldc = ldc, .ldr = ldr,
                          .panel = panel, .alpha = 1.0f, .lo = -INFINITY, .hi = INFINITY};
        return mi_gemv_f32(&g);
    }
    mi_matmul_args g = {.a = a, .b = bp, .c = c, .cbias = cbias, .res = res, .m = m, .n = n,
                        .k = k, .a_rs = a_rs, .a_ks = 1, .ldc = ldc, .ldr = ldr, .batch0 = 1,
                        .batch1 = 1, .b_packed = panel == 48 ? 1 : 2, .alpha = 1.0f,
                        .lo = -INFINITY, .hi = INFINITY};
    return mi_matmul_f32(&g);
}

/* the input projection xw (t * b rows of gh, step-major) = X W^T + bias */
static int project(const mi_rnn_args *a, float *xw, long gh) {
    long t = a->t, b = a->b;
    mi_matmul_args g = {.a = a->x, .b = a->w, .c = xw, .cbias = a->bias, .n = gh, .k = a->i,
                        .a_ks = 1, .batch0 = 1, .batch1 = 1,
                        .b_packed = a->panel == 48 ? 1 : 2, .alpha = 1.0f, .lo = -INFINITY,
                        .hi = INFINITY};
    if (a->x_ts == b * a->x_bs || t == 1) { /* steps one after the other: one product */
        g.m = t * b;
        g.a_rs = a->x_bs;
        g.ldc = gh;
    } else { /* batch-major (layout 1): a product per batch row over its steps */
        g.m = t;
        g.a_rs = a->x_ts;
        g.ldc = b * gh;
        g.batch0 = b;
        g.a_s0 = a->x_bs;
        g.c_s0 = gh;
    }
    return mi_matmul_f32(&g);
}

static int valid(const mi_rnn_args *a, long step, long row) {
    return !a->lens || step < (long)a->lens[row];
}

int mi_rnn_f32(const mi_rnn_args *a) {
    if (!a->x || !a->w || !a->r || !a->work || a->kind < MI_RNN || a->kind > MI_LSTM ||
        ANY_NEGATIVE(a->t, a->b, a->i, a->h, a->st_bs) || (a->panel != 24 && a->panel != 48))
        return MI_EARGS;
    const long t = a->t, b = a->b, h = a->h;
    const long gates = a->kind == MI_LSTM ? 4 : a->kind == MI_GRU ? 3 : 1, gh = gates * h;
    if (b == 0) return MI_OK;
    float *xw = a->work, *g = xw + t * b * gh, *hs = g + b * gh, *cs = hs + b * h,
          *rh = cs + b * h;
    if (t > 0 && project(a, xw, gh)) return MI_EARGS;
    for (long r = 0; r < b; r++) {
        if (a->h0) memcpy(hs + r * h, a->h0 + r * a->st_bs, (size_t)h * sizeof(float));
        else memset(hs + r * h, 0, (size_t)h * sizeof(float));
        if (a->c0) memcpy(cs + r * h, a->c0 + r * a->st_bs, (size_t)h * sizeof(float));
        else memset(cs + r * h, 0, (size_t)h * sizeof(float));
    }
    const int isa = mi_act_isa();
    const float clip = a->clip;
    const int lbr = a->linear_before_reset;
    const float *rzr = a->r, *rhh = a->r + h * 2 * h; /* GRU: R^T's z r columns, its h ones */
    for (long s = 0; s < t; s++) {
        const long step = a->reverse ? t - 1 - s : s;
        const float *xt = xw + step * b * gh;
        int bad = 0;
        if (a->kind == MI_LSTM || a->kind == MI_RNN) {
            bad = product(hs, h, a->r, a->panel, g, gh, xt, gh, NULL, b, gh, h);
        } else {
            bad = product(hs, h, rzr, a->panel, g, gh, xt, gh, NULL, b, 2 * h, h);
            if (!bad) {
                for (long r = 0; r < b; r++)
                    BY_ISA(isa, mi_gru_gates, g + r * gh, hs + r * h, lbr ? NULL : rh + r * h,
                           h, clip);
                if (lbr) /* q = h Rh^T + Rbh, into rh */
                    bad = product(hs, h, rhh, a->panel, rh, h, NULL, 0, a->rbh, b, h, h);
                else /* the candidate's pre-activation: (r h) Rh^T + xw's h part, in g */
                    bad = product(rh, h, rhh, a->panel, g + 2 * h, gh, xt + 2 * h, gh, NULL, b,
                                  h, h);
            }
        }
        if (bad) return MI_EARGS;
        for (long r = 0; r < b; r++) {
            float *y = a->y ? a->y + step * a->y_ts + r * a->y_bs : NULL;
            if (!valid(a, step, r)) {
                if (y) memset(y, 0, (size_t)h * sizeof(float));
                continue;
            }
            const float *gr = g + r * gh;
            float *hr = hs + r * h;
            switch (a->kind) {
            case MI_LSTM:
                BY_ISA(isa, mi_lstm_cell, gr, a->peep, cs + r * h, hr, y, h, clip,
                       a->input_forget);
                break;
            case MI_GRU:
                if (lbr)
                    BY_ISA(isa, mi_gru_out, gr, xt + r * gh + 2 * h, rh + r * h, hr, y, h, clip);
                else
                    BY_ISA(isa, mi_gru_out, gr, gr + 2 * h, NULL, hr, y, h, clip);
                break;
            default: BY_ISA(isa, mi_rnn_cell, gr, hr, y, h, clip, a->relu); break;
            }
        }
    }
    for (long r = 0; r < b; r++) {
        if (a->yh) memcpy(a->yh + r * a->st_bs, hs + r * h, (size_t)h * sizeof(float));
        if (a->yc) memcpy(a->yc + r * a->st_bs, cs + r * h, (size_t)h * sizeof(float));
    }
    return MI_OK;
}
