/* _rnn.c's gate arithmetic, written once for any vector width: _rnn.c includes _act.h with
 * MI_ACT_EXTRA naming this file, so that it is included inside each instruction set's
 * section with that section's macros (_act.h: MI_V, MI_W lanes, MI_TAIL(rem) a mask of the
 * first rem lanes, MI_LOAD_TAIL / MI_STORE_TAIL). Every loop runs over one batch row's H
 * values, masked loads and stores throughout (H is small and odd sizes are common: no
 * separate tail loop). `clip` bounds every activation's input (INFINITY: no bound). No
 * header guard: included three times. */

/* the lanes of [0, n) MI_W at a time (j the first), `tm` the mask of the lanes that exist */
#define RNN_LANES(j, n, tm) for (long j = 0; j < (n); j += MI_W)
#define RNN_MASK(j, n) MI_TAIL((n) - (j) < MI_W ? (n) - (j) : MI_W)

MI_TGT MI_V MI_F(rnn_clip)(MI_V x, MI_V c) { return MI_MIN(MI_MAX(x, MI_SET1(0.0f) - c), c); }

/* LSTM (gates i, o, f, c in ONNX's order, pre-activations g[0:4n] with the input projection,
 * the product and the biases summed): c <- f c + i tanh(g_c), h <- o tanh(c), with the
 * peepholes p (p_i, p_o, p_f) or NULL and coupled gates (f = 1 - i); y (or NULL) gets h */
MI_TARGET static void MI_F(lstm_cell)(const float *g, const float *p, float *c, float *h,
                                      float *y, long n, float clip, int coupled) {
    MI_V cl = MI_SET1(clip), one = MI_SET1(1.0f);
    RNN_LANES(j, n, tm) {
        MI_TM tm = RNN_MASK(j, n);
        MI_V cv = MI_LOAD_TAIL(c + j, tm);
        MI_V gi = MI_LOAD_TAIL(g + j, tm), go = MI_LOAD_TAIL(g + n + j, tm);
        MI_V gf = MI_LOAD_TAIL(g + 2 * n + j, tm), gc = MI_LOAD_TAIL(g + 3 * n + j, tm);
        if (p) {
            gi = MI_FMA(MI_LOAD_TAIL(p + j, tm), cv, gi);
            gf = MI_FMA(MI_LOAD_TAIL(p + 2 * n + j, tm), cv, gf);
        }
        MI_V i = MI_F(sigmoid)(MI_F(rnn_clip)(gi, cl));
        MI_V f;
        if (coupled) f = one - i;
        else f = MI_F(sigmoid)(MI_F(rnn_clip)(gf, cl));
        MI_V cn = MI_FMA(f, cv, i * MI_F(tanh)(MI_F(rnn_clip)(gc, cl)));
        if (p) go = MI_FMA(MI_LOAD_TAIL(p + n + j, tm), cn, go);
        MI_V o = MI_F(sigmoid)(MI_F(rnn_clip)(go, cl));
        MI_V hn = o * MI_F(tanh)(cn);
        MI_STORE_TAIL(c + j, tm, cn);
        MI_STORE_TAIL(h + j, tm, hn);
        if (y) MI_STORE_TAIL(y + j, tm, hn);
    }
}

/* GRU's update and reset gates in place: g[0:2n] <- sigmoid(g), and rh = r h where rh is
 * given (linear_before_reset 0: the reset state the second product reads) */
MI_TARGET static void MI_F(gru_gates)(float *g, const float *h, float *rh, long n,
                                      float clip) {
    MI_V cl = MI_SET1(clip);
    RNN_LANES(j, 2 * n, tm) {
        MI_TM tm = RNN_MASK(j, 2 * n);
        MI_STORE_TAIL(g + j, tm, MI_F(sigmoid)(MI_F(rnn_clip)(MI_LOAD_TAIL(g + j, tm), cl)));
    }
    if (rh) {
        RNN_LANES(j, n, tm) {
            MI_TM tm = RNN_MASK(j, n);
            MI_STORE_TAIL(rh + j, tm, MI_LOAD_TAIL(g + n + j, tm) * MI_LOAD_TAIL(h + j, tm));
        }
    }
}

/* GRU's new state from its gates z = g[0:n], r = g[n:2n] (sigmoids) and the candidate's
 * pre-activation: pre (linear_before_reset 0: X Wh + (r h) Rh + biases), or with q
 * (linear_before_reset 1) pre + r q, q = h Rh + Rbh: h <- (1 - z) tanh(.) + z h */
MI_TARGET static void MI_F(gru_out)(const float *g, const float *pre, const float *q, float *h,
                                    float *y, long n, float clip) {
    MI_V cl = MI_SET1(clip), one = MI_SET1(1.0f);
    RNN_LANES(j, n, tm) {
        MI_TM tm = RNN_MASK(j, n);
        MI_V z = MI_LOAD_TAIL(g + j, tm), a = MI_LOAD_TAIL(pre + j, tm);
        if (q) a = MI_FMA(MI_LOAD_TAIL(g + n + j, tm), MI_LOAD_TAIL(q + j, tm), a);
        MI_V cand = MI_F(tanh)(MI_F(rnn_clip)(a, cl));
        MI_V hn = MI_FMA(z, MI_LOAD_TAIL(h + j, tm), (one - z) * cand);
        MI_STORE_TAIL(h + j, tm, hn);
        if (y) MI_STORE_TAIL(y + j, tm, hn);
    }
}

/* RNN: h <- tanh(g) (relu 1: max(g, 0)) */
MI_TARGET static void MI_F(rnn_cell)(const float *g, float *h, float *y, long n, float clip,
                                     int relu) {
    MI_V cl = MI_SET1(clip);
    RNN_LANES(j, n, tm) {
        MI_TM tm = RNN_MASK(j, n);
        MI_V a = MI_F(rnn_clip)(MI_LOAD_TAIL(g + j, tm), cl);
        MI_V hn = relu ? MI_MAX(a, MI_SET1(0.0f)) : MI_F(tanh)(a);
        MI_STORE_TAIL(h + j, tm, hn);
        if (y) MI_STORE_TAIL(y + j, tm, hn);
    }
}

#undef RNN_LANES
#undef RNN_MASK
