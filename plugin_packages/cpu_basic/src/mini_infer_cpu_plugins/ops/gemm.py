"""Matrix products: Gemm and MatMul (BLAS through np.matmul with ``out=``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.plugin import DimsExprs, Fusion
from mini_infer_core.plugin.shapes import Shapes, gemm_dims, matmul_dims

from ..serialization import CpuPlugin
from ._util import FLOATS, Scratch

__all__ = ["Gemm", "MatMul"]

Array = NDArray[Any]


class Gemm(CpuPlugin):
    """Y = alpha * A' @ B' + beta * C, C optional (from opset 11) and broadcast; absorbs a
    Relu after it (``__relu__``: fully connected layers)."""

    dtypes = FLOATS
    attributes: ClassVar[dict[str, Any]] = {
        "alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0, "broadcast": 0, "__relu__": 0}
    fusable: ClassVar[frozenset[str]] = frozenset({"Relu"})

    def fuse(self, op_type: str, attrs: dict[str, Any], consumer_constants: Sequence[Any],
             consumer_dims: Sequence[Any], position: int,
             own_constants: Sequence[Any]) -> Fusion | None:
        if op_type != "Relu" or self.attrs["__relu__"]:
            return None
        self.attrs["__relu__"] = 1
        return Fusion()

    def setup(self) -> None:
        self.scratch = Scratch()

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [gemm_dims(inputs[0], inputs[1], self.attrs["transA"], self.attrs["transB"])]

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


class MatMul(CpuPlugin):
    """NumPy matmul semantics: 1-D operands promoted, batch dims broadcast."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [matmul_dims(list(inputs[0]), list(inputs[1]))]

    def compute(self, a: Array, b: Array, *, out: Array) -> None:
        np.matmul(a, b, out=out)
