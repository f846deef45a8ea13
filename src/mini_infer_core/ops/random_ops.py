"""Random generators: RandomUniform, RandomNormal (shape from the ``shape`` attribute),
RandomUniformLike, RandomNormalLike, Bernoulli (shape of the input), Multinomial.

ONNX leaves the values to the implementation ("non-deterministic ... even if a seed is
specified"); only shapes and types are the operator's contract, and they are known when the
engine is built. The element type is ``dtype`` where given, else the input's.

Every one is :class:`~mini_infer_core.ops.INondeterministic`: the builder never folds it into
constants, seeded or not, even where its inputs are constants (RandomNormal has none), so an
unseeded node draws afresh on every run; a seeded one gives what its kernel makes of the seed.
The runtimes differ there: onnxruntime seeds one generator per session, so a seeded node
gives a new draw on every run and the same sequence in every new session; onnx's
ReferenceEvaluator (which cpu_basic follows) reseeds on every run, so every run repeats one
draw.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs
from ..plugin.shapes import Shapes
from ._common import ranked
from ._determinism import INondeterministic
from ._schema import Op

__all__ = ["RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike",
           "Bernoulli", "Multinomial"]


def _dtype(op: str, code: int | None, fallback: DataType | None) -> DataType:
    if code is None or code == 0:
        if fallback is None:
            raise PluginInterfaceError(f"{op}: no 'dtype' attribute and no input type")
        return fallback
    try:
        return DataType(int(code))
    except ValueError:
        raise PluginInterfaceError(f"{op}: dtype {code} is not an ONNX element type") from None


class RandomBase(Op, INondeterministic):
    """A random operator: ``seed`` (a float, as ONNX has it) makes the values reproducible;
    never folded into constants (:class:`INondeterministic`)."""


class _FromShape(RandomBase):
    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> Shapes:
        shape = [int(d) for d in self.attrs["shape"]]
        if any(d < 0 for d in shape):
            raise PluginInterfaceError(f"{self.op_type}: shape {shape} has a negative "
                                       "dimension")
        return [shape]

    def output_types(self, input_types: Sequence[DataType | None]) -> list[DataType]:
        return [_dtype(self.op_type, self.attrs["dtype"], None)]


class _Like(RandomBase):
    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> Shapes:
        x = inputs[0]
        assert x is not None
        return [list(x)]

    def output_types(self, input_types: Sequence[DataType | None]) -> list[DataType]:
        return [_dtype(self.op_type, self.attrs["dtype"], input_types[0])]


class RandomUniform(_FromShape):
    """Uniform in [low, high)."""


class RandomNormal(_FromShape):
    """Normal of ``mean`` and standard deviation ``scale``."""


class RandomUniformLike(_Like):
    """RandomUniform shaped as the input."""


class RandomNormalLike(_Like):
    """RandomNormal shaped as the input."""


class Bernoulli(_Like):
    """1 with probability ``input``, else 0."""


class Multinomial(RandomBase):
    """``sample_size`` class indices per row of ``[batch, classes]`` unnormalised
    log-probabilities: ``[batch, sample_size]`` of ``dtype`` (INT32 by default)."""

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> Shapes:
        x = ranked("Multinomial", inputs, 0, 2, "[batch, classes]")
        return [[x[0], int(self.attrs["sample_size"])]]

    def output_types(self, input_types: Sequence[DataType | None]) -> list[DataType]:
        out = _dtype("Multinomial", self.attrs["dtype"], DataType.INT32)
        if out not in (DataType.INT32, DataType.INT64):
            raise PluginInterfaceError(f"Multinomial: dtype must be int32 or int64, not "
                                       f"{out.name}")
        return [out]
