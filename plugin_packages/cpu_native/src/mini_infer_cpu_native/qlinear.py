"""cpu_basic's MatMulInteger, QLinearMatMul and DynamicQuantizeLinear with their 8-bit cases
on the compiled integer GEMM (:mod:`._qgemm`, ``_qgemm.c``).

* MatMulInteger: uint8/int8 A of any rank times a 2-D uint8/int8 B, A's zero point per
  tensor, B's per tensor or per column: the exact int32 sums.
* QLinearMatMul: the same operands, A's and the output's scale and zero point per tensor,
  B's per tensor or per column; the output requantized to uint8/int8 as onnxruntime does
  (``rint(float(acc) * (a_scale * b_scale[j] / y_scale)) + y_zero_point``, float32, round
  half to even, saturated).
* MatMulIntegerToFloat (com.microsoft; what the builder's rewrite makes of the
  dynamic-int8 chain ``MatMulInteger -> Cast -> Mul(Mul(a_scale, b_scale)) -> Add(bias)``):
  MatMulInteger's operands, ``float(acc) * (a_scale * b_scale[j]) + bias[j]`` in float32,
  the scales' product made on each run (a_scale is DynamicQuantizeLinear's, new each run).
* DynamicQuantizeLinear: float32 x, its range, scale and zero point in float32 as
  onnxruntime computes them.

A constant B is packed by the build in the GEMM's panels (``__qpacked__`` = 1: the engine
stores it so, same shape and dtype; a uint8 B is stored as b - 128); its column sums are
computed once, at the first run. A B computed at run time is packed on each run. Everything
else (per-row A zero points or scales, a B with batch dimensions, other dtypes) is cpu_basic's
float64 path, with a packed B unpacked once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from mini_infer_cpu_plugins.ops import contrib_matmul as _contrib
from mini_infer_cpu_plugins.ops import qlinear as _qlinear
from mini_infer_cpu_plugins.ops import quantize as _quantize

from mini_infer_core.plugin import DataType, DimsExprs, Fusion, Repacked
from mini_infer_core.plugin.arrays import NDArray

from ._abi import DqlArgs, QGemmArgs
from ._derived import Derived
from ._qgemm import dql_args, qcolsum, qgemm_args, qpack_b, run_dql, run_qgemm, unpack_qb
from .matmul import _column_bias

__all__ = ["DynamicQuantizeLinear", "MatMulInteger", "MatMulIntegerToFloat", "QLinearMatMul"]

Array = NDArray[Any]
_INT8 = (np.dtype(np.uint8), np.dtype(np.int8))


def _one(x: Array | None) -> bool:
    """None or a single value (per tensor)."""
    return x is None or x.size == 1


def _per_column(x: Array | None, n: int) -> bool:
    """None, one value, or one value per column (N values along the last axis)."""
    return _one(x) or (x is not None and x.size == n and x.shape[-1] == n)


class _IntegerProduct(Derived):
    """The compiled GEMM's side shared by both products: B (input ``b_index``) packed by the
    build, its column sums, A's rows."""

    b_index: ClassVar[int] = 1
    hidden: dict[str, Any]
    #: the arrays of the last run (compared by identity: an engine's arena views and
    #: constants are the same objects from run to run) and the product made for them
    _last: tuple[tuple[Any, ...], QGemmArgs] | None = None
    if TYPE_CHECKING:
        def record(self, key: str, value: Any | None) -> None: ...  # the plugin base's

    def pack_constants(self, inputs: Sequence[Any], constants: Sequence[Any]
                       ) -> dict[int, Any]:
        """A constant 8-bit B (2-D) stored in the integer GEMM's panels."""
        i = self.b_index
        b = constants[i] if len(constants) > i else None
        if b is None or b.dtype not in _INT8 or b.ndim != 2:
            return {}
        return {i: Repacked(qpack_b(b), lambda: self.record("__qpacked__", 1))}

    def _packed_b(self, b: Array) -> tuple[Array, Array]:
        """(packed B, its column sums): packed by the build, kept for a constant, or packed
        now."""
        k, n = (int(d) for d in b.shape)
        if self.hidden.get("__qpacked__"):
            return b, self._derived(b, "colsum", lambda w: qcolsum(w, k, n))
        packed = self._derived(b, "qpack", qpack_b)
        return packed, self._derived(b, "qcolsum", lambda _: qcolsum(packed, k, n))

    def _onnx_b(self, b: Array) -> Array:
        """B as the ONNX graph has it (a packed one unpacked once)."""
        if self.hidden.get("__qpacked__"):
            return self._derived(b, "onnx", lambda w: unpack_qb(w, *w.shape))
        return b

    @staticmethod
    def _operands(a: Array, b: Array, out: Array) -> tuple[Array, Array] | None:
        """(A as rows, the output as rows) where the compiled GEMM takes them, else None."""
        if a.dtype not in _INT8 or b.dtype not in _INT8 or b.ndim != 2 or a.ndim < 1:
            return None
        k, n = b.shape
        if a.shape[-1] != k or not (out.flags.c_contiguous and out.flags.aligned):
            return None
        rows = np.ascontiguousarray(a).reshape(-1, k)
        return rows, out.reshape(rows.shape[0], n)

    def _product(self, key: tuple[Any, ...], make: Callable[[], QGemmArgs]) -> QGemmArgs:
        """A new product for the arrays of ``key`` (A, the output, B, the parameters), kept
        for the next runs where they will be read in place: A contiguous (not copied), and B
        and the parameters folded into the product constants (read-only)."""
        args = make()
        keep = key[0].flags.c_contiguous and all(
            x is None or not x.flags.writeable for x in key[self._fixed:])
        self._last = (key, args) if keep else None
        return args

    #: key[_fixed:]: B and the parameters folded into the product's arguments
    _fixed: ClassVar[int] = 2
    _ONE = np.ones(1, np.float32)

    @staticmethod
    def _b_zero(zb: Array | None, b: Array) -> Array:
        """B's zero point as the packed B stores it (uint8: minus 128), int32."""
        z = np.zeros(1, np.int32) if zb is None else zb.reshape(-1).astype(np.int32)
        return z - 128 if b.dtype == np.uint8 else z


def _per_column_dims(dims: DimsExprs | None, mine: DimsExprs | None) -> bool:
    """A tensor of ``dims`` that is one value, or one per column of an output of ``mine``
    (never growing it)."""
    if dims is None or mine is None or len(dims) > len(mine) or len(mine) == 0:
        return False
    if not all(d.is_constant() and d.get_constant_value() == 1 for d in list(dims)[:-1]):
        return False
    return len(dims) == 0 or (dims[-1].is_constant() and dims[-1].get_constant_value() == 1
                              ) or dims[-1].same_as(mine[-1])


class MatMulInteger(_IntegerProduct, _qlinear.MatMulInteger):
    """8-bit products on the compiled integer GEMM (see the module).

    Fusion: the dynamic-int8 pattern onnxruntime's ``quantize_dynamic`` writes after it,
    ``Cast(to float) -> Mul(scale) -> Add(bias) -> Relu``, in that order (each step
    optional after the Cast): ``__dequant__`` (the output is float32 from then on: the GEMM's
    epilogue writes ``float(acc)``), ``__scale__`` (the input index of the scale, one value or
    one per column, usually x_scale * w_scale computed by a Mul node), ``__bias__`` (the
    index of a constant that varies along the last axis), ``__clip__`` (Relu). The epilogue
    computes ``clamp(float(acc) * scale + bias)`` in float32, the unfused graph's arithmetic.
    """

    hidden_fields: ClassVar[tuple[str, ...]] = (
        *_qlinear.MatMulInteger.hidden_fields, "__qpacked__", "__dequant__", "__scale__",
        "__bias__", "__clip__")
    fusable: ClassVar[frozenset[str]] = frozenset({"Cast", "Mul", "Add", "Relu"})
    package = "mini-infer-cpu-native"
    _fixed = 4

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.FLOAT] if self.hidden.get("__dequant__") else [DataType.INT32]

    def fuse(self, op_type: str, attrs: dict[str, Any], consumer_constants: Sequence[Any],
             consumer_dims: Sequence[Any], position: int,
             own_constants: Sequence[Any]) -> Fusion | None:
        h = self.hidden
        if op_type == "Cast":
            if "__dequant__" in h or int(attrs.get("to", 0)) != DataType.FLOAT.value:
                return None
            self.record("__dequant__", 1)
            # absent zero points become zeros, so that fused inputs come after them
            pad = {i: np.zeros((), np.uint8) for i in range(len(own_constants), 4)}
            return Fusion(constants=pad, output_type=DataType.FLOAT)
        if "__dequant__" not in h or "__clip__" in h:
            return None
        if op_type == "Relu":
            self.record("__clip__", (0.0, np.inf))
            return Fusion()
        if len(consumer_dims) != 2:
            return None
        if op_type == "Mul":
            if "__scale__" in h or "__bias__" in h or not _per_column_dims(
                    consumer_dims[1 - position], consumer_dims[position]):
                return None
            self.record("__scale__", len(own_constants))
            return Fusion(append_inputs=[1 - position])
        if op_type == "Add" and "__bias__" not in h:
            bias = _column_bias(consumer_constants[1 - position], consumer_dims[position])
            if bias is None or bias.dtype != np.float32:
                return None
            self.record("__bias__", len(own_constants))
            return Fusion(constants={len(own_constants): bias})
        return None

    def compute(self, a: Array, b: Array, a_zero_point: Array | None = None,
                b_zero_point: Array | None = None, *fused: Array, out: Array) -> None:
        h = self.hidden
        scale = fused[h["__scale__"] - 4] if "__scale__" in h else None
        bias = fused[h["__bias__"] - 4] if "__bias__" in h else None
        za = 0 if a_zero_point is None else a_zero_point.reshape(-1)[0]
        key = (a, out, scale, bias, b, b_zero_point)  # A's zero point is read on every run
        last = self._last
        if last is not None and all(x is y for x, y in zip(last[0], key, strict=True)):
            last[1].za = int(za)
            run_qgemm(last[1])
            return
        dequant = bool(h.get("__dequant__"))
        lo, hi = (float(v) for v in h.get("__clip__", (-np.inf, np.inf)))
        ops = self._operands(a, b, out)
        if (ops is None or not _one(a_zero_point) or not _per_column(b_zero_point, b.shape[-1])
                or (scale is not None and (scale.dtype != np.float32
                                           or not scale.flags.c_contiguous))):
            if not dequant:
                super().compute(a, self._onnx_b(b), a_zero_point, b_zero_point, out=out)
                return
            acc = np.empty(out.shape, np.int32)
            super().compute(a, self._onnx_b(b), a_zero_point, b_zero_point, out=acc)
            y = acc.astype(np.float32)
            if scale is not None:
                y = y * scale
            if bias is not None:
                y = y + bias
            np.clip(y, lo, hi, out=out)
            return
        rows, c = ops
        packed, colsum = self._packed_b(b)
        mult = None
        if dequant:
            mult = self._ONE if scale is None else scale.reshape(-1)
        run_qgemm(self._product(key, lambda: qgemm_args(
            rows, packed, colsum, c, int(b.shape[0]), a_zero=int(za),
            b_zero=self._b_zero(b_zero_point, b), mult=mult, bias=bias, lo=lo, hi=hi)))


class MatMulIntegerToFloat(_IntegerProduct, _contrib.MatMulIntegerToFloat):
    """The dequantizing product on the compiled integer GEMM (see the module): one step for
    what was MatMulInteger's fused chain and the Mul of the two scales before it
    (onnxruntime's MatMulIntegerToFloat fusion). Fusion: a Relu after it (``__clip__``), or
    the residual Add of a transformer, ``y + r`` with r a tensor of y's shape computed before
    (``__residual__``: its input index; added after the epilogue, the graph's order: the
    bias first, so only where the product has its bias)."""

    hidden_fields: ClassVar[tuple[str, ...]] = (
        *_contrib.MatMulIntegerToFloat.hidden_fields, "__qpacked__", "__clip__",
        "__residual__")
    fusable: ClassVar[frozenset[str]] = frozenset({"Relu", "Add"})
    package = "mini-infer-cpu-native"
    _fixed = 3
    #: a_scale * b_scale, float32, written before each run (the kept product reads it)
    _mult: Array | None = None

    def fuse(self, op_type: str, attrs: dict[str, Any], consumer_constants: Sequence[Any],
             consumer_dims: Sequence[Any], position: int,
             own_constants: Sequence[Any]) -> Fusion | None:
        h = self.hidden
        if "__clip__" in h or "__residual__" in h:
            return None
        if op_type == "Relu":
            self.record("__clip__", (0.0, np.inf))
            return Fusion()
        other, mine = consumer_dims[1 - position], consumer_dims[position]
        if (op_type != "Add" or len(own_constants) != 7 or consumer_constants[1 - position]
                is not None or other is None or mine is None or len(other) != len(mine)
                or not all(d.same_as(e) for d, e in zip(other, mine, strict=True))):
            return None
        self.record("__residual__", len(own_constants))
        return Fusion(append_inputs=[1 - position])

    def compute(self, a: Array, b: Array, a_scale: Array, b_scale: Array,
                a_zero_point: Array | None = None, b_zero_point: Array | None = None,
                bias: Array | None = None, *fused: Array, out: Array) -> None:
        za = 0 if a_zero_point is None else a_zero_point.reshape(-1)[0]
        key = (a, out, a_scale, b, b_scale, b_zero_point, bias)
        last, mult = self._last, self._mult
        residual = fused[0] if fused else None
        if (last is not None and mult is not None
                and all(x is y for x, y in zip(last[0], key, strict=True))):
            np.multiply(a_scale.reshape(()), last[0][4].reshape(-1), out=mult)
            last[1].za = int(za)
            run_qgemm(last[1])
            if residual is not None:
                np.add(out, residual, out=out)
            return
        lo, hi = (float(v) for v in self.hidden.get("__clip__", (-np.inf, np.inf)))
        ops = self._operands(a, b, out)
        n = int(b.shape[-1])
        if (ops is None or out.dtype != np.float32 or a_scale.size != 1
                or a_scale.dtype != np.float32 or b_scale.dtype != np.float32
                or not _per_column(b_scale, n) or not _one(a_zero_point)
                or not _per_column(b_zero_point, n)
                or (bias is not None and (bias.dtype != np.float32 or bias.shape != (n,)))):
            super().compute(a, self._onnx_b(b), a_scale, b_scale, a_zero_point, b_zero_point,
                            bias, out=out)
            if lo > -np.inf:
                np.maximum(out, lo, out=out)
            if residual is not None:
                np.add(out, residual, out=out)
            return
        rows, c = ops
        packed, colsum = self._packed_b(b)
        # onnxruntime's (and the unfused graph's) multiplier: a_scale * b_scale, float32
        mult = self._mult = np.multiply(a_scale.reshape(()), b_scale.reshape(-1)).astype(
            np.float32)
        run_qgemm(self._product(key, lambda: qgemm_args(
            rows, packed, colsum, c, int(b.shape[0]), a_zero=int(za),
            b_zero=self._b_zero(b_zero_point, b), mult=mult,
            bias=None if bias is None else np.ascontiguousarray(bias), lo=lo, hi=hi)))
        if residual is not None:
            np.add(out, residual, out=out)


class QLinearMatMul(_IntegerProduct, _qlinear.QLinearMatMul):
    """8-bit products requantized on the compiled integer GEMM (see the module)."""

    b_index = 3
    hidden_fields: ClassVar[tuple[str, ...]] = (*_qlinear.QLinearMatMul.hidden_fields,
                                                "__qpacked__")
    package = "mini-infer-cpu-native"

    def compute(self, a: Array, a_scale: Array, a_zero_point: Array, b: Array,
                b_scale: Array, b_zero_point: Array, y_scale: Array,
                y_zero_point: Array | None = None, *, out: Array) -> None:
        key = (a, out, b, a_scale, a_zero_point, b_scale, b_zero_point, y_scale, y_zero_point)
        last = self._last
        if last is not None and all(x is y for x, y in zip(last[0], key, strict=True)):
            run_qgemm(last[1])
            return
        ops = self._operands(a, b, out)
        n = int(b.shape[-1])
        if (ops is None or out.dtype not in _INT8 or not _one(a_scale) or not _one(a_zero_point)
                or not _one(y_scale) or not _one(y_zero_point)
                or not _per_column(b_scale, n) or not _per_column(b_zero_point, n)
                or a_scale.dtype != np.float32 or b_scale.dtype != np.float32
                or y_scale.dtype != np.float32):
            super().compute(a, a_scale, a_zero_point, self._onnx_b(b), b_scale, b_zero_point,
                            y_scale, y_zero_point, out=out)
            return
        rows, c = ops
        packed, colsum = self._packed_b(b)
        # onnxruntime's multiplier, in float32: a_scale * b_scale[j] / y_scale
        mult = (a_scale.reshape(-1)[0] * b_scale.reshape(-1) / y_scale.reshape(-1)[0]).astype(
            np.float32)
        zy = 0 if y_zero_point is None else int(y_zero_point.reshape(-1)[0])
        run_qgemm(self._product(key, lambda: qgemm_args(
            rows, packed, colsum, c, int(b.shape[0]), a_zero=int(a_zero_point.reshape(-1)[0]),
            b_zero=self._b_zero(b_zero_point, b), mult=np.ascontiguousarray(mult),
            y_zero=zy)))


class DynamicQuantizeLinear(_quantize.DynamicQuantizeLinear):
    """float32 x in one compiled pass for its range and one to quantize (see the module)."""

    package = "mini-infer-cpu-native"
    #: the arrays of the last run (by identity) and the call made for them
    _last: tuple[tuple[Array, ...], DqlArgs] | None = None

    def compute(self, x: Array, *, out: tuple[Array, Array, Array]) -> None:
        y, y_scale, y_zp = out
        last = self._last
        if last is not None and all(a is b for a, b in zip(last[0], (x, y, y_scale, y_zp),
                                                          strict=True)):
            run_dql(last[1])
            return
        if (x.dtype != np.float32 or not x.flags.c_contiguous or not x.flags.aligned
                or not y.flags.c_contiguous or y_scale.dtype != np.float32):
            super().compute(x, out=out)
            return
        args = dql_args(x, y, y_scale.reshape(1), y_zp.reshape(1))
        self._last = ((x, y, y_scale, y_zp), args)
        run_dql(args)
