"""The compiled kernels' argument structs (``_args.h``) as ctypes Structures, the one place
they are mirrored, and the check that the library found agrees with them.

Each exported kernel takes one struct by pointer. When the library loads, :func:`load`
compares ``MI_ABI_VERSION`` (``mi_abi_version``) with :data:`ABI_VERSION`, then every
struct's size and every field's offset and size (``mi_abi_layout``) with the mirrors below,
both ways (a field on one side only is a mismatch too). A library that differs (built
from other sources, a stale build left in place) is refused with :class:`AbiError`, and
:func:`problem` says why; the entry point then marks the distribution failed, so that
cpu_basic's NumPy kernels serve, as when the extension is missing. Nothing here imports NumPy:
the entry point runs the check when plugins are listed.

Each mirror is declared by :func:`_struct` (its fields, in ``_args.h``'s order) and made into
a Structure the first time it is used (``from ._abi import GemmArgs``: PEP 562), so that a
process makes only the structs of the kernels it calls (a Structure costs about 50 us to
make; an engine of a few operators uses a handful of the 40: issue 30). The check computes
the layout ctypes gives each one from its declaration without making it.
"""

from __future__ import annotations

import ctypes
import os
import threading
import zlib
from functools import cache
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, cast

__all__ = ["ABI_VERSION", "STRUCTS", "AbiError", "BiasActArgs", "DwConv2dArgs",
           "GemmArgs", "GemmBatchArgs", "GemmPackArgs", "Im2colArgs", "LrnArgs",
           "Pool2dArgs", "ScaleShiftArgs", "WinoInArgs", "WinoOutArgs", "WinoWeightsArgs",
           "layout_mismatches", "library_file", "load", "problem"]
__all__ += ["GemmPackBArgs", "MatMulArgs"]  # MatMul and Gemm on the compiled GEMM

#: MI_ABI_VERSION of ``_args.h``: change both with any struct
ABI_VERSION = 1

_P, _L, _F, _I = ctypes.c_void_p, ctypes.c_long, ctypes.c_float, ctypes.c_int

#: a field's name and its ctypes type, or the Python name of another mirrored struct
Fields = list[tuple[str, type | str]]

#: every mirror's Python name -> (its C name, its fields)
_SPECS: dict[str, tuple[str, Fields]] = {}
_lock = threading.RLock()  # a struct made inside another's making


def _fields(kind: type | str, names: str) -> Fields:
    return [(name, kind) for name in names.split()]


def _struct(name: str, c_name: str, fields: Fields) -> None:
    """Declare the mirror ``name`` of the C struct ``c_name``."""
    _SPECS[name] = (c_name, fields)


def _make(name: str) -> type[ctypes.Structure]:
    c_name, fields = _SPECS[name]
    resolved = [(field, _named(kind) if isinstance(kind, str) else kind)
                for field, kind in fields]
    meta: Any = type(ctypes.Structure)
    made: type[ctypes.Structure] = meta(name, (ctypes.Structure,), {
        "__doc__": c_name, "__module__": __name__, "_fields_": resolved})
    return made


def _named(name: str) -> type[ctypes.Structure]:
    return cast("type[ctypes.Structure]", globals().get(name) or __getattr__(name))


def __getattr__(name: str) -> object:
    """A mirror, made on first use; ``STRUCTS``: every mirror by its C name (makes all)."""
    if name != "STRUCTS" and name not in _SPECS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _lock:
        namespace = globals()
        if name not in namespace:
            if name == "STRUCTS":
                namespace[name] = {"mi_abi_field": _AbiField, **{
                    c_name: _named(py) for py, (c_name, _) in _SPECS.items()}}
            else:
                namespace[name] = _make(name)
        return namespace[name]


class _AbiField(ctypes.Structure):
    """mi_abi_field: one row of mi_abi_layout (read before the layout is known: its own
    layout is part of MI_ABI_VERSION, and is checked with the rest)."""
    _fields_ = [("type", ctypes.c_char_p), ("field", ctypes.c_char_p), ("offset", _L),
                ("size", _L)]



class AbiError(ImportError):
    """The compiled library does not match this package's Python side."""


def library_file() -> str | None:
    """The compiled extension's file (None: not installed)."""
    spec = find_spec("mini_infer_cpu_native._kernels")
    return None if spec is None else spec.origin


def _layout(lib: ctypes.CDLL) -> dict[str, dict[str | None, tuple[int, int]]]:
    """mi_abi_layout as {struct: {field (None: the struct): (offset, size)}}."""
    fn = lib.mi_abi_layout
    fn.argtypes = []
    fn.restype = ctypes.POINTER(_AbiField)
    rows = fn()
    table: dict[str, dict[str | None, tuple[int, int]]] = {}
    i = 0
    while rows[i].type is not None:
        row = rows[i]
        assert row.type is not None
        field = None if row.field is None else row.field.decode()
        table.setdefault(row.type.decode(), {})[field] = (int(row.offset), int(row.size))
        i += 1
    return table


def _class_layout(mirror: type[ctypes.Structure]) -> dict[str | None, tuple[int, int]]:
    """A Structure's size and its fields' offsets and sizes, as ctypes laid it out."""
    found: dict[str | None, tuple[int, int]] = {None: (0, ctypes.sizeof(mirror))}
    for f in mirror._fields_:
        desc = getattr(mirror, f[0])
        found[f[0]] = (desc.offset, desc.size)
    return found


def _spec_layout(name: str) -> tuple[dict[str | None, tuple[int, int]], int]:
    """The layout ctypes gives the Structure ``name`` (fields at their natural alignment, the
    size a multiple of the widest), and its alignment, from :data:`_SPECS` without making
    it (``tests/test_native_boundary.py`` holds the two equal for every struct)."""
    offset, align = 0, 1
    found: dict[str | None, tuple[int, int]] = {}
    for field, kind in _SPECS[name][1]:
        if isinstance(kind, str):
            inner, a = _spec_layout(kind)
            size = inner[None][1]
        else:
            size, a = ctypes.sizeof(kind), ctypes.alignment(kind)
        offset = -(-offset // a) * a
        found[field] = (offset, size)
        offset += size
        align = max(align, a)
    found[None] = (0, -(-offset // align) * align)
    return found, align


def _mirrors() -> dict[str, dict[str | None, tuple[int, int]]]:
    """Every mirrored struct's layout by its C name: the Structures' where :data:`STRUCTS`
    has been made (and perhaps changed), else computed from the specs."""
    made = globals().get("STRUCTS")
    if made is not None:
        return {name: _class_layout(mirror) for name, mirror in made.items()}
    found = {c_name: _spec_layout(name)[0] for name, (c_name, _) in _SPECS.items()}
    found["mi_abi_field"] = _class_layout(_AbiField)
    return found


def layout_mismatches(lib: ctypes.CDLL,
                      structs: dict[str, type[ctypes.Structure]] | None = None) -> list[str]:
    """What differs between the library's mi_abi_layout and ``structs`` (default: every
    mirror, see :func:`_mirrors`): one line per struct or field."""
    mirrors = _mirrors() if structs is None else {
        name: _class_layout(mirror) for name, mirror in structs.items()}
    table = _layout(lib)
    found: list[str] = []
    for name in sorted(set(table) - set(mirrors)):
        found.append(f"{name}: in the library, not mirrored in _abi.py")
    for name, py_side in mirrors.items():
        c_side = table.get(name)
        if c_side is None:
            found.append(f"{name}: mirrored in _abi.py, not in the library")
            continue
        size = py_side[None][1]
        if c_side.get(None, (0, -1))[1] != size:
            found.append(f"{name}: {c_side.get(None, (0, -1))[1]} bytes in the library, "
                         f"{size} in _abi.py")
        py_fields = {k: v for k, v in py_side.items() if k is not None}
        for field in [f for f in c_side if f is not None and f not in py_fields]:
            found.append(f"{name}.{field}: in the library, not in _abi.py")
        for field, (offset, fsize) in py_fields.items():
            if field not in c_side:
                found.append(f"{name}.{field}: in _abi.py, not in the library")
            elif c_side[field] != (offset, fsize):
                found.append(f"{name}.{field}: offset {c_side[field][0]} size "
                             f"{c_side[field][1]} in the library, offset {offset} "
                             f"size {fsize} in _abi.py")
    return found


def _reinstall(path: str) -> str:
    return (f"{path} was not built from this mini-infer-cpu-native's sources; reinstall "
            "mini-infer-cpu-native (pip install --force-reinstall --no-deps), or remove the "
            "stale build")


@cache
def load() -> ctypes.CDLL:
    """The compiled library, checked against :data:`ABI_VERSION` and the mirrors
    (:class:`AbiError` where it differs or is missing)."""
    path = library_file()
    if path is None:
        raise AbiError("the compiled extension mini_infer_cpu_native._kernels is missing")
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        raise AbiError(f"cannot load {path}: {exc}") from exc
    try:
        version = lib.mi_abi_version
    except AttributeError:
        raise AbiError(f"{path} has no mi_abi_version (older than ABI version "
                       f"{ABI_VERSION}): {_reinstall(path)}") from None
    version.argtypes = []
    version.restype = ctypes.c_int
    if version() != ABI_VERSION:
        raise AbiError(f"{path} has ABI version {version()}, this package's Python side "
                       f"expects {ABI_VERSION}: {_reinstall(path)}")
    verdict = None if "STRUCTS" in globals() else _verdict_file(path)
    if verdict is not None and os.path.exists(verdict):
        return lib  # this very library passed against these very mirrors before
    mismatches = layout_mismatches(lib)
    if mismatches:
        raise AbiError(f"{path}: the argument structs differ from their mirrors in _abi.py "
                       f"({'; '.join(mismatches)}): {_reinstall(path)}")
    if verdict is not None:
        try:
            os.makedirs(os.path.dirname(verdict), exist_ok=True)
            with open(verdict, "x"):
                pass
        except OSError:
            pass  # no cache (read-only, or written by another process meanwhile): checked
    return lib


def _verdict_file(library: str) -> str | None:
    """Where a passed layout check of ``library`` against this module's mirrors is recorded
    (None: the cache is off, ``MINI_INFER_DISCOVERY_CACHE=0``, as for discovery).

    The check reads ~530 rows of ``mi_abi_layout`` through ctypes and lays out 40 structs
    (~0.9 ms, a twentieth of a small engine's load: issue 30). Its answer depends only on
    the library's file and this module's, so a process whose library and ``_abi.py`` have
    the size and modification time of ones that passed (and the same ``ABI_VERSION``, which
    is still checked) skips it. A rebuilt or reinstalled library, or an edited ``_abi.py``,
    is checked again; a process that changed :data:`STRUCTS` always is."""
    if os.environ.get("MINI_INFER_DISCOVERY_CACHE", "").strip().lower() in {"0", "false", "no",
                                                                            "off"}:
        return None
    try:
        ours, theirs = os.stat(__file__), os.stat(library)
    except OSError:
        return None
    key = zlib.crc32(f"{ABI_VERSION}\0{library}\0{theirs.st_size}\0{theirs.st_mtime_ns}\0"
                     f"{__file__}\0{ours.st_size}\0{ours.st_mtime_ns}".encode())
    folder = os.environ.get("MINI_INFER_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "mini-infer")
    return os.path.join(folder, f"abi-checked-{key:08x}")


@cache
def problem() -> str | None:
    """Why the compiled library cannot be used here (None: it can), checked once."""
    try:
        load()
    except AbiError as exc:
        return str(exc)
    return None


_struct("DwConv2dArgs", "mi_dwconv2d_args",
        (_fields(_P, "x w bias res y work")
         + _fields(_L, "n c h wd kh kw sh sw dh dw pt pl oh ow hp wp")
         + _fields(_F, "lo hi")))


_struct("Pool2dArgs", "mi_pool2d_args",
        (_fields(_P, "x y work")
         + _fields(_L, "planes h wd kh kw sh sw dh dw pt pl pb pr oh ow")
         + _fields(_I, "avg include_pad")))


_struct("BiasActArgs", "mi_bias_act_args",
        (_fields(_P, "y bias res") + _fields(_L, "rows cols ldy period ldr")
         + _fields(_F, "lo hi")))


_struct("Im2colArgs", "mi_im2col_args",
        (_fields(_P, "x cols")
         + _fields(_L, "n c h wd kh kw sh sw dh dw pt pl oy0 oy1 ow")))


_struct("ScaleShiftArgs", "mi_scale_shift_args",
        _fields(_P, "x a b y") + _fields(_L, "n c plane") + _fields(_F, "lo hi"))


_struct("LrnArgs", "mi_lrn_args",
        (_fields(_P, "x y acc") + _fields(_L, "n c plane size")
         + _fields(_F, "alpha beta bias")))


_struct("WinoInArgs", "mi_wino_in_args",
        (_fields(_P, "x v rows") + _fields(_L, "c h wd pt pl tw ty0 ty1")
         + _fields(_I, "tile")))


_struct("WinoOutArgs", "mi_wino_out_args",
        (_fields(_P, "mm y bias res rows") + _fields(_L, "m oh ow tw ty0 ty1")
         + _fields(_F, "lo hi") + _fields(_I, "tile act")
         + _fields(_F, "act_alpha act_beta")))


_struct("WinoWeightsArgs", "mi_wino_weights_args",
        _fields(_P, "w u") + _fields(_L, "m c") + _fields(_I, "tile"))


_struct("GemmPackArgs", "mi_gemm_pack_args",
        _fields(_P, "a out") + _fields(_L, "m k lda"))


_struct("GemmArgs", "mi_gemm_args",
        (_fields(_P, "a b c bias res") + _fields(_L, "m n k ldb ldc ldr")
         + _fields(_F, "lo hi") + _fields(_I, "act") + _fields(_F, "act_alpha act_beta")))


_struct("GemmBatchArgs", "mi_gemm_batch_args",
        (_fields(_P, "a b c")
         + _fields(_L, "count a_stride b_stride c_stride ldb ldc m n k")))


# ---- MatMul and Gemm on the compiled GEMM ----

_struct("GemmPackBArgs", "mi_gemm_pack_b_args",
        _fields(_P, "b out") + _fields(_L, "k n rs cs"))


_struct("MatMulArgs", "mi_matmul_args",
        (_fields(_P, "a b c bias cbias res")
         + _fields(_L, "m n k a_rs a_ks ldb ldc ldr")
         + _fields(_L, "batch0 batch1 a_s0 a_s1 b_s0 b_s1 c_s0 c_s1 r_s0 r_s1")
         + _fields(_I, "a_packed b_packed") + _fields(_F, "alpha lo hi")))


# ---- activations, Softmax, LayerNormalization (_act.c) ----------------------------------

_struct("ActArgs", "mi_act_args",
        (_fields(_P, "x y") + _fields(_L, "n") + _fields(_F, "alpha beta")
         + _fields(_I, "op")))


_struct("SoftmaxArgs", "mi_softmax_args",
        _fields(_P, "x y") + _fields(_L, "outer n inner") + _fields(_I, "log"))


_struct("LayerNormArgs", "mi_layer_norm_args",
        (_fields(_P, "x scale bias y mean inv_std") + _fields(_L, "rows n")
         + _fields(_F, "epsilon")))


__all__ += ["ActArgs", "LayerNormArgs", "SoftmaxArgs"]


# ---- Resize of the last two axes (_resize.c) ---------------------------------------------

_struct("Resize2dArgs", "mi_resize2d_args",
        _fields(_P, "x y iy wy ix wx work") + _fields(_L, "planes h wd oh ow"))


__all__ += ["Resize2dArgs"]


# ---- direct convolution of narrow groups (_dconv.c) --------------------------------------

_struct("DConv2dArgs", "mi_dconv2d_args",
        (_fields(_P, "x w bias res y work")
         + _fields(_L, "n c h wd m group kh kw sh sw dh dw pt pl oh ow")
         + _fields(_F, "lo hi") + _fields(_I, "act") + _fields(_F, "act_alpha act_beta")))


__all__ += ["DConv2dArgs"]


# ---- products of a few rows, squeeze-and-excitation (_vec.c) -----------------------------

_struct("GemvArgs", "mi_gemv_args",
        (_fields(_P, "a b c bias cbias res")
         + _fields(_L, "m n k a_rs a_ks ldb ldc ldr panel") + _fields(_F, "alpha lo hi")))


_struct("RowsArgs", "mi_rows_args",
        _fields(_P, "x s y") + _fields(_L, "rows cols"))


_struct("PlanesArgs", "mi_planes_args",  # (_planes.c)
        _fields(_P, "src dst")
        + _fields(_L, "d0 d1 d2 d3 s0 s1 s2 s3 pad frames plane src_planes"))


__all__ += ["GemvArgs", "PlanesArgs", "RowsArgs"]

# ---- ConvTranspose whose kernel is its stride (_kernels.c) -------------------------------

_struct("Taps2dArgs", "mi_taps2d_args",
        _fields(_P, "taps y") + _fields(_L, "planes kh kw h wd"))


__all__ += ["Taps2dArgs"]


# ---- integer GEMM and DynamicQuantizeLinear (_qgemm.c) -----------------------------------

_struct("QPackBArgs", "mi_qpack_b_args",
        _fields(_P, "b out") + _fields(_L, "k n rs cs") + _fields(_I, "flip"))


_struct("QColsumArgs", "mi_qcolsum_args",
        _fields(_P, "bp colsum") + _fields(_L, "k n"))


_struct("QGemmArgs", "mi_qgemm_args",
        (_fields(_P, "a bp colsum c zb mult bias")
         + _fields(_L, "m n k lda ldc zb_step mult_step")
         + _fields(_I, "a_signed za out zy") + _fields(_F, "lo hi")))


_struct("DqlArgs", "mi_dql_args",
        _fields(_P, "x y scale zp") + _fields(_L, "n"))


__all__ += ["DqlArgs", "QColsumArgs", "QGemmArgs", "QPackBArgs"]


_struct("QRequantArgs", "mi_qrequant_args",  # (_qconv.c)
        (_fields(_P, "x y mult") + _fields(_L, "n c hw mult_step")
         + _fields(_I, "y_signed zy")))


__all__ += ["QRequantArgs"]


# recurrent layers (_rnn.c)
_struct("RnnArgs", "mi_rnn_args",
        (_fields(_P, "x w r bias rbh peep lens h0 c0 y yh yc work")
         + _fields(_L, "t b i h x_ts x_bs y_ts y_bs st_bs panel")
         + _fields(_I, "kind reverse linear_before_reset input_forget relu")
         + _fields(_F, "clip")))


__all__ += ["RnnArgs"]


_struct("QConvArgs", "mi_qconv_args",  # (_qgemm.c)
        (_fields("QGemmArgs", "gemm") + _fields(_P, "x")
         + _fields(_L, "n h w c c0 cg kh kw sh sw dh dw ph pw oh ow")))


__all__ += ["QConvArgs"]


_struct("QBinaryArgs", "mi_qbinary_args",  # (_qelt.c)
        (_fields(_P, "a b y") + _fields(_L, "outer inner b_step b_outer_step")
         + _fields(_F, "ra rb fixed") + _fields(_I, "za zb zy op is_signed")))


__all__ += ["QBinaryArgs"]


_struct("QDwConvArgs", "mi_qdwconv_args",  # (_qdw.c)
        (_fields(_P, "x wt bias mult y")
         + _fields(_L, "n h w c kh kw sh sw dh dw ph pw oh ow mult_step")
         + _fields(_I, "zx zy x_signed y_signed") + _fields(_L, "cg")))


__all__ += ["QDwConvArgs"]


_struct("QLookupArgs", "mi_qlookup_args",  # (_qelt.c)
        _fields(_P, "x table y") + _fields(_L, "n"))


__all__ += ["QLookupArgs"]


_struct("QChLookupArgs", "mi_qchlookup_args",  # (_qelt.c)
        _fields(_P, "x table y") + _fields(_L, "outer c inner"))


__all__ += ["QChLookupArgs"]


_struct("QMaxPoolArgs", "mi_qmaxpool_args",  # (_qelt.c)
        _fields(_P, "x y") + _fields(_L, "n h w c kh kw sh sw dh dw pt pl oh ow") +
    _fields(_I, "is_signed"))


__all__ += ["QMaxPoolArgs"]


_struct("QGapArgs", "mi_qgap_args",  # (_qgap.c)
        (_fields(_P, "x y") + _fields(_L, "n hw c") + _fields(_F, "mult")
         + _fields(_I, "zx zy is_signed")))


__all__ += ["QGapArgs"]


_struct("QQuantArgs", "mi_qquant_args",  # (_qquant.c)
        (_fields(_P, "x y") + _fields(_L, "n c hw") + _fields(_F, "scale")
         + _fields(_I, "zp is_signed hwc") + _fields(_P, "scales zps")))


__all__ += ["QQuantArgs"]


_struct("QDequantArgs", "mi_qdequant_args",  # (_qquant.c)
        (_fields(_P, "x y") + _fields(_L, "n c hw") + _fields(_P, "scales zps")
         + _fields(_I, "is_signed")))


__all__ += ["QDequantArgs"]
# ---- MatMulNBits, 4-bit weights (_qnbits.c) ------------------------------------------------

_struct("NBitsPackArgs", "mi_nbits_pack_args",
        _fields(_P, "b out") + _fields(_L, "n kb block"))


_struct("NBitsArgs", "mi_nbits_args",
        (_fields(_P, "a bp blast scales zp bias c")
         + _fields(_L, "m n k kb block lda ldc") + _fields(_I, "int8")))


__all__ += ["NBitsArgs", "NBitsPackArgs"]


if TYPE_CHECKING:  # made by __getattr__ (their fields: ctypes.Structure's __getattr__)
    STRUCTS: dict[str, type[ctypes.Structure]]
    class DwConv2dArgs(ctypes.Structure): ...
    class Pool2dArgs(ctypes.Structure): ...
    class BiasActArgs(ctypes.Structure): ...
    class Im2colArgs(ctypes.Structure): ...
    class ScaleShiftArgs(ctypes.Structure): ...
    class LrnArgs(ctypes.Structure): ...
    class WinoInArgs(ctypes.Structure): ...
    class WinoOutArgs(ctypes.Structure): ...
    class WinoWeightsArgs(ctypes.Structure): ...
    class GemmPackArgs(ctypes.Structure): ...
    class GemmArgs(ctypes.Structure): ...
    class GemmBatchArgs(ctypes.Structure): ...
    class GemmPackBArgs(ctypes.Structure): ...
    class MatMulArgs(ctypes.Structure): ...
    class ActArgs(ctypes.Structure): ...
    class SoftmaxArgs(ctypes.Structure): ...
    class LayerNormArgs(ctypes.Structure): ...
    class Resize2dArgs(ctypes.Structure): ...
    class DConv2dArgs(ctypes.Structure): ...
    class GemvArgs(ctypes.Structure): ...
    class RowsArgs(ctypes.Structure): ...
    class Taps2dArgs(ctypes.Structure): ...
    class QPackBArgs(ctypes.Structure): ...
    class QColsumArgs(ctypes.Structure): ...
    class QGemmArgs(ctypes.Structure): ...
    class DqlArgs(ctypes.Structure): ...
    class QRequantArgs(ctypes.Structure): ...
    class RnnArgs(ctypes.Structure): ...
    class QConvArgs(ctypes.Structure): ...
    class QBinaryArgs(ctypes.Structure): ...
    class PlanesArgs(ctypes.Structure): ...
    class QDwConvArgs(ctypes.Structure): ...
    class QLookupArgs(ctypes.Structure): ...
    class QChLookupArgs(ctypes.Structure): ...
    class QMaxPoolArgs(ctypes.Structure): ...
    class QGapArgs(ctypes.Structure): ...
    class QQuantArgs(ctypes.Structure): ...
    class QDequantArgs(ctypes.Structure): ...
    class NBitsPackArgs(ctypes.Structure): ...
    class NBitsArgs(ctypes.Structure): ...
