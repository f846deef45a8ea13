"""Dropout: a copy in inference (and its mask), elements dropped with ``training_mode``."""

from __future__ import annotations

from collections.abc import Sequence

from ..plugin import DataType
from ._schema import UnaryOp

__all__ = ["Dropout_1", "Dropout_10"]


class DropoutBase(UnaryOp):
    n_outputs = 2


class Dropout_1(DropoutBase):  # noqa: N801
    """Dropout before opset 10: in inference a copy; the mask has the input's type."""

    plugin_version = "1"
    max_opset = 9

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0], input_types[0]]


class Dropout_10(DropoutBase):  # noqa: N801
    """Dropout from opset 10: in inference a copy and an all-True bool mask; with
    ``training_mode`` (input 2, opset 12) elements are dropped."""

    plugin_version = "10"
    min_opset = 10

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0], DataType.BOOL]
