"""What the Conv plugin does around its kernels: the activation ConvFusion fused after the
clamp (``__act__``: its code for the compiled epilogues, or a pass over the output for the
paths without it), and the taps of a kernel that read the input at all (the others, reading
only padding for every output, are dropped: :func:`live_taps`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

from ._act import ACT_OPS
from ._act import act as act_in_place
from ._native import NO_ACT, Act, usable

__all__ = ["ACTS", "act_after", "act_code", "live_taps"]

Array = NDArray[Any]

#: the activations Conv applies after its clamp by their ``mi_act_f32`` names
ACTS: dict[str, str] = {"HardSigmoid": "hard_sigmoid", "HardSwish": "hard_swish",
                        "Sigmoid": "sigmoid", "Swish": "swish"}


def act_code(hidden: dict[str, Any]) -> Act:
    """The fused activation (``__act__``, ``__act_args__``) as the compiled epilogues take
    it."""
    name = hidden.get("__act__")
    if not name:
        return NO_ACT
    alpha, beta = hidden.get("__act_args__", (0.0, 0.0))
    return ACT_OPS[ACTS[name]], float(alpha), float(beta)


def _act_numpy(name: str, x: Array, alpha: float, beta: float) -> None:
    """``x = name(x)`` in place, in ``x``'s dtype."""
    if name == "HardSigmoid":
        np.clip(x * x.dtype.type(alpha) + x.dtype.type(beta), 0, 1, out=x)
    elif name == "HardSwish":
        x *= np.clip(x / x.dtype.type(6) + x.dtype.type(0.5), 0, 1)
    else:
        z = x * x.dtype.type(alpha) if name == "Swish" else x
        with np.errstate(over="ignore"):
            s = 1 / (1 + np.exp(-z))
        if name == "Swish":
            x *= s
        else:
            x[...] = s


def act_after(hidden: dict[str, Any], out: Array) -> None:
    """The fused activation, in place over ``out`` (compiled for contiguous float32, NumPy
    otherwise), for the paths without it in their epilogue."""
    name = hidden.get("__act__")
    if not name:
        return
    alpha, beta = (float(v) for v in hidden.get("__act_args__", (0.0, 0.0)))
    if usable(out) and out.flags.c_contiguous:
        act_in_place(ACTS[name], out, out, alpha, beta)
    else:
        _act_numpy(name, out, alpha, beta)


def live_taps(in_dims: Sequence[int], out_dims: Sequence[int], kernel: Sequence[int],
              strides: Sequence[int], dilations: Sequence[int], begin: Sequence[int]
              ) -> tuple[list[tuple[int, int]], list[int]] | None:
    """Per spatial axis, the taps [k0, k1) that read the input for some output (tap t reads
    ``o * s + t * d - begin`` for outputs o), and the padding (before per axis, then after)
    that keeps the output size with only them; None where every tap does, none does, or
    the padding would be negative."""
    keep: list[tuple[int, int]] = []
    before, after = [], []
    for n, out, k, s, d, b in zip(in_dims, out_dims, kernel, strides, dilations, begin,
                                  strict=True):
        live = [t for t in range(int(k)) if (out - 1) * s + t * d - b >= 0 and t * d - b < n]
        if not live:
            return None
        k0, k1 = live[0], live[-1] + 1
        keep.append((k0, k1))
        before.append(b - k0 * d)
        after.append((out - 1) * s + (k1 - k0 - 1) * d + 1 - n - before[-1])
        if before[-1] < 0 or after[-1] < 0:
            return None
    if all(k0 == 0 and k1 == int(k) for (k0, k1), k in zip(keep, kernel, strict=True)):
        return None
    return keep, before + after
