"""A declared capability of an operator: its outputs may differ from run to run on the same
inputs (random generators), so that the builder never folds its node into constants.

The builder folds a node whose inputs are all constants (or that has none) by running it once
(``builder/folding.py``); for RandomNormal that would make every run repeat one draw. A plugin
declares that it must run every time by deriving from :class:`INondeterministic`; the random
schemas of :mod:`mini_infer_core.ops.random_ops` do, so every device's kernels for them
inherit it. onnxruntime's constant folding skips the same operators.
"""

from __future__ import annotations

__all__ = ["INondeterministic", "may_fold"]


class INondeterministic:
    """Outputs that may differ between two runs on the same inputs: the node is never folded
    into constants at build time, whatever its inputs, and neither is what reads its outputs.
    A seed does not withdraw it: what a seed means (the same values on every run, or one
    stream across runs) is the kernel's to decide, at run time."""


def may_fold(plugin: object) -> bool:
    """Whether the builder may replace the plugin's node by constants (it is not
    :class:`INondeterministic`)."""
    return not isinstance(plugin, INondeterministic)
