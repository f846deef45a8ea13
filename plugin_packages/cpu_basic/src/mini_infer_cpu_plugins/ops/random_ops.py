"""Random generators (schemas: :mod:`mini_infer_core.ops.random_ops`).

With a ``seed`` a node draws from NumPy's ``RandomState(int(seed))`` afresh on every run,
the stream ONNX's reference evaluator draws from, so a seeded node gives the same values on
every run and the same values as the reference. Without one, each plugin instance (one per
execution context) keeps a generator seeded from the operating system and draws new values
on every run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import random_ops as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin

__all__ = ["RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike",
           "Bernoulli", "Multinomial"]

Array = NDArray[Any]


class _Random(CpuPlugin, schema.RandomBase):
    def setup(self) -> None:
        super().setup()
        self._own: np.random.RandomState | None = None

    def generator(self) -> np.random.RandomState:
        """A fresh ``RandomState(seed)`` for a seeded node, else this instance's own (a clone
        makes its own: execution contexts draw independently)."""
        seed = self.attrs["seed"]
        if seed is not None and not np.isnan(seed):
            return np.random.RandomState(int(seed))
        if self._own is None:
            self._own = np.random.RandomState()
        return self._own


def _uniform(gen: np.random.RandomState, out: Array, low: float, high: float) -> None:
    """Uniform in [low, high), as ONNX defines it: drawn in float64, then kept below ``high``
    in the output's type (a draw within half a float32 ulp of 1 rounded to ``high``: one in
    ~30 million, seen in 200,000 draws of [2, 4))."""
    res = low + (high - low) * gen.rand(*out.shape)
    np.copyto(out, res, casting="unsafe")
    if out.dtype.kind == "f" and high > low:
        top = out.dtype.type(high)
        np.minimum(out, np.nextafter(top, out.dtype.type(low)), out=out)


def _normal(gen: np.random.RandomState, out: Array, mean: float, scale: float) -> None:
    res = gen.randn(*out.shape).astype(out.dtype)
    res *= scale
    res += mean
    np.copyto(out, res, casting="unsafe")


class RandomUniform(_Random, schema.RandomUniform):
    def compute(self, *, out: Array, low: float, high: float, **_: Any) -> None:
        _uniform(self.generator(), out, low, high)


class RandomNormal(_Random, schema.RandomNormal):
    def compute(self, *, out: Array, mean: float, scale: float, **_: Any) -> None:
        _normal(self.generator(), out, mean, scale)


class RandomUniformLike(_Random, schema.RandomUniformLike):
    def compute(self, x: Array, *, out: Array, low: float, high: float, **_: Any) -> None:
        _uniform(self.generator(), out, low, high)


class RandomNormalLike(_Random, schema.RandomNormalLike):
    def compute(self, x: Array, *, out: Array, mean: float, scale: float, **_: Any) -> None:
        _normal(self.generator(), out, mean, scale)


class Bernoulli(_Random, schema.Bernoulli):
    def compute(self, p: Array, *, out: Array, **_: Any) -> None:
        prob = np.asarray(p, np.float64)
        if prob.size and (np.nanmin(prob) < 0 or np.nanmax(prob) > 1 or np.isnan(prob).any()):
            raise PluginInterfaceError(
                f"Bernoulli {self.name!r}: probabilities must lie in [0, 1]")
        np.copyto(out, self.generator().binomial(1, p=prob), casting="unsafe")


class Multinomial(_Random, schema.Multinomial):
    """Row-wise softmax of the input, then ``sample_size`` draws by inverse CDF."""

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        logits = np.asarray(x, np.float64)
        logits = logits - logits.max(axis=1, keepdims=True)
        cdf = np.cumsum(np.exp(logits), axis=1)
        cdf /= cdf[:, -1:]
        u = self.generator().rand(*out.shape)
        for r in range(out.shape[0]):
            out[r] = np.minimum(np.searchsorted(cdf[r], u[r], side="right"),
                                cdf.shape[1] - 1)
