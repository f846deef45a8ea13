"""QuantizeLinear, DequantizeLinear (per tensor, per axis, blocked; int2/4/8/16, float8 and
float4e2m1 quantized types) and DynamicQuantizeLinear."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DataType, DimsExprs, IntLike, OnnxPlugin

from ..serialization import CpuPlugin
from ._quant import QUANT_TYPES, dequantize, expand_param, quantize

__all__ = ["QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"]

Array = NDArray[Any]


def _dtype_attr(code: int, op: str, what: str) -> DataType | None:
    if not code:
        return None
    try:
        return DataType(code)
    except ValueError as exc:
        raise PluginInterfaceError(f"{op}: {what} {code} is not an ONNX type") from exc


class _Linear(CpuPlugin, OnnxPlugin):
    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        return [list(inputs[0])]


class QuantizeLinear(_Linear):
    """``y = saturate(round(x / y_scale) + y_zero_point)``, round half to even.

    The output type is y_zero_point's, else ``output_dtype`` (opset 21), else uint8.
    ``axis`` (13) selects per-axis scales, ``block_size`` (21) blocked ones; ``saturate``
    (19) applies to float8 outputs; ``precision`` (23) is the type ``x / y_scale`` is
    computed in (default: x's type).
    """

    min_opset = 10
    attributes: ClassVar[dict[str, Any]] = {
        "axis": 1, "saturate": 1, "block_size": 0, "output_dtype": 0, "precision": 0}

    def setup(self) -> None:
        self.output_dtype = _dtype_attr(self.attrs["output_dtype"], "QuantizeLinear",
                                        "output_dtype")
        self.precision = _dtype_attr(self.attrs["precision"], "QuantizeLinear", "precision")
        if self.output_dtype is not None and self.output_dtype not in QUANT_TYPES:
            raise PluginInterfaceError(
                f"QuantizeLinear: output_dtype {self.output_dtype.name} is not a quantized type")

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        # an absent zero point is reported as FLOAT, which is never a quantized type
        zp = input_types[2] if len(input_types) > 2 else None
        if zp in QUANT_TYPES:
            assert zp is not None
            if self.output_dtype is not None and self.output_dtype is not zp:
                raise PluginInterfaceError(
                    f"QuantizeLinear: output_dtype {self.output_dtype.name} differs from the "
                    f"zero point's type {zp.name}")
            return [zp]
        return [self.output_dtype or DataType.UINT8]

    def compute(self, x: Array, y_scale: Array, y_zero_point: Array | None = None, *,
                out: Array, axis: int, saturate: int, block_size: int, **_: Any) -> None:
        op = "QuantizeLinear"
        scale = expand_param(y_scale, x.shape, axis, block_size, op)
        zp = None if y_zero_point is None else expand_param(
            y_zero_point, x.shape, axis, block_size, op)
        to = DataType.from_numpy(out.dtype)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out[...] = quantize(x, scale, zp, to, saturate=bool(saturate),
                                precision=self.precision)


class DequantizeLinear(_Linear):
    """``y = (x - x_zero_point) * x_scale`` (float8/float4 inputs have no zero point).

    The output has the scale's type, or ``output_dtype`` (opset 23).
    """

    min_opset = 10
    attributes: ClassVar[dict[str, Any]] = {"axis": 1, "block_size": 0, "output_dtype": 0}

    def setup(self) -> None:
        self.output_dtype = _dtype_attr(self.attrs["output_dtype"], "DequantizeLinear",
                                        "output_dtype")

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [self.output_dtype or input_types[1]]

    def compute(self, x: Array, x_scale: Array, x_zero_point: Array | None = None, *,
                out: Array, axis: int, block_size: int, **_: Any) -> None:
        op = "DequantizeLinear"
        scale = expand_param(x_scale, x.shape, axis, block_size, op)
        zp = None if x_zero_point is None else expand_param(
            x_zero_point, x.shape, axis, block_size, op)
        out[...] = dequantize(x, scale, zp).astype(out.dtype)


class DynamicQuantizeLinear(CpuPlugin, OnnxPlugin):
    """uint8 quantization with a scale and zero point computed from x's range (which is
    widened to include 0): outputs y, y_scale, y_zero_point."""

    min_opset = 11
    n_outputs = 3

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        return [list(inputs[0]), [], []]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.UINT8, input_types[0], DataType.UINT8]

    def compute(self, x: Array, *, out: tuple[Array, Array, Array]) -> None:
        y, y_scale, y_zp = out
        f32 = np.float32
        hi = f32(max(0.0, float(np.max(x)))) if x.size else f32(0)
        lo = f32(min(0.0, float(np.min(x)))) if x.size else f32(0)
        scale = f32(1.0) if hi == lo else f32(hi - lo) / f32(255)
        zp = np.rint(np.clip(f32(0) - lo / scale, 0, 255))
        with np.errstate(invalid="ignore"):
            q = np.rint(x / scale)
            q += zp
            np.clip(q, 0, 255, out=q)
        np.copyto(y, q, casting="unsafe")
        y_scale[...] = scale
        y_zp[...] = zp
