"""Matrix products: Gemm and MatMul (BLAS through np.matmul with ``out=``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.plugin import DimsExprs
from mini_infer_core.plugin.shapes import Shapes, gemm_dims, matmul_dims

from ..serialization import CpuPlugin
from ._util import FLOATS, Scratch

__all__ = ["Gemm", "MatMul"]

Array = NDArray[Any]


class Gemm(CpuPlugin):
    """Y = alpha * A' @ B' + beta * C, C optional (from opset 11) and broadcast."""

    dtypes = FLOATS
    attributes: ClassVar[dict[str, Any]] = {
        "alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0, "broadcast": 0}

    def setup(self) -> None:
        self.scratch = Scratch()

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [gemm_dims(inputs[0], inputs[1], self.attrs["transA"], self.attrs["transB"])]

    def compute(self, a: Array, b: Array, c: Array | None = None, *, out: Array, alpha: float,
                beta: float, transA: int, transB: int, **_: Any) -> None:  # noqa: N803
        np.matmul(a.T if transA else a, b.T if transB else b, out=out)
        if alpha != 1.0:
            np.multiply(out, alpha, out=out)
        if c is None or beta == 0.0:
            return
        if beta != 1.0:
            scaled = self.scratch.buffer("beta_c", c.shape, out.dtype)
            np.multiply(c, beta, out=scaled)
            c = scaled
        np.add(out, c, out=out)


class MatMul(CpuPlugin):
    """NumPy matmul semantics: 1-D operands promoted, batch dims broadcast."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [matmul_dims(list(inputs[0]), list(inputs[1]))]

    def compute(self, a: Array, b: Array, *, out: Array) -> None:
        np.matmul(a, b, out=out)
