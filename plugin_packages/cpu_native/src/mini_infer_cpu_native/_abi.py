"""The compiled kernels' argument structs (``_args.h``) as ctypes Structures, the one place
they are mirrored, and the check that the library found agrees with them.

Each exported kernel takes one struct by pointer. When the library loads, :func:`load`
compares ``MI_ABI_VERSION`` (``mi_abi_version``) with :data:`ABI_VERSION`, then every
struct's size and every field's offset and size (``mi_abi_layout``) with the Structures
below, both ways (a field on one side only is a mismatch too). A library that differs (built
from other sources, a stale build left in place) is refused with :class:`AbiError`, and
:func:`problem` says why; the entry point then marks the distribution failed, so that
cpu_basic's NumPy kernels serve, as when the extension is missing. Nothing here imports NumPy:
the entry point runs the check when plugins are listed.
"""

from __future__ import annotations

import ctypes
from functools import cache
from importlib.util import find_spec

__all__ = ["ABI_VERSION", "STRUCTS", "AbiError", "BiasActArgs", "DwConv2dArgs",
           "GemmArgs", "GemmBatchArgs", "GemmPackArgs", "Im2colArgs", "LrnArgs",
           "Pool2dArgs", "ScaleShiftArgs", "WinoInArgs", "WinoOutArgs", "WinoWeightsArgs",
           "layout_mismatches", "library_file", "load", "problem"]
__all__ += ["GemmPackBArgs", "MatMulArgs"]  # MatMul and Gemm on the compiled GEMM

#: MI_ABI_VERSION of ``_args.h``: change both with any struct
ABI_VERSION = 1

_P, _L, _F, _I = ctypes.c_void_p, ctypes.c_long, ctypes.c_float, ctypes.c_int


def _fields(kind: type, names: str) -> list[tuple[str, type]]:
    return [(name, kind) for name in names.split()]


class DwConv2dArgs(ctypes.Structure):
    """mi_dwconv2d_args"""
    _fields_ = (_fields(_P, "x w bias res y work")
                + _fields(_L, "n c h wd kh kw sh sw dh dw pt pl oh ow hp wp")
                + _fields(_F, "lo hi"))


class Pool2dArgs(ctypes.Structure):
    """mi_pool2d_args"""
    _fields_ = (_fields(_P, "x y work")
                + _fields(_L, "planes h wd kh kw sh sw dh dw pt pl pb pr oh ow")
                + _fields(_I, "avg include_pad"))


class BiasActArgs(ctypes.Structure):
    """mi_bias_act_args"""
    _fields_ = (_fields(_P, "y bias res") + _fields(_L, "rows cols ldy period ldr")
                + _fields(_F, "lo hi"))


class Im2colArgs(ctypes.Structure):
    """mi_im2col_args"""
    _fields_ = (_fields(_P, "x cols")
                + _fields(_L, "n c h wd kh kw sh sw dh dw pt pl oy0 oy1 ow"))


class ScaleShiftArgs(ctypes.Structure):
    """mi_scale_shift_args"""
    _fields_ = _fields(_P, "x a b y") + _fields(_L, "n c plane") + _fields(_F, "lo hi")


class LrnArgs(ctypes.Structure):
    """mi_lrn_args"""
    _fields_ = (_fields(_P, "x y acc") + _fields(_L, "n c plane size")
                + _fields(_F, "alpha beta bias"))


class WinoInArgs(ctypes.Structure):
    """mi_wino_in_args"""
    _fields_ = (_fields(_P, "x v rows") + _fields(_L, "c h wd pt pl tw ty0 ty1")
                + _fields(_I, "tile"))


class WinoOutArgs(ctypes.Structure):
    """mi_wino_out_args"""
    _fields_ = (_fields(_P, "mm y bias res rows") + _fields(_L, "m oh ow tw ty0 ty1")
                + _fields(_F, "lo hi") + _fields(_I, "tile act")
                + _fields(_F, "act_alpha act_beta"))


class WinoWeightsArgs(ctypes.Structure):
    """mi_wino_weights_args"""
    _fields_ = _fields(_P, "w u") + _fields(_L, "m c") + _fields(_I, "tile")


class GemmPackArgs(ctypes.Structure):
    """mi_gemm_pack_args"""
    _fields_ = _fields(_P, "a out") + _fields(_L, "m k lda")


class GemmArgs(ctypes.Structure):
    """mi_gemm_args"""
    _fields_ = (_fields(_P, "a b c bias res") + _fields(_L, "m n k ldb ldc ldr")
                + _fields(_F, "lo hi") + _fields(_I, "act") + _fields(_F, "act_alpha act_beta"))


class GemmBatchArgs(ctypes.Structure):
    """mi_gemm_batch_args"""
    _fields_ = (_fields(_P, "a b c")
                + _fields(_L, "count a_stride b_stride c_stride ldb ldc m n k"))


# ---- MatMul and Gemm on the compiled GEMM ----

class GemmPackBArgs(ctypes.Structure):
    """mi_gemm_pack_b_args"""
    _fields_ = _fields(_P, "b out") + _fields(_L, "k n rs cs")


class MatMulArgs(ctypes.Structure):
    """mi_matmul_args"""
    _fields_ = (_fields(_P, "a b c bias cbias res")
                + _fields(_L, "m n k a_rs a_ks ldb ldc ldr")
                + _fields(_L, "batch0 batch1 a_s0 a_s1 b_s0 b_s1 c_s0 c_s1 r_s0 r_s1")
                + _fields(_I, "a_packed b_packed") + _fields(_F, "alpha lo hi"))


class _AbiField(ctypes.Structure):
    """mi_abi_field: one row of mi_abi_layout (read before the layout is known: its own
    layout is part of MI_ABI_VERSION, and is checked with the rest)."""
    _fields_ = [("type", ctypes.c_char_p), ("field", ctypes.c_char_p), ("offset", _L),
                ("size", _L)]


#: every mirrored struct by its C name
STRUCTS: dict[str, type[ctypes.Structure]] = {
    "mi_dwconv2d_args": DwConv2dArgs, "mi_pool2d_args": Pool2dArgs,
    "mi_bias_act_args": BiasActArgs, "mi_im2col_args": Im2colArgs,
    "mi_scale_shift_args": ScaleShiftArgs, "mi_lrn_args": LrnArgs,
    "mi_wino_in_args": WinoInArgs, "mi_wino_out_args": WinoOutArgs,
    "mi_wino_weights_args": WinoWeightsArgs, "mi_gemm_pack_args": GemmPackArgs,
    "mi_gemm_args": GemmArgs, "mi_gemm_batch_args": GemmBatchArgs,
    "mi_abi_field": _AbiField,
    # MatMul and Gemm on the compiled GEMM
    "mi_gemm_pack_b_args": GemmPackBArgs, "mi_matmul_args": MatMulArgs}


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


def layout_mismatches(lib: ctypes.CDLL,
                      structs: dict[str, type[ctypes.Structure]] | None = None) -> list[str]:
    """What differs between the library's mi_abi_layout and ``structs`` (default
    :data:`STRUCTS`): one line per struct or field."""
    structs = STRUCTS if structs is None else structs
    table = _layout(lib)
    found: list[str] = []
    for name in sorted(set(table) - set(structs)):
        found.append(f"{name}: in the library, not mirrored in _abi.py")
    for name, mirror in structs.items():
        c_side = table.get(name)
        if c_side is None:
            found.append(f"{name}: mirrored in _abi.py, not in the library")
            continue
        size = ctypes.sizeof(mirror)
        if c_side.get(None, (0, -1))[1] != size:
            found.append(f"{name}: {c_side.get(None, (0, -1))[1]} bytes in the library, "
                         f"{size} in _abi.py")
        py_fields = {f[0]: getattr(mirror, f[0]) for f in mirror._fields_}
        for field in [f for f in c_side if f is not None and f not in py_fields]:
            found.append(f"{name}.{field}: in the library, not in _abi.py")
        for field, desc in py_fields.items():
            if field not in c_side:
                found.append(f"{name}.{field}: in _abi.py, not in the library")
            elif c_side[field] != (desc.offset, desc.size):
                found.append(f"{name}.{field}: offset {c_side[field][0]} size "
                             f"{c_side[field][1]} in the library, offset {desc.offset} "
                             f"size {desc.size} in _abi.py")
    return found


def _reinstall(path: str) -> str:
    return (f"{path} was not built from this mini-infer-cpu-native's sources; reinstall "
            "mini-infer-cpu-native (pip install --force-reinstall --no-deps), or remove the "
            "stale build")


@cache
def load() -> ctypes.CDLL:
    """The compiled library, checked against :data:`ABI_VERSION` and :data:`STRUCTS`
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
    mismatches = layout_mismatches(lib)
    if mismatches:
        raise AbiError(f"{path}: the argument structs differ from their mirrors in _abi.py "
                       f"({'; '.join(mismatches)}): {_reinstall(path)}")
    return lib


@cache
def problem() -> str | None:
    """Why the compiled library cannot be used here (None: it can), checked once."""
    try:
        load()
    except AbiError as exc:
        return str(exc)
    return None


# ---- activations, Softmax, LayerNormalization (_act.c) ----------------------------------

class ActArgs(ctypes.Structure):
    """mi_act_args"""
    _fields_ = (_fields(_P, "x y") + _fields(_L, "n") + _fields(_F, "alpha beta")
                + _fields(_I, "op"))


class SoftmaxArgs(ctypes.Structure):
    """mi_softmax_args"""
    _fields_ = _fields(_P, "x y") + _fields(_L, "outer n inner") + _fields(_I, "log")


class LayerNormArgs(ctypes.Structure):
    """mi_layer_norm_args"""
    _fields_ = (_fields(_P, "x scale bias y mean inv_std") + _fields(_L, "rows n")
                + _fields(_F, "epsilon"))


STRUCTS.update({"mi_act_args": ActArgs, "mi_softmax_args": SoftmaxArgs,
                "mi_layer_norm_args": LayerNormArgs})
__all__ += ["ActArgs", "LayerNormArgs", "SoftmaxArgs"]


# ---- Resize of the last two axes (_resize.c) ---------------------------------------------

class Resize2dArgs(ctypes.Structure):
    """mi_resize2d_args"""
    _fields_ = _fields(_P, "x y iy wy ix wx work") + _fields(_L, "planes h wd oh ow")


STRUCTS["mi_resize2d_args"] = Resize2dArgs
__all__ += ["Resize2dArgs"]


# ---- direct convolution of narrow groups (_dconv.c) --------------------------------------

class DConv2dArgs(ctypes.Structure):
    """mi_dconv2d_args"""
    _fields_ = (_fields(_P, "x w bias res y work")
                + _fields(_L, "n c h wd m group kh kw sh sw dh dw pt pl oh ow")
                + _fields(_F, "lo hi") + _fields(_I, "act") + _fields(_F, "act_alpha act_beta"))


STRUCTS["mi_dconv2d_args"] = DConv2dArgs
__all__ += ["DConv2dArgs"]


# ---- products of a few rows, squeeze-and-excitation (_vec.c) -----------------------------

class GemvArgs(ctypes.Structure):
    """mi_gemv_args"""
    _fields_ = (_fields(_P, "a b c bias cbias res")
                + _fields(_L, "m n k a_rs a_ks ldb ldc ldr panel") + _fields(_F, "alpha lo hi"))


class RowsArgs(ctypes.Structure):
    """mi_rows_args"""
    _fields_ = _fields(_P, "x s y") + _fields(_L, "rows cols")


STRUCTS.update({"mi_gemv_args": GemvArgs, "mi_rows_args": RowsArgs})
__all__ += ["GemvArgs", "RowsArgs"]

# ---- ConvTranspose whose kernel is its stride (_kernels.c) -------------------------------

class Taps2dArgs(ctypes.Structure):
    """mi_taps2d_args"""
    _fields_ = _fields(_P, "taps y") + _fields(_L, "planes kh kw h wd")


STRUCTS["mi_taps2d_args"] = Taps2dArgs
__all__ += ["Taps2dArgs"]


# ---- integer GEMM and DynamicQuantizeLinear (_qgemm.c) -----------------------------------

class QPackBArgs(ctypes.Structure):
    """mi_qpack_b_args"""
    _fields_ = _fields(_P, "b out") + _fields(_L, "k n rs cs") + _fields(_I, "flip")


class QColsumArgs(ctypes.Structure):
    """mi_qcolsum_args"""
    _fields_ = _fields(_P, "bp colsum") + _fields(_L, "k n")


class QGemmArgs(ctypes.Structure):
    """mi_qgemm_args"""
    _fields_ = (_fields(_P, "a bp colsum c zb mult bias")
                + _fields(_L, "m n k lda ldc zb_step mult_step")
                + _fields(_I, "a_signed za out zy") + _fields(_F, "lo hi"))


class DqlArgs(ctypes.Structure):
    """mi_dql_args"""
    _fields_ = _fields(_P, "x y scale zp") + _fields(_L, "n")


STRUCTS.update({"mi_qpack_b_args": QPackBArgs, "mi_qcolsum_args": QColsumArgs,
                "mi_qgemm_args": QGemmArgs, "mi_dql_args": DqlArgs})
__all__ += ["DqlArgs", "QColsumArgs", "QGemmArgs", "QPackBArgs"]


class QRequantArgs(ctypes.Structure):
    """mi_qrequant_args (_qconv.c)"""
    _fields_ = (_fields(_P, "x y mult") + _fields(_L, "n c hw mult_step")
                + _fields(_I, "y_signed zy"))


STRUCTS["mi_qrequant_args"] = QRequantArgs
__all__ += ["QRequantArgs"]


# recurrent layers (_rnn.c)
class RnnArgs(ctypes.Structure):
    """mi_rnn_args"""
    _fields_ = (_fields(_P, "x w r bias rbh peep lens h0 c0 y yh yc work")
                + _fields(_L, "t b i h x_ts x_bs y_ts y_bs st_bs panel")
                + _fields(_I, "kind reverse linear_before_reset input_forget relu")
                + _fields(_F, "clip"))


STRUCTS["mi_rnn_args"] = RnnArgs
__all__ += ["RnnArgs"]
class QConvArgs(ctypes.Structure):
    """mi_qconv_args (_qgemm.c)"""
    _fields_ = ([("gemm", QGemmArgs), ("x", _P)]
                + _fields(_L, "n h w c c0 cg kh kw sh sw dh dw ph pw oh ow"))


STRUCTS["mi_qconv_args"] = QConvArgs
__all__ += ["QConvArgs"]


class QBinaryArgs(ctypes.Structure):
    """mi_qbinary_args (_qelt.c)"""
    _fields_ = (_fields(_P, "a b y") + _fields(_L, "outer inner b_step b_outer_step")
                + _fields(_F, "ra rb") + _fields(_I, "za zb zy op is_signed"))


STRUCTS["mi_qbinary_args"] = QBinaryArgs
__all__ += ["QBinaryArgs"]


class QDwConvArgs(ctypes.Structure):
    """mi_qdwconv_args (_qdw.c)"""
    _fields_ = (_fields(_P, "x wt bias mult y")
                + _fields(_L, "n h w c kh kw sh sw dh dw ph pw oh ow mult_step")
                + _fields(_I, "zx zy x_signed y_signed") + _fields(_L, "cg"))


STRUCTS["mi_qdwconv_args"] = QDwConvArgs
__all__ += ["QDwConvArgs"]


class QLookupArgs(ctypes.Structure):
    """mi_qlookup_args (_qelt.c)"""
    _fields_ = _fields(_P, "x table y") + _fields(_L, "n")


STRUCTS["mi_qlookup_args"] = QLookupArgs
__all__ += ["QLookupArgs"]


class QChLookupArgs(ctypes.Structure):
    """mi_qchlookup_args (_qelt.c)"""
    _fields_ = _fields(_P, "x table y") + _fields(_L, "outer c inner")


STRUCTS["mi_qchlookup_args"] = QChLookupArgs
__all__ += ["QChLookupArgs"]


class QMaxPoolArgs(ctypes.Structure):
    """mi_qmaxpool_args (_qelt.c)"""
    _fields_ = _fields(_P, "x y") + _fields(_L, "n h w c kh kw sh sw dh dw pt pl oh ow") + \
        _fields(_I, "is_signed")


STRUCTS["mi_qmaxpool_args"] = QMaxPoolArgs
__all__ += ["QMaxPoolArgs"]


class QGapArgs(ctypes.Structure):
    """mi_qgap_args (_qgap.c)"""
    _fields_ = (_fields(_P, "x y") + _fields(_L, "n hw c") + _fields(_F, "mult")
                + _fields(_I, "zx zy is_signed"))


STRUCTS["mi_qgap_args"] = QGapArgs
__all__ += ["QGapArgs"]


class QQuantArgs(ctypes.Structure):
    """mi_qquant_args (_qquant.c)"""
    _fields_ = (_fields(_P, "x y") + _fields(_L, "n c hw") + _fields(_F, "scale")
                + _fields(_I, "zp is_signed hwc") + _fields(_P, "scales zps"))


STRUCTS["mi_qquant_args"] = QQuantArgs
__all__ += ["QQuantArgs"]


class QDequantArgs(ctypes.Structure):
    """mi_qdequant_args (_qquant.c)"""
    _fields_ = (_fields(_P, "x y") + _fields(_L, "n c hw") + _fields(_P, "scales zps")
                + _fields(_I, "is_signed"))


STRUCTS["mi_qdequant_args"] = QDequantArgs
__all__ += ["QDequantArgs"]
# ---- MatMulNBits, 4-bit weights (_qnbits.c) ------------------------------------------------

class NBitsPackArgs(ctypes.Structure):
    """mi_nbits_pack_args"""
    _fields_ = _fields(_P, "b out") + _fields(_L, "n kb block")


class NBitsArgs(ctypes.Structure):
    """mi_nbits_args"""
    _fields_ = (_fields(_P, "a bp blast scales zp bias c")
                + _fields(_L, "m n k kb block lda ldc") + _fields(_I, "int8"))


STRUCTS.update({"mi_nbits_pack_args": NBitsPackArgs, "mi_nbits_args": NBitsArgs})
__all__ += ["NBitsArgs", "NBitsPackArgs"]
