"""cpu_basic's MatMul with its float32 products on the compiled GEMM, and the nodes after it
that its epilogue can take on.

Any rank, NumPy's broadcasting of the batch dimensions, operands read through their strides
(:mod:`._matmul`): a transformer's projections (activations of any rank times a 2-D weight)
are one GEMM of all the rows; attention's Q.K^T and P.V (both operands computed) a batch of
products in one call. A constant B is packed by the build in the GEMM's column panels,
stored so in the engine: ``__wpacked__`` = 1 panels of 48 columns (AVX-512 builds, engines
of before), 2 panels of 24 (built where the AVX2 kernels run: one tile's columns, K rows of
96 contiguous bytes); read by every kernel, undone once where the compiled GEMM does not
run.

Fusion (``fusable``): after the product, in this order, ``y = clamp(alpha * A @ B + bias +
r, lo, hi)``:

* ``Mul``/``Div`` by a constant scalar (attention's 1/sqrt(d)): ``__alpha__``, folded into
  a bias already taken (refused after a residual);
* ``Add`` of a constant that varies along the last axis only (a Linear layer's bias): one
  value per column, input ``__bias__`` (a constant the fusion appends; a second one is
  added to it);
* ``Add`` of a tensor of the output's shape computed before (a residual connection): input
  ``__residual__``, once;
* ``Relu`` or ``Clip`` (constant bounds): ``__clip__`` (lo, hi); nothing after it.

Other dtypes, and CPUs without the compiled GEMM's vector kernels, take cpu_basic's NumPy
path with the same fused epilogue in NumPy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from mini_infer_cpu_plugins.ops import gemm as _gemm
from mini_infer_cpu_plugins.toolkit import Scratch

from mini_infer_core.plugin import DataType, Fusion, Repacked
from mini_infer_core.plugin.arrays import NDArray

from . import _matmul
from ._derived import Derived
from ._kept import KeptCalls
from ._native import (
    B_PANEL,
    B_PANEL_AVX2,
    Call,
    gemm_available,
    gemm_isa,
    pack_b,
    run_calls,
    unpack_b,
    usable,
)

__all__ = ["MatMul"]

Array = NDArray[Any]


#: columns per panel of B by ``__wpacked__``
_WIDTH = {1: B_PANEL, 2: B_PANEL_AVX2}


def _panels() -> int:
    """The ``__wpacked__`` this CPU's GEMM reads best: 2 (panels of 24) for the AVX2 kernels,
    1 (of 48, one AVX-512 tile) elsewhere."""
    return 2 if gemm_isa() == "avx2" else 1


def _scalar(c: Any) -> float | None:
    """The value of a constant with one element (None: another constant, or none)."""
    if c is None:
        return None
    arr = np.asarray(c)
    return float(arr.reshape(-1)[0]) if arr.size == 1 else None


def _column_bias(c: Any, dims: Any) -> Array | None:
    """A constant added to an output of ``dims`` that varies along its last axis only, as one
    value per column (None: it varies along another axis, or would grow the output)."""
    if c is None or dims is None or len(dims) == 0 or not dims[-1].is_constant():
        return None
    arr = np.asarray(c)
    n = int(dims[-1].get_constant_value())
    if arr.ndim > len(dims) or any(d != 1 for d in arr.shape[:-1]):
        return None
    if arr.size == 1:
        return np.full(n, arr.reshape(-1)[0], arr.dtype)
    return arr.reshape(n).copy() if arr.shape[-1] == n else None


def _clip_bounds(attrs: dict[str, Any], constants: Sequence[Any],
                 dims: Sequence[Any]) -> tuple[float, float] | None:
    """A Clip's bounds: its attributes (opset < 11) or constant inputs (None: computed)."""
    lo, hi = attrs.get("min"), attrs.get("max")
    if len(constants) > 1:
        if any(c is None for c, d in zip(constants[1:], dims[1:], strict=True) if d is not None):
            return None
        lo, hi = ([_scalar(c) for c in constants[1:3]] + [None, None])[:2]
    return (-np.inf if lo is None else float(lo), np.inf if hi is None else float(hi))


class MatMul(KeptCalls, Derived, _gemm.MatMul):
    """float32 products of any rank on the compiled GEMM, with the epilogue it fuses (see the
    module); everything else is cpu_basic's. The calls of a run are kept with its arrays
    (:class:`._kept.KeptCalls`: a plan's step runs them alone, without ``enqueue``,
    ``compute`` and the identity checks: 4-6 us of Python a product, 48 in MiniLM)."""

    hidden_fields: ClassVar[tuple[str, ...]] = (
        *_gemm.MatMul.hidden_fields, "__wpacked__", "__alpha__", "__bias__", "__residual__",
        "__clip__")
    fusable: ClassVar[frozenset[str]] = frozenset({"Add", "Mul", "Div", "Relu", "Clip"})
    package = "mini-infer-cpu-native"

    #: the compiled calls of the last run and the arrays they were made for
    _calls: tuple[tuple[Any, ...], list[Call]] | None = None

    def setup(self) -> None:
        super().setup()
        self.scratch = Scratch()

    # -- fusion ---------------------------------------------------------------------------
    def fuse(self, op_type: str, attrs: dict[str, Any], consumer_constants: Sequence[Any],
             consumer_dims: Sequence[Any], position: int,
             own_constants: Sequence[Any]) -> Fusion | None:
        h = self.hidden
        if "__clip__" in h or attrs.get("broadcast"):
            return None  # nothing after the activation; no old-style broadcast
        if op_type == "Relu":
            self.record("__clip__", (0.0, np.inf))
            return Fusion()
        if op_type == "Clip":
            bounds = _clip_bounds(attrs, consumer_constants, consumer_dims)
            if bounds is None:
                return None
            self.record("__clip__", bounds)
            return Fusion()
        if len(consumer_constants) != 2:
            return None
        other = consumer_constants[1 - position]
        if op_type in ("Mul", "Div"):
            dims = consumer_dims[position]
            if other is None or dims is None or np.ndim(other) > len(dims):
                return None  # a constant of higher rank would grow the output
            return self._fuse_scale(op_type, _scalar(other), position, own_constants)
        if op_type != "Add":
            return None
        if other is not None:
            bias = _column_bias(other, consumer_dims[position])
            if bias is None:
                return None
            where = h.get("__bias__", len(own_constants))
            if "__bias__" in h:
                bias = (np.asarray(own_constants[where], np.float64) + bias).astype(bias.dtype)
            self.record("__bias__", where)
            return Fusion(constants={where: bias})
        mine, theirs = consumer_dims[position], consumer_dims[1 - position]
        if "__residual__" in h or mine is None or theirs is None or len(mine) != len(
                theirs) or not all(p.same_as(q) for p, q in zip(mine, theirs, strict=True)):
            return None  # only a residual of the output's shape is added in place
        self.record("__residual__", len(own_constants))
        return Fusion(append_inputs=[1 - position])

    def _fuse_scale(self, op_type: str, value: float | None, position: int,
                    own_constants: Sequence[Any]) -> Fusion | None:
        h = self.hidden
        if value is None or "__residual__" in h or (op_type == "Div" and (
                position != 0 or value == 0.0)):
            return None
        scale = 1.0 / value if op_type == "Div" else value
        fusion = Fusion()
        if "__bias__" in h:
            bias = own_constants[h["__bias__"]]
            if bias is None:
                return None
            fusion.constants[h["__bias__"]] = (np.asarray(bias, np.float64) * scale).astype(
                bias.dtype)
        self.record("__alpha__", float(h.get("__alpha__", 1.0)) * scale)
        return fusion

    # -- packing --------------------------------------------------------------------------
    def pack_constants(self, inputs: Sequence[Any], constants: Sequence[Any]
                       ) -> dict[int, Any]:
        """A constant float32 B (one matrix) stored in the compiled GEMM's column panels."""
        b = constants[1] if len(constants) > 1 else None
        a = inputs[0] if inputs else None
        if (b is None or a is None or a[1] != DataType.FLOAT or b.dtype != np.float32
                or b.ndim < 2 or any(d != 1 for d in b.shape[:-2]) or not gemm_available()):
            return {}
        kind = _panels()
        return {1: Repacked(pack_b(b.reshape(b.shape[-2:]), _WIDTH[kind]).reshape(b.shape),
                            lambda: self.record("__wpacked__", kind))}

    # -- compute --------------------------------------------------------------------------
    def compute(self, a: Array, b: Array, *fused: Array, out: Array) -> None:
        h = self.hidden
        bias = fused[h["__bias__"] - 2] if "__bias__" in h else None
        res = fused[h["__residual__"] - 2] if "__residual__" in h else None
        key = (a, b, bias, res, out)
        if self._calls is not None and all(
                x is y for x, y in zip(self._calls[0], key, strict=True)):
            run_calls(self._calls[1])  # the same arrays as last time: the same calls
            return
        alpha = float(h.get("__alpha__", 1.0))
        lo, hi = (float(v) for v in h.get("__clip__", (-np.inf, np.inf)))
        if self._compiled(a, b, bias, res, out):
            kind = int(h.get("__wpacked__", 0))
            if kind:
                packed: Array | None = b.reshape(-1)
            elif b.ndim == 2 and not b.flags.writeable:  # a constant the build left alone
                kind = _panels()
                packed = self._derived(b, ("panels", kind), lambda w: pack_b(w, _WIDTH[kind]))
            else:
                packed = None
            calls = _matmul.product_calls(a, b, out, packed_b=packed, panels=kind or 1,
                                          cbias=bias, res=res,
                                          alpha=alpha, lo=lo, hi=hi, scratch=self.scratch)
            self._calls = (key, calls)
            run_calls(calls)
            return
        if h.get("__wpacked__"):  # packed for a GEMM that cannot run here: undo it once
            width = _WIDTH[int(h["__wpacked__"])]
            b = self._derived(b, "onnx", lambda w: unpack_b(
                w.reshape(-1), int(w.shape[-2]), int(w.shape[-1]), width).reshape(w.shape))
        super().compute(a, b, out=out)
        if alpha != 1.0:
            np.multiply(out, alpha, out=out)
        if bias is not None:
            np.add(out, bias, out=out)
        if res is not None:
            np.add(out, res, out=out)
        if (lo, hi) != (-np.inf, np.inf):
            np.clip(out, lo, hi, out=out)

    @staticmethod
    def _compiled(a: Array, b: Array, bias: Array | None, res: Array | None,
                  out: Array) -> bool:
        """float32 operands the compiled GEMM reads (A and B through their strides, the
        output, bias and residual contiguous), on a CPU where its vector kernels run."""
        return (a.ndim >= 1 and b.ndim >= 1 and a.dtype == b.dtype == np.float32
                and a.flags.aligned and b.flags.aligned and usable(out, bias, res)
                and gemm_available())
