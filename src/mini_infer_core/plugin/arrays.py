"""``NDArray`` for annotations, without importing :mod:`numpy.typing` at run time.

``numpy.typing`` costs 0.4-0.9 ms to import (it formats its aliases' docstrings), a share of
a small engine's whole load (issue 30). The type checker sees numpy's own ``NDArray``; at
run time ``NDArray[...]`` is :class:`numpy.ndarray`, which is all a module-level alias such
as ``Array = NDArray[Any]`` needs (annotations themselves are never evaluated here: every
module has ``from __future__ import annotations``). Plugin packages may use it alike::

    from mini_infer_core.plugin.arrays import NDArray
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

__all__ = ["NDArray"]

if TYPE_CHECKING:
    from numpy.typing import NDArray as NDArray
else:
    class NDArray:
        """``NDArray[T]`` is :class:`numpy.ndarray` (a stand-in for numpy.typing's)."""

        def __class_getitem__(cls, item: Any) -> type[np.ndarray]:
            return np.ndarray
