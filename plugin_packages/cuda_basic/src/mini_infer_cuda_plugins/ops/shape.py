"""Data movement: Reshape, Flatten, Transpose, Concat, Unsqueeze, Squeeze, Identity -- one
device copy into the pre-allocated output, no host round trip (schemas in
:mod:`mini_infer_core.ops.shape`).

Targets and axes given as inputs (Reshape-5, Unsqueeze-13, Squeeze-13) must be known when the
engine is built (:class:`BuildTimeValues`): the kernels never read them back from the GPU.
"""

from __future__ import annotations

from typing import Any

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import ValueOp
from mini_infer_core.ops import shape as schema
from mini_infer_core.plugin import shapes

from ..serialization import CudaPlugin
from ._common import array_module, copy_into

__all__ = ["Reshape_1", "Reshape_5", "Flatten", "Transpose", "Concat", "Unsqueeze_1",
           "Unsqueeze_13", "Squeeze_1", "Squeeze_13", "Identity"]


class BuildTimeValues(ValueOp):
    """The kernel of a schema whose output shapes read input values: on this device those
    inputs must be known when the engine is built (``shape_inputs``: the engine refuses them
    computed at run time) and the node never turns data-dependent, since reading them back
    from the GPU would wait for its stream."""

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.shape_inputs = cls.value_inputs

    def runtime(self, dynamic: bool = True) -> bool:
        if dynamic:
            raise PluginInterfaceError(
                f"{self.op_type}: the values of inputs {list(self.value_inputs)} must be "
                "build-time constants (or computed from shapes only) for the cuda device, "
                "whose kernels never read them back from the GPU; they are not here")
        return super().runtime(False)


class _Copy(CudaPlugin, schema.CopyBase):
    """The input's elements, in order, into ``out``."""

    def compute(self, x: Any, *_inputs: Any, out: Any, **_: Any) -> None:
        copy_into(array_module(x, out), out, x)


Reshape_1, Reshape_5, Flatten, Unsqueeze_1, Unsqueeze_13, Squeeze_1, Squeeze_13, Identity = (
    type(op.__name__, (_Copy, BuildTimeValues, op) if issubclass(op, ValueOp) else (_Copy, op),
         {"__module__": __name__})
    for op in (schema.Reshape_1, schema.Reshape_5, schema.Flatten, schema.Unsqueeze_1,
               schema.Unsqueeze_13, schema.Squeeze_1, schema.Squeeze_13, schema.Identity))


class Transpose(CudaPlugin, schema.Transpose):
    def compute(self, x: Any, *, out: Any, perm: Any) -> None:
        array_module(x, out).copyto(out, x.transpose(self.perm(x.ndim)))


class Concat(CudaPlugin, schema.Concat):
    def compute(self, *xs: Any, out: Any, axis: int) -> None:
        array_module(*xs, out).concatenate(xs, axis=shapes.norm_axis(axis, out.ndim), out=out)
