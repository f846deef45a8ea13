"""FlexAttention (schema: :mod:`mini_infer_core.ops.preview`, domain ``ai.onnx.preview``).

The modifier graphs run through the subgraph service the core attaches
(:class:`~mini_infer_core.plugin.IUsesSubgraphs`), built on first use and kept. Scores,
softmax and the product with V are computed in ``softmax_precision`` (float32 for float16,
bfloat16 and float32 inputs, float64 for float64 ones unless given).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import preview as schema
from mini_infer_core.plugin import DataType, Subgraph
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin

__all__ = ["FlexAttention"]

Array = NDArray[Any]


class FlexAttention(CpuPlugin, schema.FlexAttention):
    def setup(self) -> None:
        super().setup()
        self._mods: dict[str, Subgraph] | None = None

    def modifiers(self) -> dict[str, Subgraph]:
        """The modifier graphs the node has, made on first use."""
        if self._mods is None:
            self._mods = {b: self.make_modifier(b) for b in self.bodies
                          if self.attrs[b] is not None}
        return self._mods

    def terminate(self) -> None:
        for m in (self._mods or {}).values():
            m.close()
        self._mods = None

    def _modify(self, body: str, x: Array, outer: list[Array]) -> Array:
        mod = self.modifiers().get(body)
        if mod is None:
            return x
        res = mod.run([x], outer)
        if len(res) != 1 or np.asarray(res[0]).shape != x.shape:
            raise PluginInterfaceError(
                f"FlexAttention {self.name!r}: {body} must return one tensor of shape "
                f"{x.shape}")
        return np.asarray(res[0], x.dtype)

    def compute(self, q: Array, k: Array, v: Array, *outer: Array, out: Array,
                scale: float | None, softmax_precision: int | None, **_: Any) -> None:
        hq, hkv = q.shape[1], k.shape[1]
        if k.shape[3] != q.shape[3] or v.shape[1] != hkv or v.shape[2] != k.shape[2]:
            raise PluginInterfaceError(
                f"FlexAttention {self.name!r}: Q {q.shape}, K {k.shape} and V {v.shape} do "
                "not fit together")
        if softmax_precision is not None:
            work = DataType(softmax_precision).numpy
        else:
            work = np.dtype(np.float64 if q.dtype == np.float64 else np.float32)
        factor = 1 / np.sqrt(q.shape[3]) if scale is None else scale
        kk, vv = k.astype(work), v.astype(work)
        if hq != hkv:
            kk, vv = np.repeat(kk, hq // hkv, axis=1), np.repeat(vv, hq // hkv, axis=1)
        scores = np.matmul(q.astype(work), np.swapaxes(kk, -1, -2)) * work.type(factor)
        scores = self._modify("score_mod", scores.astype(work), list(outer))
        with np.errstate(invalid="ignore", over="ignore"):
            scores = scores - scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
        probs = self._modify("prob_mod", probs, list(outer))
        np.copyto(out, np.matmul(probs, vv), casting="unsafe")
