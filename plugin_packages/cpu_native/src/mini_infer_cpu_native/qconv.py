"""cpu_basic's QLinearConv and ConvInteger with their 8-bit 2-D cases on the compiled integer
GEMM (:mod:`._qgemm`, ``_qgemm.c``).

* The product of each group is ``rows (N*OH*OW, kh*kw*C/g) x W_g^T``: the rows are the
  input's windows, read by the kernel itself from the NHWC input (``mi_qconv_i8``: no im2col
  matrix; a tap outside the image reads x's zero point, so that padding contributes nothing,
  as onnxruntime pads), each thread packing its own block of rows inside the product's one
  dispatch on the pool (a 1 x 1 stride-1 window on AVX-512 VNNI reads the image in place);
  each group's outputs are written in place into the NHWC result (its columns, rows M
  apart).
* x and the output may be NHWC themselves (``TensorFormat.HWC``, negotiated by the builder's
  formats pass with the other 8-bit plugins): no transposition at all between two integer
  convolutions; a LINEAR x is made NHWC once, a LINEAR output transposed from the NHWC result.
* A constant W (uint8/int8) is packed by the build, group by group, in the GEMM's panels
  (``__qpacked__`` = 1: stored so, same shape and dtype; a uint8 W is stored as w - 128);
  its column sums are computed at the first run. W's zero point and scale may be per output
  channel (its columns).
* QLinearConv's epilogue is onnxruntime's (MlasRequantizeOutput): the int32 bias added to the
  sums, ``float(acc) * (x_scale * w_scale[m] / y_scale)`` in float32, clamped to the output
  type's range less its zero point, rounded half to even, plus the zero point.
* Depthwise convolutions (one input and one output channel per group): on an NHWC x, a direct
  kernel (``mi_qdwconv_i8``, ``_qdw.c``: exact int32 sums, AVX-512 VNNI, AVX2 or plain by
  the integer GEMM's level, the same epilogue; its arguments kept from run to run); on an
  NCHW x, the compiled float32 depthwise kernel on x - x_zero_point and w - w_zero_point,
  exactly (every sum an integer below 2**24: kernels up to 258 taps), with the same epilogue
  in one compiled pass: a GEMM of K = kh*kw per channel is not worth one.
* Grouped convolutions of 4, 8 or 16 inputs and as many outputs a group (RegNet's) on an NHWC
  x, at the integer GEMM's AVX-512 VNNI and AMX levels, where every w - w_zero_point is an
  int8: the same direct kernel with ``cg`` (``_qgconv.h``), not one GEMM call a group.
* A plan that is compiled calls alone (NHWC x and output, or one pixel: NCHW is NHWC then) is
  the engine step's bound call (:class:`._kept.KeptCalls`): no ``enqueue`` or ``compute`` on
  a run.

The last run's plan (the NHWC buffers, the GEMM's arguments) is run again while the input's
shape, the output array and the constant parameters are the same objects (an engine's arena
views and constants are, from run to run). Everything else (other ranks, per-channel x zero
points, other dtypes) is cpu_basic's float64 path (on NCHW copies), with a packed W unpacked
once.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from mini_infer_cpu_plugins.ops import qlinear as _qlinear

from mini_infer_core.plugin import DataType, PluginTensorDesc, Repacked, TensorFormat, shapes
from mini_infer_core.plugin.arrays import NDArray

from ._abi import QConvArgs, QDwConvArgs, QRequantArgs
from ._derived import Derived
from ._kept import KeptCalls
from ._native import _kernel, dwconv2d, dwconv2d_work
from ._qformats import hwc_formats, linear
from ._qgemm import (
    _check,
    _conv,
    _ptr,
    qcolsum,
    qconv_args,
    qgemm_isa,
    qpack_b,
    run_qconv,
    unpack_qb,
)

__all__ = ["ConvInteger", "QLinearConv"]

Array = NDArray[Any]
_INT8 = (np.dtype(np.uint8), np.dtype(np.int8))
_qrequant = _kernel("mi_qrequant_f32", QRequantArgs)
_qdwconv = _kernel("mi_qdwconv_i8", QDwConvArgs)


def _own(args: QConvArgs) -> QConvArgs:
    """A copy of ``args`` that keeps what they keep: a bound step's own, which the kept
    plan's rerun on another x does not repoint."""
    own = QConvArgs.from_buffer_copy(args)
    own._keep = args._keep
    return own


def _scalar(x: Array | None) -> int:
    return 0 if x is None else int(x.reshape(-1)[0])


def _pack_groups(w: Array, group: int) -> Array:
    """W (M, C/g, kh, kw) packed group by group: each group's (K, M/g) B, its K in the rows'
    order (kh, kw, C/g), concatenated."""
    m = w.shape[0]
    mg = m // group
    k = int(np.prod(w.shape[1:]))
    parts = [qpack_b(w[g * mg:(g + 1) * mg].transpose(0, 2, 3, 1).reshape(mg, k).T)
             for g in range(group)]
    return np.concatenate([p.reshape(-1) for p in parts]).reshape(w.shape)


def _unpack_groups(p: Array, group: int) -> Array:
    """:func:`_pack_groups` undone."""
    m, cg, kh, kw = (int(d) for d in p.shape)
    mg = m // group
    k = cg * kh * kw
    flat = p.reshape(-1)
    out = np.empty((m, kh, kw, cg), p.dtype)
    for g in range(group):
        out[g * mg:(g + 1) * mg] = unpack_qb(flat[g * mg * k:(g + 1) * mg * k], k, mg).T.reshape(
            mg, kh, kw, cg)
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))


class _IntegerConv(KeptCalls, Derived):
    """The compiled side shared by both convolutions: W (input ``w_index``) packed by the
    build per group, its column sums, the rows of each group, the int32 sums. A plan that is
    compiled calls alone (NHWC x and output: no transposition) is also kept as the step's
    calls (:class:`._kept.KeptCalls`: the engine's step runs them without ``enqueue``,
    ``compute`` and the plan's identity checks, most of a small 1x1 convolution's time)."""

    w_index: ClassVar[int] = 1
    hidden: dict[str, Any]
    attrs: dict[str, Any]

    if TYPE_CHECKING:
        def record(self, key: str, value: Any | None) -> None: ...  # the plugin base's

        def geometry(self, xshape: Sequence[int], wshape: Sequence[int]
                     ) -> tuple[shapes.Window, shapes.Geometry]: ...  # the schema's

    @staticmethod
    def _depthwise(w: Array, group: int) -> bool:
        return group > 1 and w.shape[0] == group and w.shape[1] == 1

    def pack_constants(self, inputs: Sequence[Any], constants: Sequence[Any]
                       ) -> dict[int, Any]:
        """A constant 8-bit 4-D W stored in the integer GEMM's panels (not a depthwise one)."""
        i = self.w_index
        w = constants[i] if len(constants) > i else None
        group = int(self.attrs.get("group", 1))
        if (w is None or w.dtype not in _INT8 or w.ndim != 4 or w.shape[0] % group
                or self._depthwise(w, group)):
            return {}
        return {i: Repacked(_pack_groups(w, group), lambda: self.record("__qpacked__", 1))}

    def _onnx_w(self, w: Array, group: int) -> Array:
        """W as the ONNX graph has it (a packed one unpacked once)."""
        if self.hidden.get("__qpacked__"):
            return self._derived(w, "onnx", lambda p: _unpack_groups(p, group))
        return w

    def _group_panels(self, w: Array, group: int) -> list[tuple[Array, Array]]:
        """Per group: (packed B, its column sums)."""
        mg = w.shape[0] // group
        k = int(np.prod(w.shape[1:]))

        def split(p: Array) -> list[tuple[Array, Array]]:
            flat = p.reshape(-1)
            out = []
            for g in range(group):
                part = flat[g * mg * k:(g + 1) * mg * k]
                out.append((part, qcolsum(part, k, mg)))
            return out

        if self.hidden.get("__qpacked__"):
            return self._derived(w, "groups", split)
        return self._derived(w, "pack", lambda x: split(_pack_groups(x, group)))

    def _usable(self, x: Array, w: Array, x_zero_point: Array | None, group: int) -> bool:
        return (x.ndim == 4 and w.ndim == 4 and x.dtype in _INT8 and w.dtype in _INT8
                and (x_zero_point is None or x_zero_point.size == 1)
                and x.shape[1] == w.shape[1] * group and w.shape[0] % group == 0)

    #: (x shape, W shape) -> the window, its geometry and padded extent
    _windows: dict[tuple[Any, ...], tuple[shapes.Window, shapes.Geometry, tuple[int, ...]]
                   ] | None = None

    def _window(self, xshape: tuple[int, ...], wshape: tuple[int, ...]
                ) -> tuple[shapes.Window, shapes.Geometry, tuple[int, ...]]:
        """The window, geometry and padded extent for these shapes (worked out once)."""
        if self._windows is None:
            self._windows = {}
        key = (xshape, wshape)
        got = self._windows.get(key)
        if got is None:
            win, geo = self.geometry(xshape, wshape)
            got = self._windows[key] = (win, geo, shapes.padded_extent(xshape[2:], win, geo))
        return got

    def _depthwise_sums(self, x: Array, w: Array, zx: int, zw: Array,
                        bias: Array | None = None) -> Array:
        """float32 (N, C, OH, OW) sums (plus ``bias`` where given) of a depthwise convolution
        on the compiled float32 depthwise kernel, on x - zx and w - zw: every product and
        partial sum is an integer below 2**24 (the caller checks the bound), so float32 holds
        them exactly whatever the order of the sums; the kernel's zero padding is x's zero
        point."""
        kh, kw = int(w.shape[2]), int(w.shape[3])
        win, geo, ext = self._window(x.shape, w.shape)
        out = tuple(geo.out)
        xf = np.subtract(x, np.float32(zx), dtype=np.float32)
        wf = self._derived(w, ("dw", zw.tobytes()), lambda v: np.ascontiguousarray(
            v.astype(np.float32) - zw.astype(np.float32).reshape(-1, 1, 1, 1)))
        y = np.empty((x.shape[0], x.shape[1], *out), np.float32)
        work = np.empty(dwconv2d_work((ext[0], ext[1]), out[0]), np.float32)
        dwconv2d(xf, wf, bias, None, y, work, (kh, kw), (win.strides[0], win.strides[1]),
                 (win.dilations[0], win.dilations[1]), (geo.begin[0], geo.begin[1]),
                 (ext[0], ext[1]), -np.inf, np.inf)
        return y

    @staticmethod
    def _exact(w: Array, bias: Array | None) -> bool:
        """Whether a depthwise convolution's sums (and bias) stay below 2**24."""
        reach = int(w.shape[2] * w.shape[3]) * 255 * 255
        return reach + (0 if bias is None else int(np.abs(bias).max(initial=0))) < 2**24

    #: the last product's plan, run again while its key holds: (key, the NHWC input (None:
    #: x itself), the NHWC output (None: out itself), each group's arguments, the x they
    #: read where the input is None)
    _kept_plan: tuple[tuple[Any, ...], Array | None, Array | None, list[QConvArgs], Array
                      ] | None = None

    @staticmethod
    def _key(x: Array, out: Array, *params: Array | None) -> tuple[Any, ...] | None:
        """What a plan is made for: x's shape and dtype, the output array, W and the
        parameters (constants: read-only); None where one may change between runs."""
        if any(p is not None and p.flags.writeable for p in params):
            return None
        return (x.shape, x.dtype, out, *params)

    def _run_plan(self, x: Array, out: Array, key: tuple[Any, ...] | None) -> bool:
        """Run the kept plan if it was made for ``key``."""
        plan = self._kept_plan
        if key is None or plan is None or len(plan[0]) != len(key) or plan[0][:2] != key[:2] \
                or any(p is not q for p, q in zip(plan[0][2:], key[2:], strict=True)):
            return False
        _, xh, y, argss, read = plan
        if xh is None and x is not read:  # the kernel reads x itself: point it at this one
            if not x.flags.c_contiguous:
                return False
            for args in argss:
                args.x = x.ctypes.data
            self._kept_plan = (*plan[:4], x)
        self._run(x, xh, y, argss, out)
        return True

    @staticmethod
    def _run(x: Array, xh: Array | None, y: Array | None, argss: list[QConvArgs], out: Array
             ) -> None:
        """x made NHWC (into ``xh``, unless it is already), each group's product, and the
        NHWC result written to ``out`` in NCHW (unless ``out`` is NHWC itself: ``y`` None)."""
        if xh is not None:
            np.copyto(xh, x.transpose(0, 2, 3, 1))
        for args in argss:
            run_qconv(args)
        if y is not None:
            n, m = out.shape[:2]
            if out.flags.c_contiguous:
                _to_nchw(y.reshape(n, -1, m), out.reshape(n, m, -1))
            else:
                out[...] = y.reshape(n, *out.shape[2:], m).transpose(0, 3, 1, 2)

    def _gemm(self, x: Array, w: Array, zx: int, zw: Array, group: int, out: Array,
              mult: Array | None = None, bias: Array | None = None, zy: int = 0,
              key: tuple[Any, ...] | None = None, hwc: tuple[bool, bool] = (False, False)
              ) -> None:
        """out (N, M, OH, OW) = the epilogue of each group's product, its rows read from the
        NHWC input's windows by the kernel (``hwc``: x and out are NHWC already); the plan
        kept for ``key``."""
        m = w.shape[0]
        mg = m // group
        kh, kw = int(w.shape[2]), int(w.shape[3])
        cg = int(w.shape[1])
        k = cg * kh * kw
        xshape = (x.shape[0], x.shape[3], x.shape[1], x.shape[2]) if hwc[0] else x.shape
        win, geo, _ = self._window(tuple(xshape), tuple(w.shape))
        dims = (int(geo.out[0]), int(geo.out[1]))
        n = int(xshape[0])
        # one pixel (a classifier's Gemm made a convolution): NCHW is NHWC, no copy
        one_x = xshape[2] * xshape[3] == 1 and x.flags.c_contiguous
        one_y = dims == (1, 1) and out.flags.c_contiguous
        xh = None if hwc[0] or one_x else np.empty((n, *xshape[2:], xshape[1]), x.dtype)
        y = None if hwc[1] or one_y else np.empty((n * dims[0] * dims[1], m), out.dtype)
        dest = out.reshape(-1, m) if y is None else y
        xn = x.reshape(n, 1, 1, int(xshape[1])) if not hwc[0] and xh is None else x
        packed = self._group_panels(w, group)
        zb = zw.astype(np.int32).reshape(-1)
        if w.dtype == np.uint8:
            zb = zb - 128
        argss = []
        for g in range(group):
            sl = slice(g * mg, (g + 1) * mg)
            argss.append(qconv_args(
                xn if xh is None else xh, packed[g][0], packed[g][1], dest, k, c0=g * cg,
                cg=cg, col0=g * mg, kernel=(kh, kw),
                strides=(int(win.strides[0]), int(win.strides[1])),
                dilations=(int(win.dilations[0]), int(win.dilations[1])),
                begin=(int(geo.begin[0]), int(geo.begin[1])), out=dims, a_zero=zx,
                b_zero=np.ascontiguousarray(zb[sl] if zb.size > 1 else zb),
                mult=None if mult is None else np.ascontiguousarray(
                    mult[sl] if mult.size > 1 else mult),
                bias=None if bias is None else np.ascontiguousarray(bias[sl]), y_zero=zy))
        self._run(x, xh, y, argss, out)
        self._kept_plan = None if key is None else (key, xh, y, argss, x)
        self._keep_calls(x, out, None if key is None or xh is not None or y is not None
                         else [(_conv, (_own(args),)) for args in argss])

    def _keep_calls(self, x: Array, out: Array, calls: list[Any] | None) -> None:
        """Keep ``calls`` (compiled, each with arguments of its own) as what a run on ``x``
        into ``out`` is, or nothing."""
        self._calls = None if calls is None else ((x, out), calls)


#: pixels per block of an output transposed from the GEMM's (pixels, channels) to NCHW
_BLOCK = 128


def _to_nchw(c: Array, out: Array) -> None:
    """``out`` (N, M, P) = ``c`` (N, P, M) transposed; many channels in blocks of pixels that
    stay in cache (a NumPy transposing copy of uint8 is 1.5-5x slower in one piece there)."""
    p, m = c.shape[1:]
    if m < 64 or p <= _BLOCK:
        np.copyto(out, c.transpose(0, 2, 1))
        return
    for p0 in range(0, p, _BLOCK):
        np.copyto(out[:, :, p0:p0 + _BLOCK], c[:, p0:p0 + _BLOCK].transpose(0, 2, 1))


def _requantize(f: Array, mult: Array, zy: int, out: Array) -> None:
    """onnxruntime's requantization of (N, M, ...) sums with their bias, exact integers in
    float32, into ``out`` (uint8 or int8), per channel: ``_qconv.c``, one pass."""
    kn = "mi_qrequant_f32"
    n, m = f.shape[:2]
    hw = int(np.prod(f.shape[2:]))
    step = int(mult.size > 1)
    _check(_qrequant, QRequantArgs(
        _ptr(f, (np.float32,), f.size, False, kn, "x"),
        _ptr(out, (out.dtype,), f.size, True, kn, "y"),
        _ptr(mult, (np.float32,), m if step else 1, False, kn, "mult"),
        n, m, hw, step, int(out.dtype == np.int8), int(zy)))


class QLinearConv(_IntegerConv, _qlinear.QLinearConv):
    """8-bit 2-D convolutions requantized on the compiled integer GEMM (see the module)."""

    w_index = 3
    hidden_fields: ClassVar[tuple[str, ...]] = (*_qlinear.QLinearConv.hidden_fields,
                                                "__qpacked__")
    package = "mini-infer-cpu-native"

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        """x and the output LINEAR or HWC (NHWC, each on its own), 8-bit 2-D; the rest
        LINEAR."""
        desc = in_out[pos]
        if desc.format is TensorFormat.HWC:
            return (pos in (0, num_inputs) and len(desc.shape) == 4
                    and desc.dtype in (DataType.UINT8, DataType.INT8))
        return super().supports_format_combination(pos, in_out, num_inputs)

    def compute(self, x: Array, x_scale: Array, x_zero_point: Array,  # type: ignore[override]
                w: Array, w_scale: Array, w_zero_point: Array, y_scale: Array,
                y_zero_point: Array | None = None, b: Array | None = None, *, out: Array,
                group: int, **kw: Any) -> None:
        key = self._key(x, out, w, x_scale, x_zero_point, w_scale, w_zero_point, y_scale,
                        y_zero_point, b)
        if self._run_plan(x, out, key) or self._run_dw_plan(x, out, key):
            return
        x_hwc, out_hwc = hwc_formats(self)
        hwc = (x_hwc, out_hwc)
        xl = x.transpose(0, 3, 1, 2) if hwc[0] else x  # NCHW views
        ol = out.transpose(0, 3, 1, 2) if hwc[1] else out
        m = w.shape[0]
        if (not self._usable(xl, w, x_zero_point, group) or out.dtype not in _INT8
                or (hwc[0] and not x.flags.c_contiguous)
                or (hwc[1] and not out.flags.c_contiguous)
                or w_scale.size not in (1, m) or not (w_zero_point is None
                                                         or w_zero_point.size in (1, m))
                or y_scale.size != 1 or (y_zero_point is not None and y_zero_point.size != 1)
                or x_scale.size != 1 or any(s.dtype != np.float32
                                            for s in (x_scale, w_scale, y_scale))
                or (b is not None and (b.dtype != np.int32 or b.size != m))):
            with linear(xl, ol, hwc) as (xc, oc):
                super().compute(xc, x_scale, x_zero_point, self._onnx_w(w, group), w_scale,
                                w_zero_point, y_scale, y_zero_point, b, out=oc, group=group,
                                **kw)
            return
        if out.size == 0:
            return
        zx, zy = _scalar(x_zero_point), _scalar(y_zero_point)
        zw = np.zeros(1, np.int32) if w_zero_point is None else w_zero_point
        # onnxruntime's multiplier, in float32: x_scale * w_scale[m] / y_scale
        mult = np.ascontiguousarray(
            (x_scale.reshape(-1)[0] * w_scale.reshape(-1) / y_scale.reshape(-1)[0]
             ).astype(np.float32))
        bias = None if b is None else np.ascontiguousarray(b.reshape(-1))
        if self._depthwise(w, group) and not self.hidden.get("__qpacked__") and hwc[0] \
                and out.flags.c_contiguous:
            self._depthwise_nhwc(x, w, zx, zw, mult, bias, zy, out, ol.shape, hwc[1], key)
            return
        wq = self._grouped_w(w, group, zw) if hwc[0] and out.flags.c_contiguous else None
        if wq is not None:
            self._depthwise_nhwc(x, w, zx, zw, mult, bias, zy, out, ol.shape, hwc[1], key, wq)
            return
        if (self._depthwise(w, group) and not self.hidden.get("__qpacked__")
                and (self._exact(w, None) if b is None else self._derived(
                    b, ("exact", w.shape), lambda v: self._exact(w, v)))):
            fb = None if b is None else self._derived(
                b, "dw_bias", lambda v: v.reshape(-1).astype(np.float32))
            with linear(xl, ol, hwc) as (xc, oc):
                _requantize(self._depthwise_sums(xc, w, zx, zw, fb), mult, zy, oc)
            return
        self._gemm(x, w, zx, zw, group, out, mult=mult, bias=bias, zy=zy, key=key, hwc=hwc)

    #: the last depthwise run's (key, arguments, NHWC buffer or None, what they point to)
    _kept_dw: tuple[tuple[Any, ...], QDwConvArgs, Array | None, tuple[Any, ...]] | None = None

    def _run_dw_plan(self, x: Array, out: Array, key: tuple[Any, ...] | None) -> bool:
        """Run the kept depthwise arguments again if they were made for ``key`` (only x's
        address can differ: the rest are the same objects)."""
        plan = self._kept_dw
        if key is None or plan is None or plan[0][:2] != key[:2] or not x.flags.c_contiguous \
                or any(p is not q for p, q in zip(plan[0][2:], key[2:], strict=True)):
            return False
        _, args, y, _ = plan
        args.x = x.ctypes.data
        _check(_qdwconv, args)
        if y is not None:
            np.copyto(out, y.transpose(0, 3, 1, 2))
        return True

    def _grouped_w(self, w: Array, group: int, zw: Array) -> Array | None:
        """W - zw in the grouped direct kernel's quads (``_args.h``, mi_qdwconv_args) where
        each group has 4, 8 or 16 inputs and as many outputs, every w - zw is an int8, and the
        integer GEMM's level is AVX-512 VNNI or AMX (the kernel's); else None."""
        m, cg = int(w.shape[0]), int(w.shape[1])
        if group < 2 or cg not in (4, 8, 16) or m != group * cg \
                or qgemm_isa() not in ("avx512vnni", "amx"):
            return None

        def make(v: Array) -> Array | None:
            d = (self._onnx_w(v, group).astype(np.int16)
                 - zw.astype(np.int16).reshape(-1, 1, 1, 1))
            if d.min() < -128 or d.max() > 127:
                return None
            taps, nvec = int(d.shape[2] * d.shape[3]), -(-m // 16)
            q = np.zeros((taps, nvec * 16, cg), np.int8)
            q[:, :m] = d.transpose(2, 3, 0, 1).reshape(taps, m, cg)
            return np.ascontiguousarray(
                q.reshape(taps, nvec, 16, cg // 4, 4).transpose(0, 1, 3, 2, 4))

        return self._derived(w, ("grouped", zw.tobytes()), make)

    def _depthwise_nhwc(self, x: Array, w: Array, zx: int, zw: Array, mult: Array,
                        bias: Array | None, zy: int, out: Array, oshape: tuple[int, ...],
                        out_hwc: bool, key: tuple[Any, ...] | None = None,
                        wq: Array | None = None) -> None:
        """A depthwise convolution of NHWC x on the direct kernel (``_qdw.c``), or a grouped
        one (``wq``: :meth:`_grouped_w`), into ``out`` (NHWC, or through an NHWC buffer where
        ``out`` is NCHW); its arguments kept for the next run with the same ``key``."""
        kh, kw = int(w.shape[2]), int(w.shape[3])
        xshape = (x.shape[0], x.shape[3], x.shape[1], x.shape[2])
        win, geo, _ = self._window(xshape, tuple(w.shape))
        wt = wq if wq is not None else self._derived(
            w, ("dw16", zw.tobytes()), lambda v: np.ascontiguousarray(
                (v.astype(np.int16) - zw.astype(np.int16).reshape(-1, 1, 1, 1)
                 ).reshape(-1, kh * kw).T))
        n, c, oh, ow = (int(d) for d in oshape)
        y = out if out_hwc else np.empty((n, oh, ow, c), out.dtype)
        kn = "mi_qdwconv_i8"
        args = QDwConvArgs(
            _ptr(x, _INT8, x.size, False, kn, "x"),
            _ptr(wt, (np.int16,) if wq is None else (np.int8,), wt.size, False, kn, "w"),
            _ptr(bias, (np.int32,), c, False, kn, "bias"),
            _ptr(mult, (np.float32,), c if mult.size > 1 else 1, False, kn, "mult"),
            _ptr(y, (y.dtype,), n * oh * ow * c, True, kn, "y"),
            n, int(x.shape[1]), int(x.shape[2]), c, kh, kw, int(win.strides[0]),
            int(win.strides[1]), int(win.dilations[0]), int(win.dilations[1]),
            int(geo.begin[0]), int(geo.begin[1]), oh, ow, int(mult.size > 1), zx, zy,
            int(x.dtype == np.int8), int(y.dtype == np.int8), 0 if wq is None else int(w.shape[1]))
        _check(_qdwconv, args)
        if not out_hwc:
            np.copyto(out, y.transpose(0, 3, 1, 2))
        self._kept_dw = None if key is None else (key, args, None if out_hwc else y,
                                                   (wt, mult, bias))
        own = None
        if key is not None and out_hwc:  # a copy: the kept plan's x is set on each rerun
            own = QDwConvArgs.from_buffer_copy(args)
            own._keep = (x, out, wt, mult, bias)
        self._keep_calls(x, out, None if own is None else [(_qdwconv, (own,))])


class ConvInteger(_IntegerConv, _qlinear.ConvInteger):
    """8-bit 2-D convolutions' int32 sums on the compiled integer GEMM (see the module)."""

    hidden_fields: ClassVar[tuple[str, ...]] = (*_qlinear.ConvInteger.hidden_fields,
                                                "__qpacked__")
    package = "mini-infer-cpu-native"

    def compute(self, x: Array, w: Array, x_zero_point: Array | None = None,  # type: ignore[override]
                w_zero_point: Array | None = None, *, out: Array, group: int,
                **kw: Any) -> None:
        key = self._key(x, out, w, x_zero_point, w_zero_point)
        if self._run_plan(x, out, key):
            return
        m = w.shape[0]
        if (not self._usable(x, w, x_zero_point, group) or out.dtype != np.int32
                or not (w_zero_point is None or w_zero_point.size in (1, m))):
            super().compute(x, self._onnx_w(w, group), x_zero_point, w_zero_point, out=out,
                            group=group, **kw)
            return
        if out.size == 0:
            return
        zx = _scalar(x_zero_point)
        zw = np.zeros(1, np.int32) if w_zero_point is None else w_zero_point
        if (self._depthwise(w, group) and not self.hidden.get("__qpacked__")
                and self._exact(w, None)):
            np.copyto(out, self._depthwise_sums(x, w, zx, zw), casting="unsafe")
            return
        self._gemm(x, w, zx, zw, group, out, key=key)
