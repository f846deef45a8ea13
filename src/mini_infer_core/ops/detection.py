"""Detection post-processing: NonMaxSuppression.

How many boxes survive depends on the scores and boxes themselves, so the output
``selected_indices`` (``[num_selected, 3]`` INT64: batch, class, box) has a first dimension
known only once the node has run (``data_dependent``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs
from ..plugin.shapes import Shapes
from ._schema import Op

__all__ = ["NonMaxSuppression"]


class NonMaxSuppression(Op):
    """boxes ``[B, N, 4]``, scores ``[B, C, N]`` and the optional scalars
    max_output_boxes_per_class (absent: 0, nothing selected), iou_threshold (absent: 0) and
    score_threshold (absent: no filtering); ``center_point_box`` 0: corners
    ``[y1, x1, y2, x2]`` in any order, 1: ``[x_center, y_center, width, height]``."""

    data_dependent = True

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> Shapes:
        boxes, scores = inputs[0], inputs[1]
        assert boxes is not None and scores is not None
        if len(boxes) != 3 or len(scores) != 3:
            raise PluginInterfaceError(
                f"NonMaxSuppression: boxes must be [batches, boxes, 4] and scores "
                f"[batches, classes, boxes]; got ranks {len(boxes)} and {len(scores)}")
        last = boxes[2]
        if last.is_constant() and last.get_constant_value() != 4:
            raise PluginInterfaceError(
                f"NonMaxSuppression: boxes' last dimension must be 4, it is {last}")
        if self.attrs["center_point_box"] not in (0, 1):
            raise PluginInterfaceError(
                f"NonMaxSuppression: center_point_box must be 0 or 1, it is "
                f"{self.attrs['center_point_box']}")
        return [[self.dynamic_dim("selected"), 3]]

    def output_types(self, input_types: Sequence[DataType | None]) -> list[DataType]:
        return [DataType.INT64]
