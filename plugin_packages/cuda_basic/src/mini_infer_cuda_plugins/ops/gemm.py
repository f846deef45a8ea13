"""Matrix products on cuBLAS through CuPy: Gemm and MatMul (``xp.matmul`` with ``out=``;
float16 accumulates in float32). Gemm's bias row or column is added by the ``bias_act``
RawKernel on the GPU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from mini_infer_core.plugin import DimsExprs
from mini_infer_core.plugin.shapes import Shapes, gemm_dims, matmul_dims

from ..serialization import CudaPlugin
from . import _raw
from ._common import FLOATS, Scratch, array_module, matmul_into

__all__ = ["Gemm", "MatMul"]



class Gemm(CudaPlugin):
    """Y = alpha * A' @ B' + beta * C; C optional (from opset 11) and broadcast."""

    dtypes = FLOATS
    attributes: ClassVar[dict[str, Any]] = {
        "alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0, "broadcast": 0}

    def setup(self) -> None:
        self.scratch = Scratch()

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [gemm_dims(inputs[0], inputs[1], self.attrs["transA"], self.attrs["transB"])]

    def compute(self, a: Any, b: Any, c: Any | None = None, *, out: Any, alpha: float,
                beta: float, transA: int, transB: int, **_: Any) -> None:  # noqa: N803
        xp = array_module(a, b, out)
        matmul_into(xp, a.T if transA else a, b.T if transB else b, out)
        if alpha != 1.0:
            xp.multiply(out, alpha, out=out)
        if c is None or beta == 0.0:
            return
        rows, cols = out.shape
        if xp is not np and beta == 1.0 and out.flags.c_contiguous and c.size > 1:
            # a bias row (c of shape (N,) or (1, N)) or column ((M, 1)): one epilogue launch
            layout = None
            if c.shape in ((cols,), (1, cols)):
                layout = (1, cols)
            elif c.shape == (rows, 1):
                layout = (cols, rows)
            if layout is not None:
                _raw.launch("epilogue", "bias_act", out.dtype, out.size, (
                    out, xp.ascontiguousarray(c), np.int64(layout[0]), np.int32(layout[1]),
                    np.int32(_raw.ACT_NONE), np.int64(out.size)))
                return
        if beta != 1.0:
            scaled = self.scratch.buffer(xp, "beta_c", c.shape, out.dtype)
            xp.multiply(c, beta, out=scaled)
            c = scaled
        xp.add(out, c, out=out)


class MatMul(CudaPlugin):
    """NumPy matmul semantics: 1-D operands promoted, batch dimensions broadcast."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [matmul_dims(list(inputs[0]), list(inputs[1]))]

    def compute(self, a: Any, b: Any, *, out: Any) -> None:
        matmul_into(array_module(a, b, out), a, b, out)
