"""Constants whose values a plugin stores in an order of its own (``pack_constants``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._record import record

__all__ = ["Repacked"]


@record(frozen=True)
class Repacked:
    """Returned by ``pack_constants`` for a constant input whose elements the plugin has put
    in an order only its own kernel reads (e.g. GEMM panels of 8 rows), which no axis order
    can express: same shape and dtype, any element order.

    The builder takes it only where this node is the constant's only reader (and no graph
    output is the constant): the engine file then stores the array as given, nothing else
    ever sees the reordered values, and ``on_accept`` is called. Elsewhere the constant stays
    as it is (and ``on_accept`` is not called). The plugin records in ``on_accept`` that its
    input is reordered, in one of its own fields, so that the engine file says so too; it must
    still compute correctly where its packed kernel does not run (by undoing the order).
    """

    array: np.ndarray[Any, Any]
    on_accept: Callable[[], None] | None = None
