"""onnxruntime's quantized ``com.microsoft`` operators, as its exporters and quantization
tools write them: MatMulNBits (block-quantized weight-only products), DynamicQuantizeMatMul,
MatMulIntegerToFloat, QGemm, and the QOperator-format QLinearAdd, QLinearMul, QLinearSigmoid,
QLinearLeakyRelu, QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat and
QLinearSoftmax; and mini-infer's own QLinearLookup (a 256-entry table the QDQ rewrite
makes), QLinearChannelLookup (one such table per channel) and QMaxPool (an 8-bit MaxPool).

onnx does not define these operators, so each schema declares its attributes (onnxruntime's
``contrib_defs``) and its input counts itself. Optional inputs follow onnxruntime: an absent
zero point is 0 for int8 tensors and for uint8 ones alike; MatMulNBits' absent zero points are
``2 ** (bits - 1)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..errors import PluginInterfaceError
from ..plugin import REQUIRED, DataType, DimExpr, DimsExprs, broadcast_dims, shapes
from ..plugin.shapes import Shapes, absent, dim_prod, gemm_dims, matmul_dims
from ._schema import Op
from .pool import PoolBase
from .quantize import DequantizeLinear, QuantizeLinear

__all__ = ["MatMulNBits", "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "QGemm",
           "QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearLookup",
           "QLinearChannelLookup", "QMaxPool", "QLinearAveragePool", "QLinearGlobalAveragePool",
           "QLinearConcat",
           "QLinearSoftmax", "MsQuantizeLinear", "MsDequantizeLinear"]

MS_DOMAIN = "com.microsoft"
#: mini-infer's own operators (made by its rewrites)
MINI_DOMAIN = "ai.mini_infer"
#: MatMulNBits' bit widths (values packed into uint8 low bits first)
NBITS = (2, 4, 8)
_INT8 = (DataType.UINT8, DataType.INT8)


def _elements(inputs: Sequence[DimsExprs | None], index: int) -> int | None:
    """How many elements input ``index`` has, where its shape is known now (None: absent or
    not known until run time)."""
    if absent(inputs, index):
        return None
    n = dim_prod(list(inputs[index] or ()))
    return n.get_constant_value() if n.is_constant() else None


def check_per_tensor(op: Op, inputs: Sequence[DimsExprs | None],
                     names: dict[int, str]) -> None:
    """Refuse (at build time) a scale or zero point of more than one value where the
    operator quantizes per tensor: ``names`` maps input positions to their names."""
    for index, name in names.items():
        n = _elements(inputs, index)
        if n is not None and n != 1:
            raise PluginInterfaceError(
                f"{op.op_type} {op.name!r}: {name} has {n} values; onnxruntime's "
                f"{op.op_type} quantizes per tensor (one scale and zero point per tensor). "
                "Quantize the model per tensor, or in QDQ format (QuantizeLinear/"
                "DequantizeLinear take per-axis and blocked parameters)")


class _MsOp(Op):
    """A ``com.microsoft`` operator (a private base: its subclasses are the schemas)."""

    domain = MS_DOMAIN


class MatMulNBits(_MsOp):
    """``Y = A @ dequantize(B).T + bias``: B is ``[N, ceil(K / block_size), block_size *
    bits / 8]`` uint8, each block of ``block_size`` values along K packed low bits first,
    with one scale (``scales``: ``[N, n_blocks]`` or flat) and one zero point per block
    (``zero_points``: packed uint8 ``[N, ceil(n_blocks * bits / 8)]``, or A's type shaped as
    ``scales``; absent: ``2 ** (bits - 1)``); ``g_idx`` (``[K]``) gives each row of B's
    block where the rows were reordered. ``accuracy_level`` is the least precision the
    product may be computed in (0-4; 4: A quantized to int8 per block)."""

    min_inputs = 3
    max_inputs = 6
    attributes: ClassVar[dict[str, Any]] = {"K": REQUIRED, "N": REQUIRED, "bits": 4,
                                            "block_size": REQUIRED, "accuracy_level": 0}

    def setup(self) -> None:
        k, n, bits, block = (int(self.attrs[a]) for a in ("K", "N", "bits", "block_size"))
        if bits not in NBITS:
            raise PluginInterfaceError(
                f"MatMulNBits {self.name!r}: bits={bits} is not supported (supported: "
                f"{', '.join(map(str, NBITS))}); requantize the weights")
        if block < 16 or block & (block - 1):
            raise PluginInterfaceError(
                f"MatMulNBits {self.name!r}: block_size={block} must be a power of 2, at "
                "least 16 (onnxruntime's rule); requantize the weights")
        if k <= 0 or n <= 0:
            raise PluginInterfaceError(
                f"MatMulNBits {self.name!r}: K={k} and N={n} must be positive")
        if not 0 <= int(self.attrs["accuracy_level"]) <= 4:
            raise PluginInterfaceError(
                f"MatMulNBits {self.name!r}: accuracy_level must be 0 to 4, got "
                f"{self.attrs['accuracy_level']}")
        self.k, self.n, self.bits, self.block = k, n, bits, block
        self.n_blocks = -(-k // block)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        a = list(inputs[0])
        if not a:
            raise PluginInterfaceError(f"MatMulNBits {self.name!r}: A must have rank >= 1")
        last = DimExpr.wrap(a[-1])
        if last.is_constant() and last.get_constant_value() != self.k:
            raise PluginInterfaceError(
                f"MatMulNBits {self.name!r}: A's last dimension is {last}, the node's K is "
                f"{self.k}")
        blob = self.block * self.bits // 8
        for index, what, want in ((1, "B", self.n * self.n_blocks * blob),
                                  (2, "scales", self.n * self.n_blocks)):
            got = _elements(inputs, index)
            if got is not None and got != want:
                raise PluginInterfaceError(
                    f"MatMulNBits {self.name!r}: {what} has {got} values; N={self.n}, "
                    f"K={self.k}, bits={self.bits}, block_size={self.block} make {want} "
                    f"(B: [N, ceil(K / block_size), block_size * bits / 8])")
        return [[*a[:-1], self.n]]


class DynamicQuantizeMatMul(_MsOp):
    """``A`` quantized to uint8 as DynamicQuantizeLinear does, then ``(qA - zp_A) @ (B -
    b_zero_point) * scale_A * b_scale + bias`` in float: b's scale and zero point per tensor
    or per column (``[N]``)."""

    min_inputs = 3
    max_inputs = 5
    attributes: ClassVar[dict[str, Any]] = {}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [matmul_dims(list(inputs[0]), list(inputs[1]), self.op_type)]


class MatMulIntegerToFloat(_MsOp):
    """``(A - a_zero_point) @ (B - b_zero_point) * a_scale * b_scale + bias`` in the scales'
    type: inputs A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias."""

    min_inputs = 4
    max_inputs = 7
    attributes: ClassVar[dict[str, Any]] = {}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [matmul_dims(list(inputs[0]), list(inputs[1]), self.op_type)]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[2]]


class QGemm(_MsOp):
    """``alpha * (A' - a_zp) @ (B' - b_zp) + C`` (C int32, at scale ``a_scale * b_scale``),
    requantized to ``y_scale``/``y_zero_point`` (8-bit output, y_zero_point's type, else
    A's), or without y_scale dequantized to float. B's scale and zero point may be per
    column. Inputs A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale,
    y_zero_point."""

    min_inputs = 6
    max_inputs = 9
    attributes: ClassVar[dict[str, Any]] = {"transA": 0, "transB": 0, "alpha": 1.0}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        check_per_tensor(self, inputs, {1: "a_scale", 2: "a_zero_point", 7: "y_scale",
                                        8: "y_zero_point"})
        self.float_output = absent(inputs, 7)
        return [gemm_dims(inputs[0], inputs[3], self.attrs["transA"],
                                 self.attrs["transB"])]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        if getattr(self, "float_output", len(input_types) <= 7):
            return [DataType.FLOAT]
        return [input_types[8] if len(input_types) > 8 and input_types[8] in _INT8
                else input_types[0]]



class QLinearBinaryBase(_MsOp):
    """Inputs A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point;
    broadcast; the output has A's type."""

    min_inputs = 7
    max_inputs = 8
    attributes: ClassVar[dict[str, Any]] = {}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        check_per_tensor(self, inputs, {1: "A_scale", 2: "A_zero_point", 4: "B_scale",
                                        5: "B_zero_point", 6: "C_scale", 7: "C_zero_point"})
        return [broadcast_dims(inputs[0], inputs[3])]


class QLinearAdd(QLinearBinaryBase):
    """``quantize(dequantize(A) + dequantize(B))``."""


class QLinearMul(QLinearBinaryBase):
    """``quantize(dequantize(A) * dequantize(B))``."""


class QLinearUnaryBase(_MsOp):
    """Inputs X, X_scale, X_zero_point, Y_scale, Y_zero_point: ``quantize(f(dequantize(X)))``,
    X's shape and type."""

    min_inputs = 4
    max_inputs = 5
    attributes: ClassVar[dict[str, Any]] = {}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        check_per_tensor(self, inputs, _UNARY_PARAMS)
        return [list(inputs[0])]


#: the scales and zero points of the unary QLinear operators
_UNARY_PARAMS = {1: "X_scale", 2: "X_zero_point", 3: "Y_scale", 4: "Y_zero_point"}


class QLinearSigmoid(QLinearUnaryBase):
    pass


class QLinearLeakyRelu(QLinearUnaryBase):
    attributes: ClassVar[dict[str, Any]] = {"alpha": 0.01}


class QLinearLookup(Op):
    """mini-infer's own (domain ``ai.mini_infer``, made by the QDQ rewrite, not in onnxruntime):
    ``Y[i] = Table[X[i]]``, X's 8-bit pattern (uint8, or int8 viewed as uint8) indexing the
    256 entries of Table (X's type). ``DequantizeLinear -> f -> QuantizeLinear`` of one 8-bit
    tensor with per-tensor parameters is exactly such a table, for any elementwise ``f``."""

    domain = MINI_DOMAIN
    min_inputs = 2
    max_inputs = 2
    attributes: ClassVar[dict[str, Any]] = {}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        n = _elements(inputs, 1)
        if n is not None and n != 256:
            raise PluginInterfaceError(
                f"QLinearLookup {self.name!r}: Table has {n} values; it needs one per 8-bit "
                "pattern (256)")
        return [list(inputs[0])]


class QLinearChannelLookup(Op):
    """mini-infer's own (domain ``ai.mini_infer``, made by the QDQ rewrite, not in onnxruntime):
    ``Y[n, c, ...] = Table[c, X[n, c, ...]]``, X of shape ``(N, C, ...)`` and Table
    ``(C, 256)`` of X's type, X's 8-bit pattern indexing channel ``c``'s 256 entries.
    ``DequantizeLinear -> BatchNormalization -> QuantizeLinear`` (per-tensor parameters, an
    inference BatchNormalization: a per-channel affine function) is exactly such a table."""

    domain = MINI_DOMAIN
    min_inputs = 2
    max_inputs = 2
    attributes: ClassVar[dict[str, Any]] = {}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        x, n = list(inputs[0]), _elements(inputs, 1)
        if len(x) < 2:
            raise PluginInterfaceError(
                f"QLinearChannelLookup {self.name!r}: X has rank {len(x)}; it needs (N, C, ...)")
        c = x[1]
        if n is not None and c.is_constant() and n != 256 * c.get_constant_value():
            raise PluginInterfaceError(
                f"QLinearChannelLookup {self.name!r}: Table has {n} values; it needs 256 per "
                f"channel of X ({c.get_constant_value()} channels): shape (C, 256)")
        return [x]


class QMaxPool(PoolBase):
    """mini-infer's own (domain ``ai.mini_infer``, made by the QDQ rewrite): MaxPool of an
    8-bit X (ONNX MaxPool's attributes, no Indices), so that a device may take it in another
    format than its float MaxPool (``DequantizeLinear -> MaxPool -> QuantizeLinear`` with the
    same parameters on both sides is this on the 8-bit tensor)."""

    domain = MINI_DOMAIN
    kind = "max"
    min_inputs = 1
    max_inputs = 1
    attributes: ClassVar[dict[str, Any]] = {
        "auto_pad": "NOTSET", "ceil_mode": 0, "dilations": None, "kernel_shape": REQUIRED,
        "pads": None, "strides": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return super().output_shapes(inputs)[:1]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0]]


class QLinearSoftmax(QLinearUnaryBase):
    """Softmax along ``axis`` (``opset``, the original Softmax's, below 13: over the input
    flattened to 2-D at ``axis``)."""

    attributes: ClassVar[dict[str, Any]] = {"axis": -1, "opset": REQUIRED}


def _channels_first(dims: Sequence[Any], channels_last: int) -> list[Any]:
    d = list(dims)
    return [d[0], d[-1], *d[1:-1]] if channels_last and len(d) >= 3 else d


def _channels_back(dims: Sequence[Any], channels_last: int) -> list[Any]:
    d = list(dims)
    return [d[0], *d[2:], d[1]] if channels_last and len(d) >= 3 else d


class QLinearAveragePool(PoolBase):
    """AveragePool of the dequantized X, quantized: inputs X, x_scale, x_zero_point,
    y_scale, y_zero_point; ``channels_last``: X is ``[N, *spatial, C]``."""

    domain = MS_DOMAIN
    kind = "avg"
    min_inputs = 4
    max_inputs = 5
    attributes: ClassVar[dict[str, Any]] = {
        "auto_pad": "NOTSET", "ceil_mode": 0, "channels_last": 0, "count_include_pad": 0,
        "kernel_shape": REQUIRED, "pads": None, "strides": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        check_per_tensor(self, inputs, _UNARY_PARAMS)
        last = int(self.attrs["channels_last"])
        first = _channels_first(inputs[0], last)
        (out,) = super().output_shapes([DimsExprs(first)])
        return [_channels_back(out, last)]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0]]


class QLinearGlobalAveragePool(QLinearUnaryBase):
    """The mean over the spatial axes, quantized: X ``[N, C, *spatial]`` (``channels_last``:
    ``[N, *spatial, C]``)."""

    attributes: ClassVar[dict[str, Any]] = {"channels_last": 0}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        x = list(inputs[0])
        if len(x) < 3:
            raise PluginInterfaceError(
                f"QLinearGlobalAveragePool {self.name!r}: X must have rank >= 3, got {len(x)}")
        check_per_tensor(self, inputs, _UNARY_PARAMS)
        last = int(self.attrs["channels_last"])
        first = _channels_first(x, last)
        return [_channels_back([first[0], first[1], *[1] * (len(x) - 2)], last)]


class QLinearConcat(_MsOp):
    """Inputs Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per tensor: each
    requantized to Y's scale and zero point, concatenated along ``axis``."""

    min_inputs = 5
    max_inputs = None
    attributes: ClassVar[dict[str, Any]] = {"axis": REQUIRED}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        if (len(inputs) - 2) % 3:
            raise PluginInterfaceError(
                f"QLinearConcat {self.name!r}: after Y_scale and Y_zero_point the inputs come "
                f"in threes (X, X_scale, X_zero_point); got {len(inputs)} inputs")
        names = {0: "Y_scale", 1: "Y_zero_point"}
        for k in range(2, len(inputs), 3):
            names.update({k + 1: f"X_scale of input {k}", k + 2: f"X_zero_point of input {k}"})
        check_per_tensor(self, inputs, names)
        return [shapes.concat_dims(list(inputs[2::3]), self.attrs["axis"])]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[1] if input_types[1] in _INT8 else input_types[2]]


class MsQuantizeLinear(QuantizeLinear):
    """onnxruntime's ``com.microsoft`` QuantizeLinear (what its QDQ tools write for 16-bit
    and 4-bit types, ``UseQDQContribOps``): ONNX's, per tensor or per ``axis`` (default 1),
    in another domain. Plugin name ``MsQuantizeLinear``."""

    domain = MS_DOMAIN
    op_type = "QuantizeLinear"
    plugin_type = "MsQuantizeLinear"
    min_opset = 1
    max_opset = None


class MsDequantizeLinear(DequantizeLinear):
    """onnxruntime's ``com.microsoft`` DequantizeLinear (see :class:`MsQuantizeLinear`)."""

    domain = MS_DOMAIN
    op_type = "DequantizeLinear"
    plugin_type = "MsDequantizeLinear"
    min_opset = 1
    max_opset = None
