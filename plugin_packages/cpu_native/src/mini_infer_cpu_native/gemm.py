"""cpu_basic's Gemm with its float32 cases on the compiled GEMM.

The class is the cpu_basic plugin (same fields, fusions, shape inference and serialized form)
whose ``compute`` takes the compiled kernel when the case is one it has and hands anything
else to the NumPy kernel it inherits (see :mod:`.conv`). A module of its own so that an
engine with a Gemm and no convolution imports neither cpu_basic's convolution, pooling and
normalization modules nor their compiled helpers (issue 30).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from mini_infer_cpu_plugins.ops import gemm as _gemm

from mini_infer_core.plugin import Repacked
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
    unpack_a,
    unpack_b,
    usable,
)

__all__ = ["Gemm"]

Array = NDArray[Any]


class Gemm(KeptCalls, Derived, _gemm.Gemm):
    """float32 ``alpha * A' @ B' + beta * C`` on the compiled GEMM for any number of rows
    (:mod:`._matmul`): A' read through its strides (transA: A^T, no copy); B' packed by the
    build where B is a constant (``__wpacked__`` = 3 where the AVX2 kernels run, 2 elsewhere:
    :func:`._native.pack_b`'s column panels of B', 24 and 48 wide; 1, engines built before:
    panels of 8 rows of B'^T, repacked once), else
    read in place (or packed on each run, transB); C in the epilogue: one row as a bias per
    column, one column as a bias per row, a full (M, N) as a residual, a scalar; beta
    folded into a constant C; a fused Relu as the clamp. No BLAS call. Anything else (other
    dtypes, a runtime C with beta other than 1, no vector kernels) is cpu_basic's."""

    hidden_fields: ClassVar[tuple[str, ...]] = (*_gemm.Gemm.hidden_fields, "__wpacked__")
    #: the compiled calls of the last run and the arrays they were made for
    _calls: tuple[tuple[Any, ...], list[Call]] | None = None

    def compute(self, a: Array, b: Array, c: Array | None = None, *, out: Array, alpha: float,
                beta: float, transA: int, transB: int, __relu__: int = 0,  # noqa: N803
                **kw: Any) -> None:
        key = (a, b, c, out)
        if self._calls is not None and all(
                x is y for x, y in zip(self._calls[0], key, strict=True)):
            run_calls(self._calls[1])  # the same arrays as last time: the same calls
            return
        c = None if c is None or beta == 0.0 else c
        epilogue = self._epilogue_of(c, beta, out) if self._ours(a, b, c, out) else None
        if epilogue is None:
            if self.hidden.get("__wpacked__"):  # packed for a GEMM that does not run: undo it
                b = self._derived(b, "onnx", lambda w: _unpack_gemm_b(
                    w, transB, self.hidden["__wpacked__"]))
            super().compute(a, b, c, out=out, alpha=alpha, beta=beta, transA=transA,
                            transB=transB, __relu__=__relu__, **kw)
            return
        bt = b.T if transB else b
        panels = 1
        if self.hidden.get("__wpacked__") in (2, 3):
            packed: Array | None = b.reshape(-1)
            panels = 2 if self.hidden["__wpacked__"] == 3 else 1
        elif self.hidden.get("__wpacked__"):  # an engine of before: B'^T in row panels
            packed = self._derived(b, "panels", lambda w: pack_b(_unpack_gemm_b(w, 1, 1).T))
        elif not b.flags.writeable:  # a constant the build left alone
            packed = self._derived(b, ("panels", transB), lambda w: pack_b(
                w.T if transB else w))
        else:
            packed = None
        calls = _matmul.product_calls(a.T if transA else a, bt, out, packed_b=packed,
                                      panels=panels, alpha=float(alpha),
                                      lo=0.0 if __relu__ else -np.inf,
                                      scratch=self.scratch, cbias=epilogue.get("cbias"),
                                      rbias=epilogue.get("rbias"), res=epilogue.get("res"))
        self._calls = (key, calls)
        run_calls(calls)

    @staticmethod
    def _ours(a: Array, b: Array, c: Array | None, out: Array) -> bool:
        return (a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype == np.float32
                and a.flags.aligned and b.flags.aligned and usable(out)
                and (c is None or c.dtype == np.float32) and gemm_available())

    def _epilogue_of(self, c: Array | None, beta: float, out: Array
                     ) -> dict[str, Array | None] | None:
        """C (times beta) as the GEMM's epilogue: ``cbias`` (a row, or a scalar), ``rbias``
        (a column) or ``res`` (M, N). A constant C is scaled and broadcast once; a runtime
        one is read where it is (the recorded calls read it again on every run), so it must
        be contiguous and beta 1 (None otherwise: cpu_basic's)."""
        if c is None:
            return {}
        m, n = out.shape
        if not c.flags.writeable:
            if beta != 1.0 or c.size == 1:
                c = self._derived(c, ("c", beta, n), lambda v: np.ascontiguousarray(
                    np.broadcast_to(v.reshape(-1)[:1] if v.size == 1 else v, (1, n)
                                    if v.size == 1 else v.shape) * np.float32(beta),
                    np.float32))
        elif beta != 1.0 or (c.size == 1 and n != 1 and m != 1):
            return None  # (a runtime scalar C of one row is that row's column: rbias)
        if not usable(c):
            return None
        shape = (1,) * (2 - c.ndim) + c.shape
        if shape == (m, n):
            return {"res": c.reshape(m, n)}
        if shape[0] == 1 and shape[1] == n:
            return {"cbias": c.reshape(n)}
        if shape == (m, 1):
            return {"rbias": c.reshape(m)}
        return None

    def pack_constants(self, inputs: Sequence[Any], constants: Sequence[Any]
                       ) -> dict[int, Any]:
        """A constant float32 B stored as the compiled GEMM's column panels of B': of 24
        columns where the AVX2 kernels run (``__wpacked__`` 3: a tile's K rows contiguous; a
        classifier's 1 x 960 @ 960 x 1280 read 24 of every 48 floats from panels of 48, one
        stream, ~1 ms with the weights coming from memory), else of 48 (2)."""
        b = constants[1] if len(constants) > 1 else None
        a = inputs[0] if inputs else None
        if (b is None or a is None or b.ndim != 2 or b.dtype != np.float32
                or not gemm_available()):
            return {}
        bt = b.T if self.attrs["transB"] else b
        kind = 3 if gemm_isa() == "avx2" else 2
        return {1: Repacked(pack_b(bt, B_PANEL_AVX2 if kind == 3 else B_PANEL).reshape(b.shape),
                            lambda: self.record("__wpacked__", kind))}


def _unpack_gemm_b(packed: Array, trans_b: int, layout: int) -> Array:
    """B in its ONNX order (and shape) from the build's packing: ``layout`` 3 and 2 column
    panels of B' (:func:`._native.pack_b`, 24 and 48 wide), 1 (engines built before) panels
    of 8 rows of B'^T."""
    rows, cols = packed.shape
    k, n = (cols, rows) if trans_b else (rows, cols)
    if layout in (2, 3):
        bt = unpack_b(packed.reshape(-1), k, n, B_PANEL_AVX2 if layout == 3 else B_PANEL)
        return np.ascontiguousarray(bt.T) if trans_b else bt
    wt = unpack_a(packed, n, k)
    return wt if trans_b else np.ascontiguousarray(wt.T)


# errors about serialized data name this distribution (the layout is cpu_basic's)
Gemm.package = "mini-infer-cpu-native"
