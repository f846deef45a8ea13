"""cpu_basic's ``com.microsoft`` QLinearAdd, QLinearMul, QLinearSigmoid and QLinearLeakyRelu
with their 8-bit cases in one compiled pass (``_qelt.c``).

* QLinearAdd, QLinearMul: A, B and C all uint8 or all int8, per-tensor parameters, and B
  either A's shape or broadcast to it as one value per leading index ((N, C, 1, 1) against
  (N, C, H, W): a squeeze-and-excitation's scale) or one value; either operand may be the
  broadcast one (then B, as onnxruntime's kernels take it). The arithmetic is cpu_basic's
  (onnxruntime's x86 formulas in float32: see ``_qelt.c``), so all three give the same bits.
* QLinearSigmoid, QLinearLeakyRelu: cpu_basic's 256-entry table (made once for constant
  parameters), looked up in one pass; mini-infer's QLinearLookup (the table given: what the
  QDQ rewrite makes of ``DequantizeLinear -> HardSigmoid|HardSwish|Tanh|... -> QuantizeLinear``)
  the same pass.

All of them take NHWC tensors (``TensorFormat.HWC``, negotiated by the builder) so that the
activations between two integer convolutions need no transposition: A and C (X and Y) in the
same format, B of A's shape in it too, or a per-channel B of one pixel ((N, C, 1, 1), the same
bytes in either format). Anything else is cpu_basic's NumPy kernel (on NCHW copies).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from mini_infer_cpu_plugins.ops import contrib_qlinear as _basic

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DataType, PluginTensorDesc, TensorFormat
from mini_infer_core.plugin.arrays import NDArray

from ._abi import QBinaryArgs, QChLookupArgs, QLookupArgs
from ._kept import KeptCalls
from ._native import _kernel
from ._qformats import hwc_formats, linear
from ._qgemm import _check, _ptr

__all__ = ["QLinearAdd", "QLinearChannelLookup", "QLinearLeakyRelu", "QLinearLookup", "QLinearMul",
           "QLinearSigmoid"]

Array = NDArray[Any]
_INT8 = (np.dtype(np.uint8), np.dtype(np.int8))
_binary = _kernel("mi_qbinary_i8", QBinaryArgs)
_lookup = _kernel("mi_qlookup_i8", QLookupArgs)
_chlookup = _kernel("mi_qchlookup_i8", QChLookupArgs)
HWC = TensorFormat.HWC
_BYTES = (DataType.UINT8, DataType.INT8)


#: the zero points of A, B and C, the ratios, and Add's fixed part with A first and with B first
_QParams = tuple[int, int, int, float, float, float, float]


def _pixel(b: tuple[int, ...], a: tuple[int, ...]) -> bool:
    """Whether ``b`` is one value per channel of ``a``'s images: (N, C, 1, 1)."""
    return len(b) == len(a) == 4 and b[2:] == (1, 1) and b[:2] == a[:2] and a[2:] != (1, 1)


def _one(v: Array | None) -> float | None:
    """A per-tensor parameter's value (0 where absent), None where it is not one value."""
    if v is None:
        return 0.0
    return float(v.reshape(-1)[0]) if v.size == 1 else None


def _layout(a: Array, b: Array, out: Array) -> tuple[int, int, int, int] | None:
    """(outer, inner, b_step, b_outer_step) where ``b`` is ``a``'s shape, one value per
    leading index broadcast over the rest, one row repeated for every leading index, or one
    value; None otherwise."""
    if a.shape != out.shape or not (a.flags.c_contiguous and b.flags.c_contiguous
                                    and out.flags.c_contiguous):
        return None
    if b.shape == a.shape:
        return 1, a.size, 1, a.size
    if b.size == 1:
        return 1, a.size, 0, 0
    if b.ndim > a.ndim or not a.size:
        return None
    bs = (1,) * (a.ndim - b.ndim) + b.shape
    lead = 0
    while lead < a.ndim and bs[lead] == a.shape[lead]:
        lead += 1
    if all(d == 1 for d in bs[lead:]):  # one value per leading index
        outer = math.prod(a.shape[:lead])
        return outer, a.size // outer, 0, 1
    tail = a.ndim
    while tail > 0 and bs[tail - 1] == a.shape[tail - 1]:
        tail -= 1
    if all(d == 1 for d in bs[:tail]):  # one row for every leading index
        inner = math.prod(a.shape[tail:])
        return a.size // inner, inner, 1, 0
    return None


class _Binary(KeptCalls):
    """The compiled pass; a run that is one call over the whole of A, B and C kept as the
    step's call too (:class:`._kept.KeptCalls`: run without ``enqueue`` and ``compute``)."""

    op: int = 0
    op_type: str
    name: str
    input_descs: list[Any]
    output_descs: list[Any]

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        """C NHWC (8-bit, rank 4) with the operand of its shape; the other of its shape too
        (NHWC), or one per-channel pixel (N, C, 1, 1: either format); the parameters
        LINEAR. C LINEAR: everything LINEAR."""
        desc, out = in_out[pos], in_out[num_inputs]
        if desc.format not in (HWC, TensorFormat.LINEAR):
            return False
        if pos not in (0, 3, num_inputs) or out.format is not HWC:
            return desc.format is TensorFormat.LINEAR and (
                pos not in (0, 3) or desc.dtype in _BYTES)
        if pos == num_inputs:
            return len(desc.shape) == 4 and desc.dtype == in_out[0].dtype
        shape, full = tuple(desc.shape), tuple(out.shape)
        if desc.dtype not in _BYTES or len(full) != 4:
            return False
        if shape == full:
            return desc.format is HWC
        return _pixel(shape, full)

    def compute(self, a: Array, a_scale: Array, a_zero_point: Array | None, b: Array,
                b_scale: Array, b_zero_point: Array | None, c_scale: Array,
                c_zero_point: Array | None = None, *, out: Array) -> None:
        """The compiled pass where it applies, else cpu_basic's compute (next in the MRO of
        QLinearAdd and QLinearMul) on NCHW arrays."""
        if not out.size:
            return
        params = (a_scale, a_zero_point, b_scale, b_zero_point, c_scale, c_zero_point)
        key = (a.shape, b.shape, out.shape, a.dtype, b.dtype, out.dtype, *params)
        if self._run_kept(a, b, out, key):
            return
        self._made = []
        self._compute(a, a_scale, a_zero_point, b, b_scale, b_zero_point, c_scale,
                      c_zero_point, out=out)
        made, self._made = self._made, None
        self._calls = None
        if len(made) == 1 and all(p is None or not p.flags.writeable for p in params):
            args = made[0]
            addr = (a.ctypes.data, b.ctypes.data, out.ctypes.data)
            if args.y == addr[2] and {args.a, args.b} == {addr[0], addr[1]}:
                self._kept_run = (key, args, args.a == addr[0])
                self._calls = ((a, b, out, *params),
                               [(_binary, (QBinaryArgs.from_buffer_copy(args),))])

    #: the last run's (shapes, dtypes and parameters by identity; its one compiled call's
    #: arguments; whether their A is the node's A), where the run was that one call over
    #: the whole of A, B and C (an image batch of one in NHWC against its per-channel B too)
    _kept_run: tuple[tuple[Any, ...], QBinaryArgs, bool] | None = None
    #: the arguments of this run's compiled calls (None outside compute)
    _made: list[QBinaryArgs] | None = None

    def _run_kept(self, a: Array, b: Array, out: Array, key: tuple[Any, ...]) -> bool:
        """Run the kept arguments again where they were made for ``key`` (only the addresses
        of A, B and C can differ)."""
        kept = self._kept_run
        if kept is None or kept[0][:6] != key[:6] or not (
                a.flags.c_contiguous and b.flags.c_contiguous and out.flags.c_contiguous
                and out.flags.writeable) \
                or any(p is not q for p, q in zip(kept[0][6:], key[6:], strict=True)):
            return False
        args = QBinaryArgs.from_buffer_copy(kept[1])  # another context's run may be on it
        first, second = (a, b) if kept[2] else (b, a)
        args.a, args.b, args.y = first.ctypes.data, second.ctypes.data, out.ctypes.data
        _check(_binary, args)
        return True

    def _compute(self, a: Array, a_scale: Array, a_zero_point: Array | None, b: Array,
                 b_scale: Array, b_zero_point: Array | None, c_scale: Array,
                 c_zero_point: Array | None = None, *, out: Array) -> None:
        numpy = super().compute  # type: ignore[misc]
        a_hwc, b_hwc, c_hwc = hwc_formats(self, (0, 3))
        if c_hwc and a.shape != out.shape:  # A the per-channel pixel: swapped (both commute)
            a, a_scale, a_zero_point, b, b_scale, b_zero_point = (
                b, b_scale, b_zero_point, a, a_scale, a_zero_point)
            a_hwc, b_hwc = b_hwc, a_hwc
        params = (a_scale, a_zero_point, b_scale, b_zero_point, c_scale, c_zero_point)
        if not c_hwc:
            if not self._compiled(a, b, out, *params):
                numpy(a, a_scale, a_zero_point, b, b_scale, b_zero_point, c_scale,
                      c_zero_point, out=out)
            return
        if b.ndim == 4 and b.size == a.shape[0] * a.shape[3] and b.shape != a.shape:
            # one value per channel of each image: (N, C, 1, 1) in either format, against
            # each NHWC image's pixels
            bb = b.reshape(a.shape[0], 1, a.shape[3])
            done = all(self._compiled(a[i].reshape(1, -1, a.shape[3]), bb[i:i + 1],
                                      out[i].reshape(1, -1, a.shape[3]), *params)
                       for i in range(a.shape[0]))
            if done:
                return
        elif b_hwc and b.shape == a.shape and self._compiled(a, b, out, *params):
            return
        if not a_hwc or a.shape != out.shape:
            raise PluginInterfaceError(
                f"{self.op_type} {self.name!r}: an NHWC output needs an NHWC operand of its "
                f"shape {out.shape}, got {a.shape}; rebuild the engine")
        al = a.transpose(0, 3, 1, 2)
        bl = b.transpose(0, 3, 1, 2) if b_hwc and b.ndim == 4 else b
        with linear(al, out.transpose(0, 3, 1, 2), (True, True)) as (ac, oc):
            numpy(ac, a_scale, a_zero_point, np.ascontiguousarray(bl), b_scale, b_zero_point,
                  c_scale, c_zero_point, out=oc)

    def _compiled(self, a: Array, b: Array, out: Array, a_scale: Array,
                  a_zero_point: Array | None, b_scale: Array, b_zero_point: Array | None,
                  c_scale: Array, c_zero_point: Array | None) -> bool:
        """The compiled pass where it applies (True), else nothing (False)."""
        if a.dtype not in _INT8 or b.dtype != a.dtype or out.dtype != a.dtype:
            return False
        q = self._qparams((a_scale, a_zero_point, b_scale, b_zero_point, c_scale,
                           c_zero_point))
        if q is None:
            return False
        za, zb, zc, ra, rb, fixed, fixed_swapped = q
        layout = _layout(a, b, out)
        if layout is None and a.shape != b.shape:  # A the broadcast one: swap
            layout = _layout(b, a, out)
            if layout is not None and layout[2] and self.op == 0:
                # A a row repeated, not one value along it: onnxruntime keeps the order there
                # (Add's roundings are not symmetric), cpu_basic's kernel follows it
                return False
            if layout is not None:
                a, b, za, zb, fixed = b, a, zb, za, fixed_swapped
                if self.op == 0:  # Mul's one ratio is the same: sa * sb commute
                    ra, rb = rb, ra
        if layout is None:
            return False
        outer, inner, step, ostep = layout
        kn = "mi_qbinary_i8"
        args = QBinaryArgs(
            _ptr(a, (a.dtype,), a.size, False, kn, "a"),
            _ptr(b, (b.dtype,), b.size, False, kn, "b"),
            _ptr(out, (out.dtype,), out.size, True, kn, "y"),
            outer, inner, step, ostep, float(ra), float(rb), fixed, za, zb, zc, self.op,
            int(a.dtype == np.int8))
        _check(_binary, args)
        if self._made is not None:
            self._made.append(args)
        return True

    #: the six parameters (by identity) and, where the compiled pass takes them, (za, zb, zc,
    #: ra, rb, fixed, fixed_swapped), kept while they are the same read-only arrays (a
    #: model's constants)
    _kept_q: tuple[tuple[Any, ...], _QParams | None] | None = None

    def _qparams(self, params: tuple[Any, ...]) -> _QParams | None:
        """The zero points, cpu_basic's float32 ratios (Add: sa / sc, sb / sc; Mul:
        sa * sb / sc, 0) and Add's fixed part with A first and with B first (Mul: 0, 0), or
        None where a parameter is not one value (or a scale not float32); kept for constant
        parameters."""
        kept = self._kept_q
        if kept is not None and all(p is q for p, q in zip(kept[0], params, strict=True)):
            return kept[1]
        a_scale, a_zero_point, b_scale, b_zero_point, c_scale, c_zero_point = params
        zs = [_one(z) for z in (a_zero_point, b_zero_point, c_zero_point)]
        q: _QParams | None = None
        if not (any(s.dtype != np.float32 or s.size != 1 for s in (a_scale, b_scale, c_scale))
                or any(z is None for z in zs)):
            za, zb, zc = (int(z or 0) for z in zs)
            sa, sb = a_scale.reshape(-1)[0], b_scale.reshape(-1)[0]
            sc = c_scale.reshape(-1)[0]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                if self.op == 0:  # cpu_basic's ratios, in float32
                    ra, rb = np.float32(sa / sc), np.float32(sb / sc)
                else:
                    ra, rb = np.float32(np.float32(sa * sb) / sc), np.float32(0)
            fixed = fixed_swapped = 0.0
            if self.op == 0:
                fixed = float(_basic.qadd_fixed(ra, za, rb, zb, zc))
                fixed_swapped = float(_basic.qadd_fixed(rb, zb, ra, za, zc))
            q = (za, zb, zc, float(ra), float(rb), fixed, fixed_swapped)
        if all(p is None or not p.flags.writeable for p in params):
            self._kept_q = (params, q)
        return q


class QLinearAdd(_Binary, _basic.QLinearAdd):
    """QLinearAdd in one compiled pass (see the module)."""

    package = "mini-infer-cpu-native"
    op = 0


class QLinearMul(_Binary, _basic.QLinearMul):
    """QLinearMul in one compiled pass (see the module)."""

    package = "mini-infer-cpu-native"
    op = 1


class _Unary(KeptCalls):
    """cpu_basic's table of the function, kept while the parameters are the same constant
    arrays, looked up in one compiled pass; any format (X's and Y's the same); that pass kept
    as the step's call (:class:`._kept.KeptCalls`)."""

    #: (the parameters, by identity; X's and Y's dtype) -> the table
    _kept: tuple[tuple[Any, ...], Array] | None = None
    op_type: str
    name: str
    if TYPE_CHECKING:
        def fn(self, x: Array) -> Array: ...  # cpu_basic's

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        desc, first = in_out[pos], in_out[0]
        if desc.format not in (HWC, TensorFormat.LINEAR):
            return False
        if pos == 0:
            return desc.dtype in _BYTES and (desc.format is not HWC or len(desc.shape) == 4)
        if pos == num_inputs:
            return desc.format is first.format
        return desc.format is TensorFormat.LINEAR

    def compute(self, x: Array, x_scale: Array, x_zero_point: Array | None, y_scale: Array,
                y_zero_point: Array | None = None, *, out: Array, **_: Any) -> None:
        key = (x_scale, x_zero_point, y_scale, y_zero_point, x.dtype, out.dtype)
        kept = self._kept
        if kept is not None and all(p is q for p, q in zip(kept[0][:4], key[:4], strict=True)
                                    ) and kept[0][4:] == key[4:]:
            table = kept[1]
        else:
            op = f"{self.op_type} {self.name!r}"
            _basic.check_8bit(x, op)
            table = _basic.qtable(
                x.dtype, _basic.qscalar(x_scale, "X_scale", op),
                _basic.qscalar(x_zero_point, "X_zero_point", op),
                _basic.qscalar(y_scale, "Y_scale", op),
                _basic.qscalar(y_zero_point, "Y_zero_point", op), out.dtype, self.fn)
            constant = all(p is None or not p.flags.writeable for p in key[:4])
            self._kept = (key, table) if constant else None
        lookup(x, table, out)
        _keep_lookup(self, (x, out, *key[:4]), x, table, out, self._kept is not None)


def _keep_lookup(plugin: KeptCalls, arrays: tuple[Any, ...], x: Array, table: Array,
                 out: Array, constant: bool) -> None:
    """Keep the compiled lookup of ``table`` (contiguous, 256 entries) from ``x`` into
    ``out`` as ``plugin``'s call for a run on ``arrays`` (unless it is kept already), where
    the table is a constant's and the one compiled pass applies; else nothing."""
    kept = plugin._calls
    if kept is not None and len(kept[0]) == len(arrays) and all(
            p is q for p, q in zip(kept[0], arrays, strict=True)):
        return
    plugin._calls = None
    if (constant and x.shape == out.shape and x.flags.c_contiguous and out.flags.c_contiguous
            and x.dtype in _INT8 and out.dtype in _INT8 and out.flags.writeable
            and table.dtype in _INT8 and table.size >= 256 and table.flags.c_contiguous):
        args = QLookupArgs(x.ctypes.data, table.ctypes.data, out.ctypes.data, x.size)
        args._keep = table
        plugin._calls = (arrays, [(_lookup, (args,))])


def lookup(x: Array, table: Array, out: Array) -> None:
    """``out = table[x]`` (x's bit patterns index the 256-entry table): one compiled pass
    where both are C-contiguous, else NumPy's."""
    if x.shape != out.shape or not (x.flags.c_contiguous and out.flags.c_contiguous):
        _basic.qlookup(x, table, out)
        return
    if (x.dtype in _INT8 and table.dtype in _INT8 and out.dtype in _INT8 and table.size >= 256
            and table.flags.c_contiguous and out.flags.writeable):
        # what _ptr checks, checked here at once (a lookup per activation: its cost shows)
        _check(_lookup, QLookupArgs(x.ctypes.data, table.ctypes.data, out.ctypes.data, x.size))
        return
    kn = "mi_qlookup_i8"
    _check(_lookup, QLookupArgs(_ptr(x, _INT8, x.size, False, kn, "x"),
                                _ptr(table, _INT8, 256, False, kn, "table"),
                                _ptr(out, _INT8, x.size, True, kn, "y"), x.size))


class QLinearSigmoid(_Unary, _basic.QLinearSigmoid):
    """QLinearSigmoid by a kept table, one compiled pass (see the module)."""

    package = "mini-infer-cpu-native"


class QLinearLeakyRelu(_Unary, _basic.QLinearLeakyRelu):
    """QLinearLeakyRelu by a kept table, one compiled pass (see the module)."""

    package = "mini-infer-cpu-native"


class QLinearLookup(KeptCalls, _basic.QLinearLookup):
    """QLinearLookup in one compiled pass, X and Y in either format (the same one); the
    call kept as the step's where the table is a constant (:class:`._kept.KeptCalls`)."""

    package = "mini-infer-cpu-native"
    supports_format_combination = _Unary.supports_format_combination

    def compute(self, x: Array, table: Array, *, out: Array) -> None:
        if table.size != 256 or table.dtype != x.dtype or x.dtype not in _INT8:
            super().compute(x, table, out=out)  # its error
            return
        flat = np.ascontiguousarray(table.reshape(-1))
        lookup(x, flat, out)
        _keep_lookup(self, (x, table, out), x, flat, out, not table.flags.writeable)


class QLinearChannelLookup(_basic.QLinearChannelLookup):
    """QLinearChannelLookup with X and Y in either format (the same one): NHWC indexes the
    tables by the last axis; one compiled pass (``mi_qchlookup_i8``)."""

    package = "mini-infer-cpu-native"

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        return QLinearLookup.supports_format_combination(
            self, pos, in_out, num_inputs)  # type: ignore[arg-type]

    def compute(self, x: Array, table: Array, *, out: Array) -> None:
        axis = x.ndim - 1 if hwc_formats(self)[0] else 1
        _basic.check_channel_table(x, table, axis, f"QLinearChannelLookup {self.name!r}")
        if x.shape != out.shape or not (x.flags.c_contiguous and out.flags.c_contiguous):
            _basic.qchannel_lookup(x, table, out, axis)
            return
        kn, c = "mi_qchlookup_i8", x.shape[axis]
        t = np.ascontiguousarray(table)
        _check(_chlookup, QChLookupArgs(
            _ptr(x, _INT8, x.size, False, kn, "x"), _ptr(t, _INT8, t.size, False, kn, "table"),
            _ptr(out, _INT8, x.size, True, kn, "y"), math.prod(x.shape[:axis]), c,
            math.prod(x.shape[axis + 1:])))
