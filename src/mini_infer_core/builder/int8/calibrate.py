"""Calibration: the float network, built with the tensors to quantize as extra outputs, runs
each batch; a collector per tensor (calibrators.py) turns what it sees into a range."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import CalibrationError
from ...network import Network, TensorInfo
from .calibrators import CALIBRATORS

if TYPE_CHECKING:
    from ..builder import Builder, BuilderConfig

__all__ = ["calibrate"]

Ranges = dict[str, tuple[float, float]]


def calibrate(network: Network, tensors: Sequence[str], batches: Sequence[dict[str, Any]],
              calibrator: str, builder: Builder, config: BuilderConfig) -> Ranges:
    """The range of each of ``tensors`` over ``batches`` (the float network's values)."""
    from ..builder import BuilderConfig

    make = CALIBRATORS[calibrator]
    collectors = {t: make() for t in tensors}
    inputs = {t.name for t in network.inputs}
    extra = [t for t in tensors if t not in inputs
             and t not in {o.name for o in network.outputs}]
    probe = dataclasses.replace(
        network, outputs=[*network.outputs, *(TensorInfo(t, None, None) for t in extra)],
        constants=dict(network.constants))
    # the float values are the same on any device: an engine cross-built for a device this
    # machine lacks is calibrated on its fallback (the CPU)
    dev = builder.registry.get_device(config.device)
    device = config.device if dev is not None and dev.availability()[0] else (
        config.fallback_device or config.device)
    engine = builder.build_engine(probe, BuilderConfig(
        device=device, pins=dict(config.pins), fallback_device=config.fallback_device,
        time_tactics=False, input_shapes=dict(config.input_shapes), negotiate_formats=False))
    with engine.create_execution_context() as ctx:
        for batch in batches:
            values = ctx.execute(batch)
            for t, c in collectors.items():
                v = batch[t] if t in inputs else values[t]
                c.add(np.asarray(v))
    ranges: Ranges = {}
    for t, c in collectors.items():
        r = c.range()
        if r is None or not all(np.isfinite(r)):
            raise CalibrationError(
                f"calibration gave tensor {t!r} no finite range ({r}): its values were all "
                "empty, NaN or infinite; give calibration batches that exercise it")
        ranges[t] = r
    return ranges
