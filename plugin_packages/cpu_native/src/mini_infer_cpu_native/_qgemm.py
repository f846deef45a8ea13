"""Calls of ``_qgemm.c``: the integer GEMM (u8/s8 x s8/u8, int32 sums, with its epilogues),
the packing of its B and DynamicQuantizeLinear.

The wrappers check every array before the call, as :mod:`._native`'s do (dtype, C order,
alignment, writability, size against what the kernel touches), with NumPy's attributes: the
module's ``address`` checks float32 only. A refusal is a ``TypeError`` or ``ValueError``
naming the kernel and the argument.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

from ._abi import DqlArgs, QColsumArgs, QConvArgs, QGemmArgs, QPackBArgs
from ._native import _kernel, _lib, _refused

__all__ = ["ISAS", "IsaChoice", "OUT_FLOAT", "OUT_INT32", "OUT_S8", "OUT_U8", "PANEL", "dql",
           "dql_args",
           "qcolsum", "qconv_args", "qgemm", "qgemm_args", "qgemm_isa", "qpack_b", "qsupported",
           "run_dql", "run_qconv", "run_qgemm", "unpack_qb", "use_qgemm_isa"]

Array = NDArray[Any]

#: the kernels by the level mi_qgemm_isa reports
ISAS = ("plain", "avx2", "avxvnni", "avx512vnni", "amx")
#: columns per panel of a packed B
PANEL = 16
#: mi_qgemm_args.out
OUT_INT32, OUT_FLOAT, OUT_U8, OUT_S8 = 0, 1, 2, 3

_pack = _kernel("mi_qpack_b_i8", QPackBArgs)
_colsum = _kernel("mi_qcolsum_i8", QColsumArgs)
_gemm = _kernel("mi_qgemm_i8", QGemmArgs)
_dql = _kernel("mi_dql_f32", DqlArgs)
_conv = _kernel("mi_qconv_i8", QConvArgs)

_INT8 = (np.dtype(np.uint8), np.dtype(np.int8))


class IsaChoice:
    """A kernel family's choice of kernels in the library (``family``: qgemm, nbits):
    ``mi_<family>_isa()``, ``mi_<family>_set_isa(level)`` and ``mi_<family>_supported(level)``,
    the levels indexing ``isas``; ``MINI_INFER_<FAMILY>_ISA`` caps the choice when the
    library loads."""

    def __init__(self, family: str, isas: tuple[str, ...]) -> None:
        self.isas = isas
        self._isa, self._set, self._supported = (
            getattr(_lib, f"mi_{family}_{what}") for what in ("isa", "set_isa", "supported"))
        for fn, argtypes in ((self._isa, []), (self._set, [ctypes.c_int]),
                             (self._supported, [ctypes.c_int])):
            fn.restype, fn.argtypes = ctypes.c_int, argtypes

    def current(self) -> str:
        """The kernels in use (one of ``isas``)."""
        return self.isas[int(self._isa())]

    def supported(self, isa: str) -> bool:
        """Whether this CPU runs the kernels of ``isa``."""
        return bool(self._supported(self.isas.index(isa)))

    def use(self, isa: str | None) -> str:
        """Tests: run the kernels of ``isa`` where the CPU has them (else, and for None,
        those detected when the library loaded); returns the kernels now in use."""
        return self.isas[int(self._set(-1 if isa is None else self.isas.index(isa)))]


_isas = IsaChoice("qgemm", ISAS)
#: the integer GEMM's kernels in use, whether this CPU runs an ISA's, tests' choice
qgemm_isa, qsupported, use_qgemm_isa = _isas.current, _isas.supported, _isas.use


def _ptr(a: Array | None, dtypes: tuple[Any, ...], count: int, writable: bool, kernel: str,
         name: str) -> int:
    """The address of a C-contiguous, aligned array of one of ``dtypes`` (native byte order)
    holding at least ``count`` elements (None: 0)."""
    if a is None:
        return 0
    if not isinstance(a, np.ndarray) or a.dtype not in [np.dtype(d) for d in dtypes]:
        got = getattr(a, "dtype", type(a).__name__)
        raise TypeError(f"{kernel}: {name} must be {' or '.join(str(np.dtype(d)) for d in dtypes)}"
                        f", not {got}")
    if not (a.flags.c_contiguous and a.flags.aligned):
        raise ValueError(f"{kernel}: {name} is not C-contiguous and aligned (strides "
                         f"{a.strides}); the kernel reads it as one block")
    if writable and not a.flags.writeable:
        raise ValueError(f"{kernel}: {name} is read-only, and the kernel writes it")
    if a.size < count:
        raise ValueError(f"{kernel}: {name} holds {a.size} elements, and the kernel touches "
                         f"{count}")
    return int(a.ctypes.data)


def _check(fn: Any, args: ctypes.Structure) -> None:
    code = fn(args)
    if code == 2:
        raise MemoryError(f"{fn.__name__}: no memory for its buffers")
    if code:
        raise _refused(fn, (ctypes.pointer(args),))


def qpack_b(b: Array) -> Array:
    """``b`` (K, N) uint8 or int8, any strides, in the kernel's panels (K * N bytes of b's
    dtype, shaped like ``b``; a uint8 B is stored as b - 128)."""
    kn = "mi_qpack_b_i8"
    if b.ndim != 2 or b.dtype not in _INT8:
        raise TypeError(f"{kn}: b must be a 2-D uint8 or int8 array, not {b.dtype} {b.shape}")
    out = np.empty(b.shape, b.dtype)
    if b.size:
        k, n = b.shape
        _check(_pack, QPackBArgs(b.ctypes.data, _ptr(out, _INT8, b.size, True, kn, "out"),
                                 k, n, b.strides[0], b.strides[1], int(b.dtype == np.uint8)))
    return out


def qcolsum(packed: Array, k: int, n: int) -> Array:
    """The int32 sum of each column of a packed B's stored (signed) values."""
    kn = "mi_qcolsum_i8"
    out = np.zeros(n, np.int32)
    if k * n:
        _check(_colsum, QColsumArgs(_ptr(packed, _INT8, k * n, False, kn, "bp"),
                                    _ptr(out, (np.int32,), n, True, kn, "colsum"), k, n))
    return out


def unpack_qb(packed: Array, k: int, n: int) -> Array:
    """:func:`qpack_b` undone (NumPy): the (K, N) matrix in ``packed``'s dtype."""
    flat = packed.reshape(-1).view(np.int8)
    out = np.empty((k, n), np.int8)
    kq, r = divmod(k, 4)
    for j0 in range(0, n, PANEL):
        w = min(PANEL, n - j0)
        panel = flat[j0 * k:(j0 + w) * k]
        out[: 4 * kq, j0:j0 + w] = panel[: 4 * kq * w].reshape(kq, w, 4).transpose(
            0, 2, 1).reshape(4 * kq, w)
        out[4 * kq:, j0:j0 + w] = panel[4 * kq * w:].reshape(r, w)
    if packed.dtype == np.uint8:
        return (out.view(np.uint8) ^ np.uint8(0x80)).reshape(k, n)
    return out


def qgemm(a: Array, packed: Array, colsum: Array, c: Array, k: int, *, a_zero: int = 0,
          b_zero: Array, mult: Array | None = None, bias: Array | None = None,
          lo: float = -np.inf, hi: float = np.inf, y_zero: int = 0) -> None:
    """:func:`qgemm_args`, run."""
    run_qgemm(qgemm_args(a, packed, colsum, c, k, a_zero=a_zero, b_zero=b_zero, mult=mult,
                         bias=bias, lo=lo, hi=hi, y_zero=y_zero))


def run_qgemm(args: QGemmArgs) -> None:
    """Run a product made by :func:`qgemm_args` (again: its arrays are kept alive by it; a
    caller may change its ``za`` between runs)."""
    _check(_gemm, args)


def qgemm_args(a: Array, packed: Array, colsum: Array, c: Array, k: int, *, a_zero: int = 0,
               b_zero: Array, mult: Array | None = None, bias: Array | None = None,
               lo: float = -np.inf, hi: float = np.inf, y_zero: int = 0) -> QGemmArgs:
    """The checked arguments of ``c (M, N) = epilogue(sum_k (a - a_zero) (b - b_zero[j]))``
    on the library's pool, to run with :func:`run_qgemm`:
    ``a`` (M, K) uint8/int8 C-contiguous; ``packed`` and ``colsum`` from :func:`qpack_b` and
    :func:`qcolsum`; ``b_zero`` int32, one or N values, as stored (uint8 B: minus 128).
    ``c``'s dtype picks the epilogue: int32 (the sums), float32 (``float(acc) * mult[j] +
    bias[j]`` clamped to [lo, hi]), uint8/int8 (``rint(float(acc) * mult[j]) + y_zero``
    clamped to [lo, hi] and the type's range; ``bias`` there is int32, added to ``acc`` first,
    as QLinearConv's B); ``mult`` float32, one or N values."""
    kn = "mi_qgemm_i8"
    if a.ndim != 2 or c.ndim != 2 or a.shape[0] != c.shape[0] or a.shape[1] != k:
        raise ValueError(f"{kn}: a {a.shape} and c {c.shape} are not (M, {k}) and (M, N)")
    m, n = c.shape
    kind = {np.dtype(np.int32): OUT_INT32, np.dtype(np.float32): OUT_FLOAT,
            np.dtype(np.uint8): OUT_U8, np.dtype(np.int8): OUT_S8}.get(c.dtype)
    if kind is None:
        raise TypeError(f"{kn}: c must be int32, float32, uint8 or int8, not {c.dtype}")
    if kind != OUT_INT32 and mult is None:
        raise ValueError(f"{kn}: a {c.dtype} output needs its scales (mult)")
    if kind in (OUT_U8, OUT_S8):
        info = np.iinfo(c.dtype)
        lo, hi = max(lo, float(info.min)), min(hi, float(info.max))
    zb_step = int(b_zero.size > 1)
    mult_step = int(mult is not None and mult.size > 1)
    args = QGemmArgs(
        _ptr(a, _INT8, m * k, False, kn, "a"), _ptr(packed, _INT8, k * n, False, kn, "bp"),
        _ptr(colsum, (np.int32,), n, False, kn, "colsum"),
        _ptr(c, (c.dtype,), m * n, True, kn, "c"),
        _ptr(b_zero, (np.int32,), n if zb_step else 1, False, kn, "zb"),
        _ptr(mult, (np.float32,), n if mult_step else 1, False, kn, "mult"),
        _ptr(bias, (np.int32,) if kind in (OUT_U8, OUT_S8) else (np.float32,), n, False, kn,
             "bias"),
        m, n, k, k, n, zb_step, mult_step, int(a.dtype == np.int8), int(a_zero), kind,
        int(y_zero), lo, hi)
    args._keep = (a, packed, colsum, c, b_zero, mult, bias)
    return args


def qconv_args(x: Array, packed: Array, colsum: Array, y: Array, k: int, *, c0: int, cg: int,
               col0: int, kernel: tuple[int, int], strides: tuple[int, int],
               dilations: tuple[int, int], begin: tuple[int, int], out: tuple[int, int],
               a_zero: int = 0, b_zero: Array, mult: Array | None = None,
               bias: Array | None = None, y_zero: int = 0) -> QConvArgs:
    """The checked arguments of one group of a convolution on the integer GEMM, to run with
    :func:`run_qconv`: ``x`` the NHWC image (N, H, W, C) uint8/int8 C-contiguous, A's rows
    its windows (channels ``c0`` to ``c0 + cg`` of each of the ``kernel`` taps, padded by
    ``begin`` with ``a_zero``: no im2col matrix); ``y`` (N * OH * OW, M) C-contiguous, this
    group's ``n = packed's columns`` outputs written from column ``col0`` (rows M apart);
    ``packed``, ``colsum``, ``b_zero``, ``mult``, ``bias`` as :func:`qgemm_args`'s for the
    group's k = kh * kw * cg rows and n columns."""
    kn = "mi_qconv_i8"
    if x.ndim != 4 or y.ndim != 2 or k != kernel[0] * kernel[1] * cg:
        raise ValueError(f"{kn}: x {x.shape} is not NHWC, y {y.shape} not 2-D, or k {k} is "
                         f"not {kernel[0]} x {kernel[1]} x {cg}")
    n_img, h, w, c = (int(d) for d in x.shape)
    rows, ldc = y.shape
    n = packed.size // k if k else 0
    if rows != n_img * out[0] * out[1] or col0 + n > ldc or c0 + cg > c:
        raise ValueError(f"{kn}: y {y.shape} does not hold {n_img} x {out} rows and columns "
                         f"[{col0}, {col0 + n}), or channels [{c0}, {c0 + cg}) exceed {c}")
    # the GEMM's own checks on an empty A and C of the group's shapes, then A and C set
    g = qgemm_args(np.empty((0, k), x.dtype), packed, colsum, np.empty((0, n), y.dtype), k,
                   a_zero=a_zero, b_zero=b_zero, mult=mult, bias=bias, y_zero=y_zero)
    g.a = 0
    g.c = _ptr(y, (y.dtype,), y.size, True, kn, "y") + col0 * y.itemsize
    g.m, g.ldc = rows, ldc
    args = QConvArgs(g, _ptr(x, _INT8, x.size, False, kn, "x"), n_img, h, w, c, c0, cg,
                     kernel[0], kernel[1], strides[0], strides[1], dilations[0], dilations[1],
                     begin[0], begin[1], out[0], out[1])
    args._keep = (x, y, g._keep)
    return args


def run_qconv(args: QConvArgs) -> None:
    """Run a product made by :func:`qconv_args` (again: its arrays are kept alive by it)."""
    _check(_conv, args)


def dql(x: Array, y: Array, scale: Array, zp: Array) -> None:
    """DynamicQuantizeLinear of float32 ``x`` into uint8 ``y`` (x's size), ``scale`` (float32)
    and ``zp`` (uint8), as onnxruntime computes them."""
    run_dql(dql_args(x, y, scale, zp))


def dql_args(x: Array, y: Array, scale: Array, zp: Array) -> DqlArgs:
    """:func:`dql`'s checked arguments, to run (again) with :func:`run_dql`."""
    kn = "mi_dql_f32"
    args = DqlArgs(_ptr(x, (np.float32,), x.size, False, kn, "x"),
                   _ptr(y, (np.uint8,), x.size, True, kn, "y"),
                   _ptr(scale, (np.float32,), 1, True, kn, "scale"),
                   _ptr(zp, (np.uint8,), 1, True, kn, "zp"), x.size)
    args._keep = (x, y, scale, zp)
    return args


def run_dql(args: DqlArgs) -> None:
    _check(_dql, args)
