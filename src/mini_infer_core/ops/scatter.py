"""Scattering: ScatterElements (and the deprecated Scatter), ScatterND.

The output has the shape and type of ``data``: a copy with ``updates`` written (``reduction``
none) or combined (add, mul, max, min; opset 16/18) at the given indices. Negative indices
count from the end.
"""

from __future__ import annotations

from ._schema import UnaryOp

__all__ = ["ScatterElements", "Scatter", "ScatterND"]


class ScatterElements(UnaryOp):
    """ScatterElements; ``reduction`` from opset 16 (max/min from 18)."""


class Scatter(UnaryOp):
    """The deprecated Scatter (opsets 9-10): ScatterElements without reduction."""


class ScatterND(UnaryOp):
    """ScatterND: ``indices[..., :k]`` address slices of data; ``reduction`` from opset 16."""
