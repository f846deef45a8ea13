"""A declared capability of an operator: its outputs may differ from run to run on the same
inputs (random generators), so that the builder never folds its node into constants.

The builder folds a node whose inputs are all constants (or that has none) by running it once
(``builder/folding.py``); for RandomNormal that would make every run repeat one draw. A plugin
declares that it must run every time by deriving from :class:`INondeterministic`; the random
schemas of :mod:`mini_infer_core.ops.random_ops` do, so every device's kernels for them
inherit it. onnxruntime's constant folding skips the same operators. The interface is the
plugin API's (a row of ``plugin/_capabilities.py``'s table), re-exported here.
"""

from __future__ import annotations

from typing import Any

from ..plugin._capabilities import INondeterministic

__all__ = ["INondeterministic", "may_fold"]


def may_fold(plugin: Any) -> bool:
    """Whether the builder may replace the plugin's node by constants (it is not
    :class:`INondeterministic`)."""
    return not isinstance(plugin, INondeterministic)
