"""Channel-blocked float32 kernels (``_blocked.c``, issue 26 item 3) and what the plugins
declare to the builder's formats pass (``supports_format_combination``).

A tensor (N, C, H, W) in CHW16 (AVX-512F CPUs) or CHW8 (AVX2 + FMA) is held as
(N, ceil(C/k), H, W, k), the last block's missing channels zeros. :func:`offered` is the one
format this CPU's kernels take (None: neither ISA, nothing is offered and every tensor stays
LINEAR). The mixins below go in front of the cpu_native plugins that take it:

* :class:`BlockedConv` (Conv): 2-D and 1-D convolutions of one group (direct, pointwise,
  strided, dilated, padded), depthwise ones and grouped ones of whole blocks per group (the
  kernel takes any grouping; the others decline, and the builder keeps them LINEAR with
  reformats around), with bias, residual, Relu / Clip and the epilogue activations
  (HardSwish, Sigmoid, Swish, HardSigmoid) fused; a stem of at most
  :data:`._blocked_calls.STEM_CHANNELS` input channels reads X LINEAR in place (the image
  is not reformatted), its residual and Y blocked; the weights packed once per weight array
  (``(ceil(M/k), kh, kw, C, k)``, grouped ``(ceil(M/k), kh, kw, c_w, k)``, depthwise
  ``(ceil(C/k), kh, kw, k)``);
* :class:`BlockedPool` (MaxPool without Indices, AveragePool) and
  :class:`BlockedGlobalPool` (GlobalAveragePool);
* :class:`BlockedBinary` (Add, Mul): two blocked tensors of one shape, or one and a vector
  per (image, channel) (squeeze-and-excitation's scale, blocked too), or one and a LINEAR
  per-channel or single value (a constant: laid out in blocks once);
* :class:`BlockedConcat` (Concat on channels), :class:`BlockedSplit` (Split on channels);
* :class:`BlockedResize` (Resize, linear or nearest, of the spatial axes) and
  :class:`BlockedReduce` (ReduceMean over the spatial axes, keepdims);
* Relu and Clip (cpu_basic's, made here on first use: :class:`_Clamp`): the function
  over the whole blocked buffer; Clip's padding lanes zeroed again where 0 is outside its
  bounds;
* :class:`BlockedAffine` (inference BatchNormalization: ``x * a + b`` per channel in one
  pass, a fused Relu as the clamp; a and b, folded at build, laid out in blocks with zeros
  past C so the padding lanes stay zeros).

:class:`_Formats`, their base, answers ``supports_format_combination`` for every LINEAR
position (a template method); a mixin declares only its blocked positions
(``_blocked_combination``), the inputs that stay LINEAR constants (``_linear_input``) and,
where it differs, the ranks it takes (``_ranks``).

Each offers the format only where its kernel runs the node (float32, the shapes above), and
then wants its residual, its other inputs and its output in the same format. The builder
chooses by its cost model or by timing (builder/format_timing.py) whether a run of such
nodes goes blocked; a plugin told LINEAR runs its usual path.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from functools import cache, partial
from typing import TYPE_CHECKING, Any

import numpy as np
from mini_infer_cpu_plugins.serialization import CpuPlugin

from mini_infer_core.ops import lazy_kernels
from mini_infer_core.plugin import (
    DataType,
    PluginTensorDesc,
    TensorFormat,
    from_format,
    shapes,
    to_format,
)
from mini_infer_core.plugin.arrays import NDArray

from ._derived import Derived
from ._native import Act as Act
from ._native import Call, run_calls

if TYPE_CHECKING:  # made when first named (``_lazy``, below)
    from mini_infer_cpu_plugins.ops.activation import Clip_1, Clip_11, Relu
    from mini_infer_cpu_plugins.ops.elementwise import Add

__all__ = ["Add", "BlockedAffine", "BlockedBinary", "BlockedConcat", "BlockedConv",
           "BlockedGlobalPool", "BlockedPool", "BlockedReduce", "BlockedResize", "BlockedSplit",
           "BlockedUnary", "Clip_1", "Clip_11", "Relu", "offered", "run_calls", "set_offered"]

Array = NDArray[Any]
LINEAR = TensorFormat.LINEAR
_forced: list[TensorFormat | None] = []


@cache
def _isa() -> int:
    """The block sizes this CPU's kernels run (bit 0: 8, bit 1: 16). The kernels' module
    (:mod:`._blocked_calls`, its structs and bindings) is imported only where a blocked
    format is asked about or run, not by an engine whose tensors are all LINEAR (issue 30)."""
    from ._blocked_calls import ISA

    return ISA


def offered() -> TensorFormat | None:
    """The blocked format the plugins offer: CHW16 where AVX-512F runs, else CHW8 where AVX2
    + FMA do, else None (unless :func:`set_offered` chose, or ``MINI_INFER_BLOCKED_FORMATS=0``
    in the environment turns them off: every plugin of this module then takes LINEAR only,
    as ``--linear-only`` does for a whole build)."""
    if _forced:
        return _forced[0]
    if os.environ.get("MINI_INFER_BLOCKED_FORMATS", "").strip().lower() in {"0", "off", "no",
                                                                            "false"}:
        return None
    return TensorFormat.CHW16 if _isa() & 2 else TensorFormat.CHW8 if _isa() & 1 else None


def set_offered(fmt: TensorFormat | None | bool) -> None:
    """Offer ``fmt`` (CHW8 or CHW16, which this CPU must run; None: nothing) from now on;
    True: back to :func:`offered`'s own choice. For tests and benchmarks."""
    _forced.clear()
    if isinstance(fmt, TensorFormat):
        if not _isa() & (1 if fmt is TensorFormat.CHW8 else 2):
            raise ValueError(f"this CPU does not run the {fmt.name} kernels")
        _forced.append(fmt)
    elif fmt is None:
        _forced.append(None)


# -- what the plugins declare, and their blocked runs ----------------------------------------


def _blocked_at(desc: PluginTensorDesc, ranks: Sequence[int] = (4,)) -> bool:
    """Whether ``desc`` is the format offered, float32, of one of ``ranks`` (4: 2-D maps,
    3: 1-D) with known channels."""
    return (desc.format is offered() and desc.format is not None
            and desc.dtype is DataType.FLOAT and len(desc.shape) in ranks
            and desc.shape[1] >= 0)


class _Formats:
    """Shared by the mixins: what they declare to the builder, and the formats the plugin was
    configured with.

    :meth:`supports_format_combination` is a template method: a LINEAR position is answered
    here, once for every mixin (the plugin's own answer, the next class's in the MRO, where
    the node's data is LINEAR or the position is one of :meth:`_linear_input`'s; else False,
    or :meth:`_linear_beside`'s answer), and a blocked one by :meth:`_blocked_combination`,
    which is all a new blocked plugin declares."""

    input_descs: list[PluginTensorDesc | None]
    output_descs: list[PluginTensorDesc]
    _calls: tuple[tuple[Any, ...], list[Call]] | None = None
    #: the ranks of the blocked tensors the kernels take (4: 2-D maps; 3: 1-D too, only
    #: for Conv and BatchNormalization: a rank-3 elementwise chain is a transformer's
    #: (N, sequence, hidden) as often as a 1-D map, and would go blocked by the cost model
    #: with reformats around it)
    _ranks: tuple[int, ...] = (4,)

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                     num_inputs: int) -> bool:
        desc = in_out[pos]
        side = pos < num_inputs and self._linear_input(pos, num_inputs)
        if desc.format is LINEAR:
            if side or self._lead(pos, in_out, num_inputs) is LINEAR:
                return bool(super().supports_format_combination(  # type: ignore[misc]
                    pos, in_out, num_inputs))
            return self._linear_beside(pos, in_out, num_inputs)
        return not side and self._blocked_combination(pos, in_out, num_inputs)

    def _linear_input(self, pos: int, num_inputs: int) -> bool:
        """Whether input ``pos`` stays LINEAR whatever the node's format (a constant: weights,
        bounds, statistics). Default: none."""
        return False

    def _lead(self, pos: int, in_out: Sequence[PluginTensorDesc], num_inputs: int
              ) -> TensorFormat:
        """The format the node runs in, as the positions before ``pos`` settled it (LINEAR:
        the plugin's usual path). Default: the first input's."""
        return in_out[0].format if pos else LINEAR

    def _linear_beside(self, pos: int, in_out: Sequence[PluginTensorDesc], num_inputs: int
                       ) -> bool:
        """Whether a LINEAR ``in_out[pos]`` (not a :meth:`_linear_input`) is taken in a node
        running blocked. Default: no."""
        return False

    def _blocked_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                             num_inputs: int) -> bool:
        """Whether the blocked ``in_out[pos]`` is taken (the positions before settled).
        Default: the offered format, float32 of :attr:`_ranks`, the first input's format and
        rank."""
        desc, first = in_out[pos], in_out[0]
        return _blocked_at(desc, self._ranks) and (pos == 0 or (
            desc.format is first.format and len(desc.shape) == len(first.shape)))

    def _block(self) -> int:
        """The block of this node's output (0: LINEAR, the plugin's usual path)."""
        descs = getattr(self, "output_descs", None)
        return descs[0].format.block if descs else 0

    def configure_plugin(self, inputs: Any, outputs: Any) -> None:
        super().configure_plugin(inputs, outputs)  # type: ignore[misc]
        self._calls = None  # made for other formats, maybe

    def _run_blocked(self, key: tuple[Any, ...], calls: list[Call]) -> bool:
        """Keep ``calls`` for the arrays of ``key`` (replayed while they come back) and run
        them."""
        self._calls = (key, calls)
        run_calls(calls)
        return True

    def _bound(self, make: Callable[[], list[Call] | None]) -> Callable[[], None] | None:
        """A plan step's run of the blocked calls ``make`` makes (None: not blocked)."""
        calls = make() if self._block() else None
        return None if calls is None else partial(run_calls, calls)


class BlockedConv(_Formats):
    """Conv: a 2-D or 1-D float32 convolution of one group, depthwise (group = C = M), or of
    groups of whole blocks, takes the blocked format at X, the residual and Y (W and B stay
    LINEAR constants); a 1-D one runs as a 2-D one of height 1."""

    _ranks = (3, 4)

    attrs: dict[str, Any]
    hidden: dict[str, Any]
    _derived: Callable[..., Any]
    _onnx_weights: Callable[[Array, int], Array]
    geometry: Callable[..., Any]
    _own_gemm: Callable[..., bool]
    _plan_for: Callable[..., Any]

    def _linear_input(self, pos: int, num_inputs: int) -> bool:
        return pos in (1, 2)  # W, B

    def _skips_padding(self, xshape: Sequence[int], wshape: Sequence[int], group: int
                       ) -> bool:
        """Whether the LINEAR path runs this convolution tap by tap, skipping the taps that
        read only padding (:mod:`._tap_gemm`: DeepLabV3's ASPP, 3x3 dilated 12/24/36 over
        32x32): the blocked kernel multiplies every tap, padding included (2.1x the LINEAR
        path's time there), so such a node declines the blocked format. Only where the
        spatial sizes are known at build (the batch need not be)."""
        from . import _tap_gemm
        if len(xshape) != 4 or min(xshape[1:]) < 1 or not hasattr(self, "_own_gemm"):
            return False
        x, w = (1, *(int(d) for d in xshape[1:])), tuple(int(d) for d in wshape)
        return self._own_gemm(x, w, 4, group) and _tap_gemm.applies(
            x, w, group, self._plan_for(x, w, 4, group))

    def _stem(self, in_out: Sequence[PluginTensorDesc]) -> bool:
        """Whether X has few enough channels (:data:`STEM_CHANNELS`) to be read LINEAR in
        place by a blocked convolution (a 2-D one of one group, float32, known channels):
        a stem's 3-channel image, which blocked would be 16 lanes a pixel, 13 of them
        zeros, reformatted first (a 224x224 input: 0.23 ms, then read again by the stem)."""
        from ._blocked_calls import STEM_CHANNELS
        x, w = in_out[0], in_out[1]
        return (x.dtype is DataType.FLOAT and len(x.shape) == 4 == len(w.shape)
                and 0 < x.shape[1] <= STEM_CHANNELS and w.shape[1] == x.shape[1]
                and int(self.attrs.get("group") or 1) == 1)

    def _lead(self, pos: int, in_out: Sequence[PluginTensorDesc], num_inputs: int
              ) -> TensorFormat:
        """A stem's X is LINEAR whatever Y's format: the residual and Y follow Y's."""
        if pos and self._stem(in_out):
            return in_out[num_inputs].format
        return super()._lead(pos, in_out, num_inputs)

    def _blocked_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                             num_inputs: int) -> bool:
        desc, first = in_out[pos], in_out[0]
        if self._stem(in_out):  # X stays LINEAR; the residual and Y blocked alike
            return pos > 0 and _blocked_at(desc, (4,)) and (
                pos == num_inputs or desc.format is in_out[num_inputs].format)
        if not _blocked_at(desc, self._ranks) or len(desc.shape) != len(first.shape):
            return False
        if pos == 0:
            w = in_out[1]
            if len(w.shape) != len(first.shape) or min(w.shape) < 1:
                return False
            group, c, m = int(self.attrs.get("group") or 1), first.shape[1], w.shape[0]
            if group == c == m and w.shape[1] == 1:
                return True  # depthwise
            # dense, or groups of whole blocks (grouped ones of other widths decline: the
            # builder keeps the node LINEAR, reformatting around it where its neighbours
            # run blocked; the kernel takes them, reading whole blocks, zeros between)
            k = desc.format.block
            return w.shape[1] * group == c and m % group == 0 and (
                group == 1 or (w.shape[1] % k == 0 and (m // group) % k == 0)) and not (
                self._skips_padding(first.shape, w.shape, group))
        return desc.format is first.format  # the residual and Y

    def pack_constants(self, inputs: Sequence[Any], constants: Sequence[Any]
                       ) -> dict[int, Any]:
        """Nothing where the node runs blocked: W stays in ONNX's order (the engine file's),
        packed for the blocked kernel once at its first run, rather than in the GEMM's
        panels as well."""
        if self._block():
            return {}
        packed: dict[int, Any] = super().pack_constants(inputs, constants)  # type: ignore[misc]
        return packed

    def get_workspace_size(self, *args: Any) -> int:  # (inputs, outputs): DynamicExt's
        """0 where the node runs blocked (Y's format): the blocked kernel reads X and
        the packed W directly; the im2col/Winograd buffers of the other paths would be
        worked out for nothing (at each new shape's plan: a first run's) and planned in the
        arena."""
        outputs = args[1] if len(args) == 2 else None
        if outputs and outputs[0] is not None and outputs[0].format.block:
            return 0
        size: int = super().get_workspace_size(*args)  # type: ignore[misc]
        return size

    def get_tactics(self, input_shapes: Sequence[tuple[int, ...] | None]) -> list[str]:
        """None where the node runs blocked: its one kernel (Winograd's and the GEMM's
        tactics would time it twice, and a tie could go either way)."""
        if self._block():
            return []
        tactics: list[str] = super().get_tactics(input_shapes)  # type: ignore[misc]
        return tactics

    def _blocked_conv(self, key: tuple[Any, ...], x: Array, w: Array, b: Array | None,
                      r: Array | None, out: Array, group: int, lo: float, hi: float,
                      act: Act) -> bool:
        """Run the blocked convolution where this node is blocked (False: it is not)."""
        k = self._block()
        if not k:
            return False
        from ._blocked_calls import (
            _padded_channels,
            conv_call,
            pack_dense,
            pack_depthwise,
            pack_grouped,
        )
        c_in = w.shape[1] * group  # W in ONNX's order (pack_constants)
        depthwise = group != 1 and group == c_in == w.shape[0]
        fresh = False  # X copied for this run: its calls are not kept
        if self.input_descs[0] is not None and not self.input_descs[0].format.block:
            # a stem's LINEAR X (N, C, H, W), read in place; a graph input of other strides
            # copied (its object may come back with other contents)
            fresh = not (x.flags.c_contiguous and x.dtype == np.float32)
            x = np.ascontiguousarray(x, np.float32)
        elif x.ndim == 4:  # 1-D (N, CB, L, k): as 2-D of height 1 (views)
            x, out = x[:, :, None], out[:, :, None]
            r = None if r is None else r[:, :, None]
        wshape = (*w.shape[:2], 1, w.shape[2]) if w.ndim == 3 else w.shape
        win, geo = self.geometry((x.shape[0], c_in, x.shape[2], x.shape[3]), wshape)

        def packed(v: Array) -> Array:
            onnx = self._onnx_weights(v, group)
            if onnx.ndim == 3:
                onnx = onnx[:, :, None]
            return pack_depthwise(onnx, k) if depthwise else pack_grouped(onnx, k, group) \
                if group > 1 else pack_dense(onnx, k)

        wp = self._derived(w, ("blocked", k), packed)
        bias = None if b is None else self._derived(
            b, ("blocked-bias", k), lambda v: _padded_channels(v.astype(np.float32), k))
        call = conv_call(x, wp, bias, r, out, c_in=c_in, c_out=wshape[0],
                         kernel=win.kernel, strides=win.strides, dilations=win.dilations,
                         begin=geo.begin, depthwise=depthwise, lo=lo, hi=hi, act=act,
                         group=group)
        if fresh:
            self._calls = None
            run_calls([call])
            return True
        return self._run_blocked(key, [call])


class BlockedPool(_Formats):
    """MaxPool (without Indices) and AveragePool, 2-D float32: X and Y blocked."""

    attrs: dict[str, Any]

    def _blocked_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                             num_inputs: int) -> bool:
        return len(in_out) - num_inputs == 1 and super()._blocked_combination(
            pos, in_out, num_inputs)

    def _blocked_pool(self, x: Array, out: Array, average: bool) -> bool:
        if not self._block():
            return False
        from ._blocked_calls import pool_call
        win = shapes.window_from_attrs(self.op_type, 2, self.attrs)  # type: ignore[attr-defined]
        g = shapes.resolve(x.shape[2:4], win)
        call = pool_call(x, out, kernel=win.kernel, strides=win.strides,
                         dilations=win.dilations, begin=g.begin, end=g.end, average=average,
                         include_pad=bool(self.attrs.get("count_include_pad", 0)))
        return self._run_blocked((x, out), [call])


class BlockedGlobalPool(_Formats):
    """GlobalAveragePool, 2-D float32: X and Y blocked (Y (N, C/k, 1, 1, k))."""

    def _global_calls(self, x: Any, out: Any) -> list[Call] | None:
        """The blocked mean of each channel (None: this node is not blocked)."""
        if not self._block() or not isinstance(x, np.ndarray) or x.ndim != 5:
            return None
        from ._blocked_calls import pool_call
        h, w = x.shape[2], x.shape[3]
        return [pool_call(x, out, kernel=(h, w), strides=(1, 1), dilations=(1, 1),
                          begin=(0, 0), end=(0, 0), average=True, include_pad=False)]


def _per_channel(shape: Sequence[int], c: int, rank: int = 4) -> bool:
    """A LINEAR operand broadcast as one value per channel of a tensor of ``rank`` and c
    channels (or one value): (C, 1, 1), (1, C, 1, 1), (1,), () for rank 4."""
    if math.prod(shape) == 1 and min(shape, default=1) >= 0:
        return True
    full = (1,) * (rank - len(shape)) + tuple(shape)
    return len(shape) <= rank and full[0] == 1 and full[1] == c and all(
        d == 1 for d in full[2:])


def _operand(desc: PluginTensorDesc, out: PluginTensorDesc) -> str:
    """How a blocked operand meets the output: "full" (its shape), "vector" (one value per
    image and channel), "" (neither)."""
    s, o = desc.shape, out.shape
    if len(s) != len(o) or len(s) not in (3, 4) or s[1] != o[1]:
        return ""
    if tuple(s) == tuple(o) and all(d >= 0 for d in s[1:]):
        return "full"
    if all(d == 1 for d in s[2:]) and (s[0] == 1 or s[0] == o[0]):
        return "vector"
    return ""


class BlockedBinary(Derived, _Formats):
    """Add, Mul: the output blocked with one operand of its shape, the other of its shape
    too, or one value per (image, channel) blocked, or a LINEAR value per channel."""

    op_type: str

    def _lead(self, pos: int, in_out: Sequence[PluginTensorDesc], num_inputs: int
              ) -> TensorFormat:
        """Either operand may be the blocked one: the first blocked before ``pos``."""
        return next((in_out[i].format for i in range(min(pos, num_inputs))
                     if in_out[i].format is not LINEAR), LINEAR)

    def _linear_beside(self, pos: int, in_out: Sequence[PluginTensorDesc], num_inputs: int
                       ) -> bool:
        """Beside a blocked operand: a LINEAR value per channel (or one value)."""
        desc = in_out[pos]
        out = in_out[num_inputs]
        return (num_inputs == 2 and pos < num_inputs and desc.dtype is DataType.FLOAT
                and _per_channel(desc.shape, out.shape[1], len(out.shape)))

    def _blocked_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                             num_inputs: int) -> bool:
        desc, out = in_out[pos], in_out[num_inputs]
        if num_inputs != 2 or not _blocked_at(desc, self._ranks):
            return False
        fmt = next(in_out[i].format for i in range(3) if in_out[i].format is not LINEAR)
        if pos < num_inputs:
            return desc.format is fmt and bool(_operand(desc, out))
        if any(in_out[i].format is LINEAR and not _per_channel(
                in_out[i].shape, out.shape[1], len(out.shape)) for i in range(2)):
            return False
        modes = [_operand(in_out[i], out) for i in range(2)
                 if in_out[i].format is not LINEAR]
        return desc.format is fmt and "full" in modes

    def _binary_calls(self, a: Any, b: Any, out: Any) -> list[Call] | None:
        """The blocked ``out = a OP b`` (None: this node is not blocked)."""
        k = self._block()
        if not k:
            return None
        from ._blocked_calls import _padded_channels, binary_call
        op = {"Add": "add", "Mul": "mul"}[self.op_type]
        c = self.output_descs[0].shape[1]

        def vector(v: Array) -> Array:
            per_channel = np.broadcast_to(np.asarray(v, np.float32).reshape(-1), (c,))
            return _padded_channels(per_channel, k).reshape(1, -1, *(1,) * (out.ndim - 3), k)

        operands = []
        for arr, desc in zip((a, b), self.input_descs, strict=True):
            if desc is not None and desc.format is LINEAR:  # one value per channel (or one)
                arr = self._derived(arr, ("blocked", k, c, out.ndim), vector)
            operands.append(arr)
        x, y = operands
        if x.shape != out.shape:  # the vector first: swapped (both ops commute)
            x, y = y, x
        return [binary_call(x, y, out, op)]


class BlockedConcat(_Formats):
    """Concat on channels of 4-D float32 tensors: every input and the output blocked."""

    attrs: dict[str, Any]

    def _blocked_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                             num_inputs: int) -> bool:
        axis, rank = int(self.attrs.get("axis", 1)), len(in_out[0].shape)
        return num_inputs > 1 and axis % max(rank, 1) == 1 and super()._blocked_combination(
            pos, in_out, num_inputs)

    def _concat_calls(self, xs: Sequence[Array], out: Array) -> list[Call] | None:
        if not self._block():
            return None
        from ._blocked_calls import concat_call
        cs = [d.shape[1] for d in self.input_descs if d is not None]
        return [concat_call(xs, cs, out)]


class BlockedUnary(_Formats):
    """The elementwise activations (Sigmoid, HardSwish, Tanh...): X and Y in the same blocked
    format, the function over the whole blocked buffer, then, where f(0) != 0 (Sigmoid,
    HardSigmoid), the padding lanes zeroed again."""

    op_type: str

    def _pad_calls(self, out: Array) -> list[Call]:
        """After the function: the padding lanes zeroed where f(0) != 0 and Y is blocked."""
        if not self._block() or self.op_type not in ("Sigmoid", "HardSigmoid"):
            return []
        from ._blocked_calls import padzero_call
        return [padzero_call(out, self.output_descs[0].shape[1])]


class BlockedAffine(_Formats):
    """Inference BatchNormalization of a 4-D float32 X: X and Y blocked (scale, B, mean and
    var LINEAR constants); one output only (training mode's statistics stay LINEAR)."""

    _affine: tuple[Array, Array, Array, Array] | None = None
    _ranks = (3, 4)

    def _linear_input(self, pos: int, num_inputs: int) -> bool:
        return pos > 0  # scale, B, mean, var

    def _blocked_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                             num_inputs: int) -> bool:
        first = in_out[0]
        if len(in_out) - num_inputs != 1 or any(
                len(d.shape) != 1 or d.shape[0] != first.shape[1]
                for d in in_out[1:num_inputs]):
            return False
        return super()._blocked_combination(pos, in_out, num_inputs)

    def _affine_calls(self, x: Array, a: Array, b: Array, out: Array, relu: bool
                      ) -> list[Call] | None:
        """``out = max?(x * a + b)`` blocked in one pass (the clamp: the fused Relu), a and b
        per-channel vectors with zeros past C (None: this node is not blocked)."""
        k = self._block()
        if not k:
            return None
        from ._blocked_calls import _padded_channels, binary_call
        kept = self._affine
        if kept is None or kept[0] is not a or kept[1] is not b or kept[2].shape[-1] != k \
                or kept[2].ndim != x.ndim:
            av, bv = (_padded_channels(v.astype(np.float32).reshape(-1), k).reshape(
                1, -1, *(1,) * (x.ndim - 3), k) for v in (a, b))
            kept = self._affine = (a, b, av, bv)
        return [binary_call(x, kept[2], out, "scale_shift", 0.0 if relu else -np.inf,
                            shift=kept[3])]


class BlockedReduce(BlockedGlobalPool):
    """ReduceMean of a 4-D float32 X (N, C, H, W) into (N, C, 1, 1) (keepdims, the spatial
    axes: the mean over axes of size 1 changes nothing, so the output's shape is the test,
    also where the axes are an input): X and Y blocked, the axes a LINEAR constant."""

    def _linear_input(self, pos: int, num_inputs: int) -> bool:
        return pos > 0  # the axes

    def _blocked_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                             num_inputs: int) -> bool:
        first, out = in_out[0], in_out[num_inputs]
        return (len(in_out) - num_inputs == 1 and len(first.shape) == len(out.shape) == 4
                and tuple(out.shape) == (*first.shape[:2], 1, 1) and min(first.shape) >= 0
                and super()._blocked_combination(pos, in_out, num_inputs))


class BlockedSplit(_Formats):
    """Split on the channels of a 4-D float32 X: X and every output blocked (the sizes a
    LINEAR constant, or the outputs' channels)."""

    axis: Callable[[int], int]

    def _linear_input(self, pos: int, num_inputs: int) -> bool:
        return pos > 0  # the sizes

    def _blocked_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                             num_inputs: int) -> bool:
        first = in_out[0]
        return (len(first.shape) == 4 and self.axis(4) == 1
                and all(len(d.shape) == 4 and d.shape[1] >= 0 for d in in_out[num_inputs:])
                and super()._blocked_combination(pos, in_out, num_inputs))

    def _split_calls(self, x: Any, outs: Sequence[Any]) -> list[Call] | None:
        """The blocked split of ``x`` into ``outs`` (None: this node is not blocked)."""
        if not self._block() or len(outs) != len(self.output_descs):
            return None
        from ._blocked_calls import split_call
        return [split_call(x, outs, [d.shape[1] for d in self.output_descs])]


class BlockedResize(_Formats):
    """Resize, linear or nearest, of the two spatial axes of a 4-D float32 X: X and Y blocked
    (roi, scales and sizes LINEAR), by ``_resize.c``'s tables over whole blocks; a run whose
    tables do not apply (a roi over N or C, say) goes through LINEAR copies."""

    opts: dict[str, Any]
    plan: Callable[..., Any]
    operands: Callable[..., Any]
    _bz_last: tuple[tuple[Any, ...], list[Call]] | None = None

    def _linear_input(self, pos: int, num_inputs: int) -> bool:
        return pos > 0  # roi, scales, sizes

    def _blocked_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                             num_inputs: int) -> bool:
        first, out, o = in_out[0], in_out[num_inputs], self.opts
        return (o["mode"] in ("linear", "nearest") and o["ctm"] != "tf_crop_and_resize"
                and not o["antialias"] and len(in_out) - num_inputs == 1
                and len(out.shape) == 4 and tuple(out.shape[:2]) == tuple(first.shape[:2])
                and super()._blocked_combination(pos, in_out, num_inputs))

    def _resized(self, x: Array, ins: Sequence[Any], out: Array) -> bool:
        """Resize the blocked ``x`` into ``out`` where this node is blocked (False: it is
        not)."""
        k = self._block()
        if not k or self.input_descs[0] is None:
            return False
        from ._blocked_calls import resize_call
        from ._resize import tables

        shape = tuple(self.input_descs[0].shape)
        steps = tuple(self.plan(shape, *self.operands(x, *ins)))
        last = self._bz_last
        if last is not None and last[0][0] is x and last[0][1] is out and last[0][2] == steps:
            run_calls(last[1])
            return True
        tab = tables(shape, steps, self.opts)
        if tab is None:  # through LINEAR: cpu_basic's over the logical tensor
            fmt = self.output_descs[0].format
            y = super().compute(from_format(x, fmt, shape), *ins)  # type: ignore[misc]
            to_format(np.asarray(y, np.float32), fmt, out=out)
            return True
        self._bz_last = ((x, out, steps), [resize_call(x, out, tab)])
        run_calls(self._bz_last[1])
        return True


class _Add(BlockedBinary, CpuPlugin):
    """cpu_basic's Add (after this in the class's bases: made on first use, so that loading
    an engine without an Add does not import cpu_basic's elementwise family), blocked where
    the builder chose the blocked format for it."""

    def compute(self, a: Array, b: Array, *, out: Array, **kw: Any) -> None:
        key = (a, b, out)
        kept = self._calls
        if kept is not None and all(x is y for x, y in zip(kept[0], key, strict=True)):
            run_calls(kept[1])
            return
        calls = self._binary_calls(a, b, out)
        if calls is None:
            super().compute(a, b, out=out, **kw)
        else:
            self._run_blocked(key, calls)

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        if self._block():
            return self._bound(lambda: self._binary_calls(inputs[0], inputs[1], outputs[0]))
        bound: Callable[[], None] | None = super().bind_run(
            inputs, outputs, workspace)
        return bound  # cpu_basic's: its ufunc bound to the step's arrays


class _Clamp(BlockedUnary, CpuPlugin):
    """cpu_basic's Relu, Clip_1 and Clip_11 (after this in the class's bases), offering the
    blocked format (X, Y; Clip_11's bounds stay LINEAR constants): cpu_basic's function over
    the whole blocked buffer (Relu(0) = 0), then, for a Clip whose bounds leave out 0, the
    padding lanes zeroed again."""

    attrs: dict[str, Any]

    def _linear_input(self, pos: int, num_inputs: int) -> bool:
        return pos > 0  # Clip_11's bounds: scalars

    def compute(self, x: Array, *bounds: Array | None, out: Array, **kw: Any) -> None:
        super().compute(x, *bounds, out=out, **kw)
        if not self._block() or self.op_type != "Clip":
            return
        from ._blocked_calls import padzero_call
        lo, hi = (*bounds, None, None)[:2] if bounds else (kw.get("min"), kw.get("max"))
        if (lo is not None and float(lo) > 0.0) or (hi is not None and float(hi) < 0.0):
            run_calls([padzero_call(out, self.output_descs[0].shape[1])])

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        if self._block() and self.op_type == "Clip":
            return None  # compute: the bounds and the padding
        bound: Callable[[], None] | None = super().bind_run(inputs, outputs, workspace)
        return bound


def _ours(cls: type[Any]) -> None:
    cls.package = "mini-infer-cpu-native"


_lazy = lazy_kernels(__name__, {
    "Add": (_Add, "mini_infer_cpu_plugins.ops.elementwise:Add"),
    "Relu": (_Clamp, "mini_infer_cpu_plugins.ops.activation:Relu"),
    "Clip_1": (_Clamp, "mini_infer_cpu_plugins.ops.activation:Clip_1"),
    "Clip_11": (_Clamp, "mini_infer_cpu_plugins.ops.activation:Clip_11")}, made=_ours)


def __getattr__(name: str) -> Any:
    return _lazy(name)
