"""The builder's Reformat steps between LINEAR and the channel-blocked formats (CHW16, CHW8),
compiled (``_reformat.c``, on the pool) rather than the core's NumPy copy, which reads or
writes one float per cache line: a 3x224x224 input took 0.45 ms to become CHW16, a 21-class
512x512 map 5-13 ms to come back.

The builder asks every creator registered for the core's ``Reformat`` (domain
``mini_infer.core``) on the device, best first, whether its plugin, made with the fields
``src`` and ``dst`` (the formats' values), takes the step's combination, and falls back to
the core's own (``builder/formats.py``). This one takes float32 tensors of rank 3 or more
between LINEAR and CHW16 or CHW8, either way; anything else stays with the core.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from mini_infer_core.engine.builtins import CORE_NAMESPACE, ReformatPlugin
from mini_infer_core.plugin import (
    DataType,
    IBoundRun,
    IPluginCreator,
    IPluginV2,
    PluginFieldCollection,
    TensorFormat,
    decode_fields,
    encode_fields,
    fields_from_values,
)

from . import NAMESPACE, PRIORITY

__all__ = ["CREATOR", "NativeReformat", "ReformatCreator"]

#: the formats this plugin moves a tensor between (either way)
BLOCKED = (TensorFormat.CHW16, TensorFormat.CHW8)


class NativeReformat(ReformatPlugin, IBoundRun):
    """One tensor from ``src`` into ``dst`` (LINEAR to CHW16 or CHW8, or back): the core's
    step (its shape, outputs and checks), compiled."""

    plugin_namespace = NAMESPACE
    package = "mini-infer-cpu-native"

    def __init__(self, src: TensorFormat, dst: TensorFormat) -> None:
        super().__init__(src, dst)
        self.channels = 0
        self._kept: tuple[tuple[Any, Any], list[Any]] | None = None

    def supports_format_combination(self, pos: int, in_out: Sequence[Any],
                                    num_inputs: int) -> bool:
        desc, pair = in_out[pos], {self.src, self.dst}
        return (super().supports_format_combination(pos, in_out, num_inputs)
                and desc.dtype is DataType.FLOAT and len(desc.shape) >= 3
                and int(desc.shape[1]) > 0 and TensorFormat.LINEAR in pair
                and any(f in pair for f in BLOCKED))

    def configure_plugin(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        super().configure_plugin(inputs, outputs)
        self.channels = int(self.shape[1])
        self._kept = None

    def _calls(self, x: Any, y: Any) -> list[Any]:
        from ._blocked_calls import reformat_call

        return [reformat_call(x, y, self.channels, self.src is TensorFormat.LINEAR)]

    def enqueue(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any,
                stream: Any) -> None:
        from ._native import run_calls

        key = (inputs[0], outputs[0])
        if not all(a.flags.c_contiguous and a.dtype.itemsize == 4 for a in key):
            # a graph input handed in with strides of its own: the core's copy takes any
            super().enqueue(inputs, outputs, workspace, stream)
            return
        kept = self._kept
        if kept is None or kept[0][0] is not key[0] or kept[0][1] is not key[1]:
            kept = self._kept = (key, self._calls(*key))
        run_calls(kept[1])

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        from ._native import run_calls

        return partial(run_calls, self._calls(inputs[0], outputs[0]))

    def serialize(self) -> bytes:
        return encode_fields(fields_from_values({"src": self.src.value, "dst": self.dst.value,
                                                 "channels": self.channels}))

    def clone(self) -> IPluginV2:
        twin = NativeReformat(self.src, self.dst)
        twin.shape, twin.channels = self.shape, self.channels
        return twin

    def __repr__(self) -> str:
        return f"NativeReformat({self.src.name} -> {self.dst.name})"


class ReformatCreator(IPluginCreator):
    """Makes :class:`NativeReformat` for the builder's Reformat steps (fields ``src`` and
    ``dst``: TensorFormat values) and from an engine file."""

    name = "Reformat"
    plugin_version = "1"
    plugin_namespace = NAMESPACE
    domain = CORE_NAMESPACE  # where the builder looks for Reformat creators
    op_type = "Reformat"
    devices = ("cpu",)
    priority = PRIORITY

    @property
    def field_names(self) -> tuple[str, ...]:
        return ("src", "dst")

    def create_plugin(self, name: str, fields: PluginFieldCollection) -> IPluginV2:
        values = fields.values_dict()
        return NativeReformat(TensorFormat(str(values["src"])), TensorFormat(str(values["dst"])))

    def deserialize_plugin(self, name: str, data: bytes) -> IPluginV2:
        values = decode_fields(data).values_dict()
        plugin = NativeReformat(TensorFormat(str(values["src"])),
                                TensorFormat(str(values["dst"])))
        plugin.channels = int(values.get("channels", 0))
        return plugin


#: what the lazy creator of ``catalog.reformat_creator`` resolves to
CREATOR = ReformatCreator()
