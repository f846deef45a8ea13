"""Adagrad, Adam and Momentum (schemas: :mod:`mini_infer_core.ops.training`, domain
``ai.onnx.preview.training``): one optimizer step, computed in the tensors' own type."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import training as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin

__all__ = ["Adagrad", "Adam", "Momentum"]

Array = NDArray[Any]


def _scalar(x: Array, dtype: Any) -> Any:
    return np.asarray(x).reshape(-1)[0].astype(dtype)


class Adagrad(CpuPlugin, schema.Adagrad):
    def compute(self, r: Array, t: Array, *tensors: Array, out: Any, norm_coefficient: float,
                decay_factor: float, epsilon: float) -> None:
        n = self.count(2 + len(tensors))
        outs = out if isinstance(out, tuple) else (out,)
        for i in range(n):
            x, g, h = tensors[i], tensors[n + i], tensors[2 * n + i]
            dt = x.dtype.type
            rate = _scalar(r, x.dtype) / (1 + _scalar(t, x.dtype) * dt(decay_factor))
            reg = dt(norm_coefficient) * x + g
            h_new = h + reg * reg
            np.copyto(outs[i], x - rate * reg / (np.sqrt(h_new) + dt(epsilon)),
                      casting="unsafe")
            np.copyto(outs[n + i], h_new, casting="unsafe")


class Adam(CpuPlugin, schema.Adam):
    def compute(self, r: Array, t: Array, *tensors: Array, out: Any, alpha: float,
                beta: float, epsilon: float, norm_coefficient: float,
                norm_coefficient_post: float) -> None:
        n = self.count(2 + len(tensors))
        outs = out if isinstance(out, tuple) else (out,)
        step = int(np.asarray(t).reshape(-1)[0])
        for i in range(n):
            x, g, v, h = (tensors[k * n + i] for k in range(4))
            dt = x.dtype.type
            a, b = dt(alpha), dt(beta)
            reg = dt(norm_coefficient) * x + g
            v_new = a * v + (1 - a) * reg
            h_new = b * h + (1 - b) * (reg * reg)
            rate = _scalar(r, x.dtype)
            if step > 0:
                rate = rate * np.sqrt(1 - b ** step) / (1 - a ** step)
            x_new = x - rate * (v_new / (np.sqrt(h_new) + dt(epsilon)))
            np.copyto(outs[i], (1 - dt(norm_coefficient_post)) * x_new, casting="unsafe")
            np.copyto(outs[n + i], v_new, casting="unsafe")
            np.copyto(outs[2 * n + i], h_new, casting="unsafe")


class Momentum(CpuPlugin, schema.Momentum):
    def compute(self, r: Array, t: Array, *tensors: Array, out: Any, alpha: float,
                beta: float, mode: str, norm_coefficient: float) -> None:
        n = self.count(2 + len(tensors))
        outs = out if isinstance(out, tuple) else (out,)
        first = int(np.asarray(t).reshape(-1)[0]) <= 0
        for i in range(n):
            x, g, v = tensors[i], tensors[n + i], tensors[2 * n + i]
            dt = x.dtype.type
            reg = dt(norm_coefficient) * x + g
            v_new = dt(alpha) * v + (dt(1) if first else dt(beta)) * reg
            rate = _scalar(r, x.dtype)
            step = reg + dt(alpha) * v_new if mode == "nesterov" else v_new
            np.copyto(outs[i], x - rate * step, casting="unsafe")
            np.copyto(outs[n + i], v_new, casting="unsafe")
