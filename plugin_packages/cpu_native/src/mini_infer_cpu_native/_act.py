"""The wrappers of ``_act.c``'s kernels (elementwise activations, Softmax / LogSoftmax,
LayerNormalization), with :mod:`._native`'s conventions: each ``*_call`` checks every array
it hands over (float32 in native byte order, aligned, C-contiguous, writable where written,
large enough for what the kernel touches, an output either the input itself or apart from
it) and returns a :data:`._native.Call` to run now or again while the arrays stay the same
objects; a violation raises ``TypeError`` or ``ValueError`` naming the kernel and the
argument, and nothing is called.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

from mini_infer_core.plugin.arrays import NDArray

from ._abi import ActArgs, LayerNormArgs, SoftmaxArgs
from ._kernels import address
from ._native import Call, _call, _kernel, _lib, run_calls

__all__ = ["ACT_OPS", "act", "act_call", "act_isa", "layer_norm", "layer_norm_call",
           "set_act_isa", "softmax", "softmax_call"]

Array = NDArray[Any]

#: the elementwise functions of ``mi_act_f32`` (``MI_ACT_*`` of ``_args.h``)
ACT_OPS: dict[str, int] = {
    "erf": 0, "gelu": 1, "gelu_tanh": 2, "sigmoid": 3, "swish": 4, "hard_sigmoid": 5,
    "hard_swish": 6, "tanh": 7, "leaky_relu": 8, "exp": 9}

_act = _kernel("mi_act_f32", ActArgs)
_softmax = _kernel("mi_softmax_f32", SoftmaxArgs)
_layer_norm = _kernel("mi_layer_norm_f32", LayerNormArgs)
_lib.mi_act_isa.restype, _lib.mi_act_isa.argtypes = ctypes.c_int, []
_lib.mi_act_set_isa.restype, _lib.mi_act_set_isa.argtypes = None, [ctypes.c_int]


def _apart(kernel: str, x: int, y: int, nbytes: int) -> None:
    """An output must be its input itself (the kernels read each element before writing it)
    or not overlap it at all."""
    if x != y and x < y + nbytes and y < x + nbytes:
        raise ValueError(f"{kernel}: y overlaps x without being x itself")


def act_call(op: str, x: Array, y: Array, alpha: float = 0.0, beta: float = 0.0) -> Call:
    """``y = op(x)`` elementwise (``op`` one of :data:`ACT_OPS`; ``alpha``: Swish's and
    LeakyRelu's, ``alpha``/``beta``: HardSigmoid's); ``y`` of ``x``'s size (may be ``x``)."""
    k = "mi_act_f32"
    if op not in ACT_OPS:
        raise ValueError(f"{k}: unknown function {op!r} (known: {', '.join(ACT_OPS)})")
    n = x.size
    if y.size != n:
        raise ValueError(f"{k}: y holds {y.size} values, x {n}")
    px, py = address(x, n, False, k, "x"), address(y, n, True, k, "y")
    _apart(k, px, py, 4 * n)
    return _call(_act, ActArgs(px, py, n, alpha, beta, ACT_OPS[op]), x, y)


def act(op: str, x: Array, y: Array, alpha: float = 0.0, beta: float = 0.0) -> None:
    """:func:`act_call`, run."""
    run_calls([act_call(op, x, y, alpha, beta)])


def softmax_call(x: Array, y: Array, axis: int, log: bool) -> Call:
    """Softmax (LogSoftmax where ``log``) of ``x`` along ``axis`` (0 <= axis < ndim) into
    ``y`` of ``x``'s size (may be ``x``)."""
    k = "mi_softmax_f32"
    if not 0 <= axis < max(x.ndim, 1):
        raise ValueError(f"{k}: axis {axis} of a {x.ndim}-d x")
    shape = x.shape or (1,)
    outer, n, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
    if y.size != x.size:
        raise ValueError(f"{k}: y holds {y.size} values, x {x.size}")
    px, py = address(x, x.size, False, k, "x"), address(y, x.size, True, k, "y")
    _apart(k, px, py, 4 * x.size)
    return _call(_softmax, SoftmaxArgs(px, py, outer, n, inner, int(log)), x, y)


def softmax(x: Array, y: Array, axis: int, log: bool = False) -> None:
    """:func:`softmax_call`, run."""
    run_calls([softmax_call(x, y, axis, log)])


def layer_norm_call(x: Array, scale: Array, bias: Array | None, y: Array, rows: int,
                    epsilon: float, mean: Array | None = None,
                    inv_std: Array | None = None) -> Call:
    """``y = (x - mean) / sqrt(var + epsilon) * scale + bias`` over each of ``rows`` rows of
    ``x`` (``x.size // rows`` values each, at least 1); ``scale`` and ``bias`` (or None)
    one value per column; ``mean`` and ``inv_std`` (or None) one per row."""
    k = "mi_layer_norm_f32"
    if rows < 1 or x.size % rows or x.size == 0:
        raise ValueError(f"{k}: {x.size} values of x are not {rows} rows of at least one")
    n = x.size // rows
    if y.size != x.size:
        raise ValueError(f"{k}: y holds {y.size} values, x {x.size}")
    for name, a, want in (("scale", scale, n), ("bias", bias, n), ("mean", mean, rows),
                          ("inv_std", inv_std, rows)):
        if a is not None and a.size != want:
            raise ValueError(f"{k}: {name} holds {a.size} values, and must hold {want}")
    px, py = address(x, x.size, False, k, "x"), address(y, x.size, True, k, "y")
    _apart(k, px, py, 4 * x.size)
    return _call(_layer_norm, LayerNormArgs(
        px, address(scale, n, False, k, "scale"), address(bias, n, False, k, "bias"), py,
        address(mean, rows, True, k, "mean"), address(inv_std, rows, True, k, "inv_std"),
        rows, n, epsilon), x, scale, bias, y, mean, inv_std)


def layer_norm(x: Array, scale: Array, bias: Array | None, y: Array, rows: int,
               epsilon: float, mean: Array | None = None, inv_std: Array | None = None) -> None:
    """:func:`layer_norm_call`, run."""
    run_calls([layer_norm_call(x, scale, bias, y, rows, epsilon, mean, inv_std)])


def act_isa() -> int:
    """The copy of ``_act.c``'s kernels that runs: 2 AVX-512F, 1 AVX2+FMA, 0 plain C."""
    return int(_lib.mi_act_isa())


def set_act_isa(most: int | None) -> None:
    """Tests: run at most copy ``most`` (None: the best this CPU has, again)."""
    _lib.mi_act_set_isa(-1 if most is None else int(most))
