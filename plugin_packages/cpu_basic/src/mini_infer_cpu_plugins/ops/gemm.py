"""Matrix products: Gemm and MatMul (BLAS through np.matmul with ``out=``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DimsExprs, broadcast_dims

from ..serialization import CpuPlugin
from ._util import FLOATS, IntLike, Scratch

__all__ = ["Gemm", "MatMul"]

Array = NDArray[Any]


class Gemm(CpuPlugin):
    """Y = alpha * A' @ B' + beta * C, C optional (from opset 11) and broadcast."""

    dtypes = FLOATS
    attributes: ClassVar[dict[str, Any]] = {
        "alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0, "broadcast": 0}

    def setup(self) -> None:
        self.scratch = Scratch()

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        a, b = inputs[0], inputs[1]
        if len(a) != 2 or len(b) != 2:
            raise PluginInterfaceError("Gemm: A and B must be 2-D")
        m = a[1] if self.attrs["transA"] else a[0]
        n = b[0] if self.attrs["transB"] else b[1]
        return [[m, n]]

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

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        a, b = list(inputs[0]), list(inputs[1])
        if not a or not b:
            raise PluginInterfaceError("MatMul: operands must have rank >= 1")
        shape: list[IntLike] = list(broadcast_dims(a[:-2], b[:-2]))
        if len(a) >= 2:
            shape.append(a[-2])
        if len(b) >= 2:
            shape.append(b[-1])
        return [shape]

    def compute(self, a: Array, b: Array, *, out: Array) -> None:
        np.matmul(a, b, out=out)
