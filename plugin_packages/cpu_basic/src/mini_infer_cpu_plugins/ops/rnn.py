"""Recurrent layers: RNN, GRU, LSTM (all opsets; ``layout`` from 14).

The input projection of every time step is one matmul ((T*B, I) @ W^T) before the loop;
each step then does one (B, H) @ R^T product and the gate arithmetic. Directions forward,
reverse and bidirectional; ``sequence_lens`` stops a batch entry after its length (its state
is kept, its Y rows are 0; the reverse direction starts at its last valid step); ``clip``
bounds the inputs of the activations. Shapes, directions and activations are the schemas'
(:mod:`mini_infer_core.ops.rnn`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from mini_infer_core.ops import rnn as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._nn_util import acc_dtype, put
from ._rnn_util import Act, _sigmoid, make_activation
from ._util import kernels

__all__ = ["RNN", "GRU_1", "GRU", "LSTM"]

Array = NDArray[Any]


class _Recurrent(CpuPlugin, schema.RecurrentBase):
    def setup(self) -> None:
        super().setup()
        self.fns = [make_activation(a) for a in self.acts]

    def _clip(self, x: Array) -> Array:
        c = self.attrs["clip"]
        return x if c is None else np.clip(x, -c, c)

    def _run(self, x: Array, w: Array, r: Array, b: Array | None, lens: Array | None,
             states: list[Array | None], extra: Array | None, out: Any) -> None:
        layout = self.attrs.get("layout", 0)
        dt = acc_dtype(x.dtype)
        if layout:
            x = x.transpose(1, 0, 2)
            states = [None if s is None else s.transpose(1, 0, 2) for s in states]
        t_len, batch, _ = x.shape
        nd, hid = len(self.reverse), r.shape[-1]
        g = self.gates
        y = np.zeros((t_len, nd, batch, hid), dt)
        finals: list[Array] = [np.zeros((nd, batch, hid), dt) for _ in range(self.n_state)]
        steps = np.arange(t_len)
        valid = (steps[:, None] < lens.reshape(1, -1)) if lens is not None else None
        # copy=False: the weights are read where they are (float32 models copied W and R
        # on every run, R on every time step)
        xa = x.astype(dt, copy=False)
        for d, rev in enumerate(self.reverse):
            bias = np.zeros(2 * g * hid, dt) if b is None else b[d].astype(dt, copy=False)
            xw = (xa.reshape(t_len * batch, -1) @ w[d].astype(dt, copy=False).T).reshape(
                t_len, batch, g * hid) + bias[:g * hid]
            st = [np.zeros((batch, hid), dt) if s is None else s[d].astype(dt)
                  for s in states]
            ex = None if extra is None else extra[d].astype(dt, copy=False)
            acts = self.fns[d * len(self.default_acts):(d + 1) * len(self.default_acts)]
            rd, rb = r[d].astype(dt, copy=False), bias[g * hid:]
            for t in (steps[::-1] if rev else steps):
                new = self._step(xw[t], st, rd, rb, ex, acts)
                if valid is not None:
                    m = valid[t][:, None]
                    new = [np.where(m, n, s) for n, s in zip(new, st, strict=True)]
                    y[t, d] = np.where(m, new[0], 0)
                else:
                    y[t, d] = new[0]
                st = new
            for k in range(self.n_state):
                finals[k][d] = st[k]
        if layout:
            put(out, 0, y.transpose(2, 0, 1, 3))
            for k, f in enumerate(finals):
                put(out, 1 + k, f.transpose(1, 0, 2))
        else:
            put(out, 0, y)
            for k, f in enumerate(finals):
                put(out, 1 + k, f)

    def _step(self, xw: Array, st: list[Array], r: Array, rb: Array, extra: Array | None,
              acts: list[Act]) -> list[Array]:
        raise NotImplementedError


class RNN(_Recurrent, schema.RNN):
    """H = f(X W^T + H R^T + Wb + Rb)."""

    def compute(self, x: Array, w: Array, r: Array, b: Array | None = None,
                lens: Array | None = None, h0: Array | None = None, *, out: Any,
                **_: Any) -> None:
        self._run(x, w, r, b, lens, [h0], None, out)

    def _step(self, xw: Array, st: list[Array], r: Array, rb: Array, extra: Array | None,
              acts: list[Act]) -> list[Array]:
        return [acts[0](self._clip(xw + st[0] @ r.T + rb))]


class _GRU(_Recurrent, schema.GRUBase):
    """Gates z, r, h: z = f(...), r = f(...), h~ = g(X Wh^T + (r * H) Rh^T + Rbh + Wbh)
    (with linear_before_reset: g(X Wh^T + r * (H Rh^T + Rbh) + Wbh)),
    H = (1 - z) * h~ + z * H."""

    def compute(self, x: Array, w: Array, r: Array, b: Array | None = None,
                lens: Array | None = None, h0: Array | None = None, *, out: Any,
                **_: Any) -> None:
        self._run(x, w, r, b, lens, [h0], None, out)

    def _step(self, xw: Array, st: list[Array], r: Array, rb: Array, extra: Array | None,
              acts: list[Act]) -> list[Array]:
        h = st[0]
        hid = h.shape[1]
        f, g = acts
        zr = xw[:, :2 * hid] + h @ r[:2 * hid].T + rb[:2 * hid]
        z = f(self._clip(zr[:, :hid]))
        rg = f(self._clip(zr[:, hid:]))
        rh, rbh = r[2 * hid:], rb[2 * hid:]
        if self.attrs.get("linear_before_reset", 0):
            cand = g(self._clip(xw[:, 2 * hid:] + rg * (h @ rh.T + rbh)))
        else:
            cand = g(self._clip(xw[:, 2 * hid:] + (rg * h) @ rh.T + rbh))
        return [(1 - z) * cand + z * h]


GRU_1, GRU = kernels(_GRU, schema.GRU_1, schema.GRU, module=__name__)


class LSTM(_Recurrent, schema.LSTM):
    """Gates i, o, f, c with optional peepholes P = (p_i, p_o, p_f):
    C = f * C + i * g(c), H = o * h(C); ``input_forget`` couples f = 1 - i."""

    def compute(self, x: Array, w: Array, r: Array, b: Array | None = None,
                lens: Array | None = None, h0: Array | None = None,
                c0: Array | None = None, p: Array | None = None, *, out: Any,
                **_: Any) -> None:
        if self._plain and p is None and lens is None and \
                self._run_plain(x, w, r, b, h0, c0, out):
            return
        self._run(x, w, r, b, lens, [h0, c0], p, out)

    def _run_plain(self, x: Array, w: Array, r: Array, b: Array | None, h0: Array | None,
                   c0: Array | None, out: Any) -> bool:
        """The plain LSTM (sigmoid, tanh, tanh; no clip, peepholes, coupled gates or
        sequence lengths; layout 0) with every array of one float dtype, written straight
        into the outputs: each step one (B, H) @ R^T product added to its rows of the input
        projection, the gates computed in place there (sigmoid as 0.5 tanh(x / 2) + 0.5).
        False where it does not apply (the general loop runs)."""
        dt = x.dtype
        if self.attrs.get("layout", 0) or dt.type not in (np.float32, np.float64) or any(
                a is not None and a.dtype != dt for a in (w, r, b, h0, c0)):
            return False
        outs = (*out, None, None, None) if isinstance(out, tuple) else (out, None, None)
        y, yh, yc = outs[:3]
        t_len, batch, _ = x.shape
        hid = r.shape[-1]
        x2 = x.reshape(t_len * batch, -1)
        for d, rev in enumerate(self.reverse):
            xw = x2 @ w[d].T
            if b is not None:
                xw += b[d, :4 * hid]
                xw += b[d, 4 * hid:]
            h = np.array(h0[d]) if h0 is not None else np.zeros((batch, hid), dt)
            c = np.array(c0[d]) if c0 is not None else np.zeros((batch, hid), dt)
            rt = r[d].T
            for t in (range(t_len - 1, -1, -1) if rev else range(t_len)):
                g = xw[t * batch:(t + 1) * batch]
                g += h @ rt
                _plain_cell(_gate_views(g), c, h)
                if y is not None:
                    y[t, d] = h
            _last_states(yh, yc, d, h, c)
        return True

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """The plain LSTM (as :meth:`_run_plain`) bound to the step's arrays, where W, R and
        B are constants (read-only arrays): per direction one (I+H, 4H) matrix [W R]^T and
        one bias made once, and each time step one (B, I+H) @ (I+H, 4H) product of [x_t h]
        into a buffer kept with the call, whose H columns hold h itself. silero-vad's LSTM
        (T = B = 1, I = H = 128): 14 NumPy calls a step instead of ~25 with their temporaries
        and the run's Python (65-80 -> ~35 us at 1 thread, loaded machine). None where it
        does not apply (``enqueue`` runs)."""
        ins = [*inputs, None, None, None, None, None][:8]
        x, w, r, b, lens, h0, c0, p = ins
        arrays = [a for a in (x, w, r, b, h0, c0) if a is not None]
        if not self._plain or lens is not None or p is not None or \
                self.attrs.get("layout", 0) or not all(
                    isinstance(a, np.ndarray) for a in (*arrays, *outputs) if a is not None) \
                or x.dtype.type not in (np.float32, np.float64) or any(
                    a.dtype != x.dtype for a in arrays) or x.ndim != 3 or any(
                    a.flags.writeable for a in (w, r, b) if a is not None):
            return None
        outs = [*outputs, None, None, None][:3]
        return partial(_bound_lstm, self.reverse, x, _joined(w, r, b, x.shape[1:]),
                       (h0, c0), outs)

    def setup(self) -> None:
        super().setup()
        #: sigmoid, tanh, tanh everywhere, no clip, no coupled gates: i, o and f are one
        #: sigmoid over the first three gate blocks (ONNX's order i, o, f, c)
        self._plain = (self.attrs["clip"] is None and not self.attrs["input_forget"]
                       and [a.name for a in self.acts]
                       == list(self.default_acts) * len(self.reverse))

    def _step(self, xw: Array, st: list[Array], r: Array, rb: Array, extra: Array | None,
              acts: list[Act]) -> list[Array]:
        h, c = st
        hid = h.shape[1]
        f, g, hf = acts
        gates = xw + h @ r.T + rb
        if self._plain and extra is None:
            s = _sigmoid(gates[:, :3 * hid])
            c_new = s[:, 2 * hid:] * c + s[:, :hid] * np.tanh(gates[:, 3 * hid:])
            return [s[:, hid:2 * hid] * np.tanh(c_new), c_new]
        gi, go, gf, gc = (gates[:, k * hid:(k + 1) * hid] for k in range(4))
        pi, po, pf = (0, 0, 0) if extra is None else (
            extra[:hid], extra[hid:2 * hid], extra[2 * hid:])
        i = f(self._clip(gi + pi * c))
        if self.attrs["input_forget"]:
            fg = 1 - i
        else:
            fg = f(self._clip(gf + pf * c))
        c_new = fg * c + i * g(self._clip(gc))
        o = f(self._clip(go + po * c_new))
        return [o * hf(c_new), c_new]


def _joined(w: Array, r: Array, b: Array | None, batch_in: tuple[int, ...]
            ) -> list[tuple[Array, ...]]:
    """Per direction [W R]^T (contiguous, (I+H, 4H)), the summed biases Wb + Rb, and the
    buffers of a step for ``batch_in`` (B, I): [x_t h] (B, I+H), the gates (B, 4H), c (B, H)."""
    hid = r.shape[-1]
    batch, n_in = batch_in
    out: list[tuple[Array, ...]] = []
    for d in range(w.shape[0]):
        wr = np.ascontiguousarray(np.concatenate([w[d], r[d]], axis=1).T)
        bias = np.zeros(4 * hid, w.dtype) if b is None else b[d, :4 * hid] + b[d, 4 * hid:]
        out.append((wr, bias, np.empty((batch, n_in + hid), w.dtype),
                    np.empty((batch, 4 * hid), w.dtype), np.empty((batch, hid), w.dtype)))
    return out


def _bound_lstm(reverse: Sequence[bool], x: Array, joined: list[tuple[Array, ...]],
                states: tuple[Array | None, Array | None], outs: list[Array | None]) -> None:
    """A plain LSTM run (gates i, o, f, c in ONNX's order; sigmoid as 0.5 tanh(x/2) + 0.5)
    over ``x`` with the weights joined by :func:`_joined`; Y, Y_h, Y_c written where given."""
    y, yh, yc = outs
    h0, c0 = states
    t_len, n_in = x.shape[0], x.shape[2]
    for d, rev in enumerate(reverse):
        wr, bias, xh, g, c = joined[d]  # [x_t h]: h lives in xh's last columns
        xt, h = xh[:, :n_in], xh[:, n_in:]
        if h0 is None:
            h.fill(0)
        else:
            np.copyto(h, h0[d])
        if c0 is None:
            c.fill(0)
        else:
            np.copyto(c, c0[d])
        views = _gate_views(g)
        for t in (range(t_len - 1, -1, -1) if rev else range(t_len)):
            np.copyto(xt, x[t])
            np.matmul(xh, wr, out=g)
            g += bias
            _plain_cell(views, c, h)
            if y is not None:
                y[t, d] = h
        _last_states(yh, yc, d, h, c)


def _gate_views(g: Array) -> tuple[Array, ...]:
    """Views of the gates' pre-activations ``g`` (B, 4H; i, o, f, c in ONNX's order) that
    :func:`_plain_cell` takes: i, o and f together, c, then i, o and f each."""
    hid = g.shape[1] // 4
    s = g[:, :3 * hid]
    return s, g[:, 3 * hid:], s[:, :hid], s[:, hid:2 * hid], s[:, 2 * hid:]


def _plain_cell(views: tuple[Array, ...], c: Array, h: Array) -> None:
    """One step of the plain LSTM, in place, over the gates' :func:`_gate_views`: i, o and f
    become sigmoids (as 0.5 tanh(x / 2) + 0.5), c a tanh, then c <- f c + i c and
    h <- o tanh(c)."""
    s, gc, gi, go, gf = views
    s *= 0.5
    np.tanh(s, out=s)
    s *= 0.5
    s += 0.5
    np.tanh(gc, out=gc)
    gc *= gi
    c *= gf
    c += gc
    np.tanh(c, out=h)
    h *= go


def _last_states(yh: Array | None, yc: Array | None, d: int, h: Array, c: Array) -> None:
    """Y_h and Y_c, where asked for: direction ``d``'s last h and c."""
    if yh is not None:
        yh[d] = h
    if yc is not None:
        yc[d] = c
