"""Matrix products on cuBLAS through CuPy: Gemm and MatMul (``xp.matmul`` with ``out=``;
float16 accumulates in float32; schemas in :mod:`mini_infer_core.ops.gemm`). Gemm's bias row
or column, and a fused Relu, are applied by the ``bias_act`` RawKernel on the GPU."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import gemm as schema

from ..serialization import CudaPlugin
from . import _raw
from ._common import Scratch, array_module, matmul_into

__all__ = ["Gemm", "MatMul"]


class Gemm(CudaPlugin, schema.Gemm):
    def setup(self) -> None:
        self.scratch = Scratch()

    def compute(self, a: Any, b: Any, c: Any | None = None, *, out: Any, alpha: float,
                beta: float, transA: int, transB: int, __relu__: int = 0,  # noqa: N803
                **_: Any) -> None:
        xp = array_module(a, b, out)
        matmul_into(xp, a.T if transA else a, b.T if transB else b, out)
        if alpha != 1.0:
            xp.multiply(out, alpha, out=out)
        if c is not None and beta != 0.0:
            if xp is not np and self._bias_act(xp, out, c, beta, __relu__):
                return
            if beta != 1.0:
                scaled = self.scratch.buffer(xp, "beta_c", c.shape, out.dtype)
                xp.multiply(c, beta, out=scaled)
                c = scaled
            xp.add(out, c, out=out)
        if __relu__:
            xp.maximum(out, 0, out=out)

    @staticmethod
    def _bias_act(xp: Any, out: Any, c: Any, beta: float, relu: int) -> bool:
        """A bias row (c of shape (N,) or (1, N)) or column ((M, 1)) added, and the Relu
        applied, by one epilogue launch; False where C is of another shape."""
        rows, cols = out.shape
        if beta != 1.0 or not out.flags.c_contiguous or c.size <= 1:
            return False
        if c.shape in ((cols,), (1, cols)):
            layout = (1, cols)
        elif c.shape == (rows, 1):
            layout = (cols, rows)
        else:
            return False
        _raw.launch("epilogue", "bias_act", out.dtype, out.size, (
            out, xp.ascontiguousarray(c), np.int64(layout[0]), np.int32(layout[1]),
            np.int32(_raw.ACT_RELU if relu else _raw.ACT_NONE), np.int64(out.size)))
        return True


class MatMul(CudaPlugin, schema.MatMul):
    def compute(self, a: Any, b: Any, *, out: Any) -> None:
        matmul_into(array_module(a, b, out), a, b, out)
