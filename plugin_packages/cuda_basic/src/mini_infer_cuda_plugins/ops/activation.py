"""Activations: Relu, LeakyRelu, Sigmoid, Tanh, Clip (opsets 1 and 11), Erf, Gelu, Dropout
(inference: a copy); schemas in :mod:`mini_infer_core.ops.activation`, ``.erf``,
``.gelu`` and ``.dropout``.

CuPy ufuncs writing into ``out``; Erf and Gelu, which CuPy has no ufunc for, are RawKernels
(``kernels/activation.cu``) on the GPU and float64 ``math.erf`` on NumPy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mini_infer_core.ops import activation as schema
from mini_infer_core.ops import dropout, erf, gelu

from ..serialization import CudaPlugin
from . import _raw
from ._common import FLOATS, array_module

__all__ = ["Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip_1", "Clip_11", "Erf", "Gelu",
           "Dropout_1", "Dropout_10"]

_erf64 = np.vectorize(math.erf, otypes=[np.float64])


class Relu(CudaPlugin, schema.Relu):
    def compute(self, x: Any, *, out: Any, **_: Any) -> None:
        array_module(x, out).maximum(x, 0, out=out)


class LeakyRelu(CudaPlugin, schema.LeakyRelu):
    def compute(self, x: Any, *, out: Any, alpha: float, **_: Any) -> None:
        xp = array_module(x, out)
        # alpha <= 1: max(x, alpha x); alpha > 1: min(x, alpha x)
        xp.multiply(x, alpha, out=out)
        (xp.maximum if alpha <= 1.0 else xp.minimum)(out, x, out=out)


class Sigmoid(CudaPlugin, schema.Sigmoid):
    def compute(self, x: Any, *, out: Any, **_: Any) -> None:
        xp = array_module(x, out)
        with np.errstate(over="ignore"):  # exp(-x) = inf for x << 0: the limit 0 is right
            xp.negative(x, out=out)
            xp.exp(out, out=out)
        xp.add(out, 1, out=out)
        xp.reciprocal(out, out=out)


class Tanh(CudaPlugin, schema.Tanh):
    def compute(self, x: Any, *, out: Any, **_: Any) -> None:
        array_module(x, out).tanh(x, out=out)


def _clip(xp: Any, x: Any, lo: Any, hi: Any, out: Any) -> None:
    """Bounds used on the device as they are (0-d inputs are never read back)."""
    if lo is None and hi is None:
        xp.copyto(out, x)
    elif hi is None:
        xp.maximum(x, lo, out=out, casting="unsafe")
    elif lo is None:
        xp.minimum(x, hi, out=out, casting="unsafe")
    else:
        xp.maximum(x, lo, out=out, casting="unsafe")
        xp.minimum(out, hi, out=out, casting="unsafe")


class Clip_1(CudaPlugin, schema.Clip_1):  # noqa: N801
    def compute(self, x: Any, *, out: Any, min: float | None = None,  # noqa: A002
                max: float | None = None, **_: Any) -> None:  # noqa: A002
        _clip(array_module(x, out), x, min, max, out)


class Clip_11(CudaPlugin, schema.Clip_11):  # noqa: N801
    def compute(self, x: Any, lo: Any | None = None, hi: Any | None = None, *,
                out: Any) -> None:
        _clip(array_module(x, out), x, lo, hi, out)


class Erf(CudaPlugin, erf.Erf):
    dtypes = FLOATS  # the RawKernel's types: float16, float, double

    def compute(self, x: Any, *, out: Any) -> None:
        xp = array_module(x, out)
        if xp is np:
            np.copyto(out, _erf64(x.astype(np.float64)), casting="same_kind")
            return
        _raw.elementwise(xp, "activation", "erf", x, out)


class Gelu(CudaPlugin, gelu.Gelu):
    dtypes = FLOATS  # the RawKernel's types: float16, float, double

    def compute(self, x: Any, *, out: Any, approximate: str) -> None:
        xp = array_module(x, out)
        tanh = approximate == "tanh"
        if xp is not np:
            _raw.elementwise(xp, "activation", "gelu", x, out, np.int32(tanh))
            return
        v = x.astype(np.float64)
        if tanh:
            t = np.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3))
        else:
            t = _erf64(v / math.sqrt(2.0))
        np.copyto(out, 0.5 * v * (1.0 + t), casting="same_kind")


class _Dropout(CudaPlugin, dropout.DropoutBase):
    def compute(self, x: Any, *_inputs: Any, out: Any, **_: Any) -> None:
        # inference: the optional ratio / training_mode inputs (opset 12) change nothing
        xp = array_module(x)
        if isinstance(out, tuple):
            xp.copyto(out[0], x)
            for mask in out[1:]:
                mask.fill(True)
        else:
            xp.copyto(out, x)


class Dropout_1(_Dropout, dropout.Dropout_1):  # noqa: N801
    pass


class Dropout_10(_Dropout, dropout.Dropout_10):  # noqa: N801
    pass
