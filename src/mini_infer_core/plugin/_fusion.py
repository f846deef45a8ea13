"""What a plugin returns when it absorbs the node consuming its output (see builder/fusion.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Fusion"]


@dataclass
class Fusion:
    """What a plugin returns from ``fuse``: new constant values for its own inputs (an index
    equal to the input count appends one), and consumer inputs to append as its own."""

    constants: dict[int, np.ndarray[Any, Any]] = field(default_factory=dict)
    append_inputs: list[int] = field(default_factory=list)
