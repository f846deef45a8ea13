"""Matrix products: Gemm and MatMul (BLAS through np.matmul with ``out=``; schemas in
:mod:`mini_infer_core.ops.gemm`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import gemm as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._util import Scratch

__all__ = ["Gemm", "MatMul"]

Array = NDArray[Any]


class Gemm(CpuPlugin, schema.Gemm):
    def setup(self) -> None:
        self.scratch = Scratch()

    def compute(self, a: Array, b: Array, c: Array | None = None, *, out: Array, alpha: float,
                beta: float, transA: int, transB: int, __relu__: int = 0,  # noqa: N803
                **_: Any) -> None:
        np.matmul(a.T if transA else a, b.T if transB else b, out=out)
        if alpha != 1.0:
            np.multiply(out, alpha, out=out)
        if c is not None and beta != 0.0:
            if beta != 1.0:
                scaled = self.scratch.buffer("beta_c", c.shape, out.dtype)
                np.multiply(c, beta, out=scaled)
                c = scaled
            np.add(out, c, out=out)
        if __relu__:
            np.maximum(out, 0, out=out)


class MatMul(CpuPlugin, schema.MatMul):
    def compute(self, a: Array, b: Array, *, out: Array) -> None:
        np.matmul(a, b, out=out)
