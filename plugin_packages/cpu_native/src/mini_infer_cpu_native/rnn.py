"""LSTM, GRU (linear_before_reset 0 and 1) and RNN in float32 on the compiled GEMM, the gate
arithmetic fused (``_rnn.c``): per direction one compiled call runs every time step (the
input projection of all steps as one product, then per step the recurrent product added to
that step's projection and one vectorised pass of sigmoids and tanhs per batch row).

The classes are cpu_basic's (same fields, shapes and serialized form) with ``compute``
taking the compiled path for float32 with the default activations (RNN: Tanh or Relu),
any clip, peepholes, coupled gates, ``sequence_lens``, initial states, directions and
layouts. W and R are packed by the build (``pack_constants``: panels of the GEMM, recorded
in ``__wpacked__`` and ``__rpacked__`` as the panel width) and stored so in the engine file;
anything else (float64, other activations) is cpu_basic's, with packed weights unpacked once.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, ClassVar

import numpy as np
from mini_infer_cpu_plugins.ops import rnn as _rnn
from mini_infer_cpu_plugins.toolkit import Scratch

from mini_infer_core.plugin import Repacked
from mini_infer_core.plugin.arrays import NDArray

from ._abi import RnnArgs
from ._derived import Derived
from ._kept import KeptCalls
from ._kernels import address
from ._native import B_PANEL, B_PANEL_AVX2, Call, _call, _kernel, gemm_isa, pack_b, run_calls
from ._native import unpack_b as _unpack_b
from .catalog import NativeCreator

__all__ = ["GRU", "GRU_1", "LSTM", "RNN", "NativeCreator"]

Array = NDArray[Any]

_rnn_kernel = _kernel("mi_rnn_f32", RnnArgs)
#: mi_rnn_args.kind
_KINDS = {"RNN": 0, "GRU": 1, "LSTM": 2}
#: the activations of one direction the compiled cell computes
_NATIVE_ACTS = {"RNN": (("tanh",), ("relu",)), "GRU": (("sigmoid", "tanh"),),
                "LSTM": (("sigmoid", "tanh", "tanh"),)}


def _blocks(op: str, hid: int) -> list[tuple[int, int]]:
    """The column ranges of R^T packed each as a matrix of its own (GRU: z and r, then h)."""
    g = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    return [(0, 2 * hid), (2 * hid, 3 * hid)] if op == "GRU" else [(0, g * hid)]


def _pack_dirs(m: Array, blocks: list[tuple[int, int]], width: int) -> Array:
    """``m`` (dirs, GH, K) as, per direction, each block of columns of m[d]^T packed in panels
    of ``width`` (the same elements, reshaped to ``m``'s shape)."""
    parts = [pack_b(np.ascontiguousarray(m[d, c0:c1].T, np.float32), width)
             for d in range(m.shape[0]) for c0, c1 in blocks]
    return np.concatenate(parts).reshape(m.shape)


def _unpack_dirs(p: Array, blocks: list[tuple[int, int]], width: int) -> Array:
    """:func:`_pack_dirs` undone."""
    dirs, _, k = p.shape
    out = np.empty(p.shape, np.float32)
    for d in range(dirs):
        flat, at = p[d].reshape(-1), 0
        for c0, c1 in blocks:
            n = c1 - c0
            out[d, c0:c1] = _unpack_b(flat[at: at + k * n], k, n, width).T
            at += k * n
    return out


class _Compiled(KeptCalls, Derived):
    """The compiled path of the recurrent plugins (mixed before cpu_basic's class)."""

    op_type: str
    attrs: dict[str, Any]
    hidden: dict[str, Any]
    scratch: Any
    reverse: list[bool]
    acts: list[Any]
    default_acts: Any
    _calls: tuple[tuple[Any, ...], list[Call]] | None = None
    record: Any  # cpu_basic's: sets a hidden field

    def setup(self) -> None:
        super().setup()  # type: ignore[misc]
        self.scratch = Scratch()

    def _native_acts(self) -> bool:
        """Whether every direction's activations are ones the compiled cell computes."""
        n = len(self.default_acts)
        names = [a.name for a in self.acts]
        return all(tuple(names[d * n:(d + 1) * n]) in _NATIVE_ACTS[self.op_type]
                   for d in range(len(self.reverse)))

    def pack_constants(self, inputs: Sequence[Any], constants: Sequence[Any]
                       ) -> dict[int, Any]:
        """Constant float32 W and R stored as the GEMM's panels (24 columns wide where the
        AVX2 kernels run, else 48), per direction W^T and R^T (GRU: R^T's z and r columns,
        then its h ones, each packed alone)."""
        if not self._native_acts():
            return {}
        width = B_PANEL_AVX2 if gemm_isa() == "avx2" else B_PANEL
        out: dict[int, Any] = {}
        for index, field in ((1, "__wpacked__"), (2, "__rpacked__")):
            m = constants[index] if len(constants) > index else None
            if m is None or m.ndim != 3 or m.dtype != np.float32:
                continue
            hid = m.shape[1] // {"RNN": 1, "GRU": 3, "LSTM": 4}[self.op_type]
            blocks = _blocks(self.op_type, hid) if index == 2 else [(0, m.shape[1])]
            out[index] = Repacked(_pack_dirs(m, blocks, width),
                                  partial(self.record, field, width))
        return out

    def _weights(self, w: Array, r: Array) -> tuple[Array, Array, int]:
        """W and R packed per direction in panels of one width (packed here once where the
        build did not, or where the two differ)."""
        hid = r.shape[2]
        wp, rp = self.hidden.get("__wpacked__"), self.hidden.get("__rpacked__")
        width = wp or rp or (B_PANEL_AVX2 if gemm_isa() == "avx2" else B_PANEL)
        blocks = _blocks(self.op_type, hid)
        w = w if wp == width else self._derived(w, "w", lambda m: _pack_dirs(
            m, [(0, m.shape[1])], width))
        r = r if rp == width else self._derived(r, "r", lambda m: _pack_dirs(
            m, blocks, width))
        return w, r, width

    def _onnx_weights(self, w: Array, r: Array) -> tuple[Array, Array]:
        """W and R in ONNX's order (undoing the build's packing) for cpu_basic's kernel."""
        wp, rp = self.hidden.get("__wpacked__"), self.hidden.get("__rpacked__")
        if wp:
            w = self._derived(w, "w_onnx", lambda m: _unpack_dirs(m, [(0, m.shape[1])], wp))
        if rp:
            r = self._derived(r, "r_onnx", lambda m: _unpack_dirs(
                m, _blocks(self.op_type, m.shape[2]), rp))
        return w, r

    def _biases(self, b: Array | None, hid: int) -> tuple[Array | None, Array | None]:
        """Per direction the projection's bias (dirs, GH) and GRU's Rb of the h gate (dirs,
        H) where linear_before_reset keeps it inside (else None)."""
        lbr = self.op_type == "GRU" and bool(self.attrs.get("linear_before_reset", 0))
        if b is None:
            return None, None
        gh = b.shape[1] // 2

        def summed(v: Array) -> Array:
            s = (v[:, :gh] + v[:, gh:]).astype(np.float32)
            if lbr:
                s[:, 2 * hid:] = v[:, 2 * hid:gh]
            return np.ascontiguousarray(s)

        bias = self._derived(b, "bias", summed)
        rbh = self._derived(b, "rbh", lambda v: np.ascontiguousarray(
            v[:, gh + 2 * hid:], np.float32)) if lbr else None
        return bias, rbh

    def compute(self, *ins: Any, out: Any, **kw: Any) -> None:
        outs = list(out) if isinstance(out, tuple) else [out]
        key = (*ins, *outs)
        kept = self._calls
        if kept is not None and len(kept[0]) == len(key) and all(
                a is k for a, k in zip(kept[0], key, strict=True)):
            run_calls(kept[1])
            return
        calls = self._plan(list(ins), outs)
        if calls is None:
            w, r = self._onnx_weights(ins[1], ins[2])
            super().compute(ins[0], w, r, *ins[3:], out=out, **kw)  # type: ignore[misc]
            return
        self._calls = (key, calls)
        run_calls(calls)

    def _plan(self, ins: list[Any], outs: list[Any]) -> list[Call] | None:
        """The compiled calls (one per direction), or None where cpu_basic's kernel runs."""
        ins = [*ins, *[None] * (8 - len(ins))]
        x, w, r, b, lens, h0, c0, p = ins
        if self.op_type != "LSTM":
            c0 = p = None
        outs = [*outs, None, None, None][:3]
        floats = [a for a in (x, w, r, b, h0, c0, p, *outs) if a is not None]
        if not self._native_acts() or x.ndim != 3 or any(
                not isinstance(a, np.ndarray) or a.dtype != np.float32
                or not a.flags.c_contiguous or not a.flags.aligned for a in floats):
            return None
        layout = int(self.attrs.get("layout", 0) or 0)
        t_len, batch = (x.shape[1], x.shape[0]) if layout else (x.shape[0], x.shape[1])
        n_in, hid, dirs = x.shape[2], r.shape[2], len(self.reverse)
        gh = r.shape[1]
        if w.shape != (dirs, gh, n_in) or r.shape != (dirs, gh, hid):
            return None
        st_shape = (batch, dirs, hid) if layout else (dirs, batch, hid)
        y_shape = (batch, t_len, dirs, hid) if layout else (t_len, dirs, batch, hid)
        if any(s is not None and s.shape != st_shape for s in (h0, c0, *outs[1:])) or (
                outs[0] is not None and outs[0].shape != y_shape):
            return None
        if p is not None and p.shape != (dirs, 3 * hid):
            return None
        calls: list[Call] = []
        if lens is not None:
            if lens.shape != (batch,):
                return None
            if lens.dtype != np.int32:
                lens32 = self.scratch.buffer("rnn_lens", (batch,), np.int32)
                calls.append((np.copyto, (lens32, lens, "unsafe")))
                lens = lens32
            elif not (lens.flags.c_contiguous and lens.flags.aligned):
                return None
        wp, rp, width = self._weights(w, r)
        bias, rbh = self._biases(b, hid)
        work = self.scratch.buffer("rnn", (t_len * batch * gh + batch * gh + 3 * batch * hid,),
                                   np.float32)
        kn = "mi_rnn_f32"
        # per direction: Y's and the states' offsets (floats), then their strides
        if layout:
            x_ts, x_bs, y_ts, y_bs, st_bs = n_in, t_len * n_in, dirs * hid, t_len * dirs * hid, \
                dirs * hid
            y_off, st_off = hid, hid
        else:
            x_ts, x_bs, y_ts, y_bs, st_bs = batch * n_in, n_in, dirs * batch * hid, hid, hid
            y_off, st_off = batch * hid, batch * hid

        def base(a: Array | None, writable: bool, name: str) -> int:
            return int(address(a, 0 if a is None else a.size, writable, kn, name))

        px, pw, pr = base(x, False, "x"), base(wp, False, "w"), base(rp, False, "r")
        pb, prb, pp = base(bias, False, "bias"), base(rbh, False, "rbh"), base(p, False, "peep")
        ph, pc = base(h0, False, "h0"), base(c0, False, "c0")
        py, pyh, pyc = (base(o, True, n) for o, n in zip(outs, ("y", "yh", "yc"), strict=True))
        plens = 0 if lens is None else int(lens.ctypes.data)
        pwork = base(work, True, "work")
        f4 = 4
        clip = self.attrs.get("clip")
        relu = int(self.op_type == "RNN" and self.acts[0].name == "relu")
        for d, rev in enumerate(self.reverse):
            def at(ptr: int, step: int, d: int = d) -> int:
                return ptr + d * step * f4 if ptr else 0

            args = RnnArgs(
                px, pw + d * gh * n_in * f4, pr + d * gh * hid * f4, at(pb, gh), at(prb, hid),
                at(pp, 3 * hid), plens, at(ph, st_off), at(pc, st_off), at(py, y_off),
                at(pyh, st_off), at(pyc, st_off), pwork, t_len, batch, n_in, hid, x_ts, x_bs,
                y_ts, y_bs, st_bs, width, _KINDS[self.op_type], int(rev),
                int(self.attrs.get("linear_before_reset", 0) or 0),
                int(self.attrs.get("input_forget", 0) or 0),
                int(relu and self.acts[d].name == "relu"),
                np.inf if clip is None else float(clip))
            calls.append(_call(_rnn_kernel, args, x, wp, rp, bias, rbh, p, lens, h0, c0, *outs,
                               work))
        return calls


class RNN(_Compiled, _rnn.RNN):
    hidden_fields: ClassVar[tuple[str, ...]] = (*_rnn.RNN.hidden_fields, "__wpacked__",
                                                "__rpacked__")


class GRU_1(_Compiled, _rnn.GRU_1):  # type: ignore[misc]  # noqa: N801
    op_type = "GRU"
    hidden_fields: ClassVar[tuple[str, ...]] = (*_rnn.GRU_1.hidden_fields, "__wpacked__",
                                                "__rpacked__")


class GRU(_Compiled, _rnn.GRU):  # type: ignore[misc]
    hidden_fields: ClassVar[tuple[str, ...]] = (*_rnn.GRU.hidden_fields, "__wpacked__",
                                                "__rpacked__")


class LSTM(_Compiled, _rnn.LSTM):
    hidden_fields: ClassVar[tuple[str, ...]] = (*_rnn.LSTM.hidden_fields, "__wpacked__",
                                                "__rpacked__")


# errors about serialized data name this distribution (the layout is cpu_basic's)
for _cls in (RNN, GRU_1, GRU, LSTM):
    _cls.package = "mini-infer-cpu-native"
