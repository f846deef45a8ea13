"""TensorRT's INT8 build: ``BuilderConfig(int8=True, calibration=...)`` quantizes a float
network before the rest of the build.

1. select.py: the Conv/MatMul/Gemm nodes whose plugins take INT8 (``supports_format_combination``
   with quantized descriptions); the others keep float, each with its reason;
2. data.py: the calibration batches, checked against the model's inputs before any work;
3. calibrate.py + calibrators.py: their inputs' and outputs' ranges (min-max or entropy)
   from the float network's values -- or cache.py: the ranges a calibration cache holds;
4. insert.py: Q/DQ pairs (u8 activations, per-channel s8 weights), which the builder's QDQ
   rewrite (builder/qdq.py) fuses into the integer plugins; export.py writes them as ONNX.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ...errors import CalibrationError
from ...network import Network
from ..selection import Selector
from .cache import model_hash, read_cache, write_cache
from .calibrate import calibrate
from .calibrators import CALIBRATORS
from .data import load_batches
from .export import save_qdq, to_onnx
from .insert import insert_qdq
from .params import act_params
from .select import candidates, confirm

if TYPE_CHECKING:
    from ..builder import Builder, BuilderConfig

__all__ = ["quantize_network", "to_onnx"]

blog = logging.getLogger("mini_infer.builder")


def quantize_network(network: Network, config: BuilderConfig, builder: Builder
                     ) -> tuple[Network, dict[str, Any]]:
    """The network with Q/DQ pairs where nodes run INT8, and the build's ``int8`` report:
    the calibrator, the float network's hash, the INT8 nodes and
    ``{node: why it keeps float}``."""
    if config.calibrator not in CALIBRATORS:
        raise CalibrationError(f"unknown calibrator {config.calibrator!r}; choose one of "
                               f"{sorted(CALIBRATORS)}")
    model = model_hash(network)
    cached = read_cache(config.calibration_cache, model) if config.calibration_cache else None
    batches = None if cached is not None else load_batches(
        config.calibration, network, config.calibration_batch_size)
    chosen, kept = candidates(network, Selector(builder.registry, config.pins), config.device,
                              config.int8_min_work)
    tensors = sorted({t for c in chosen for t in (c.x, c.y)})
    if cached is not None:
        calibrator, ranges = cached
    else:
        assert batches is not None
        calibrator = config.calibrator
        # nothing to quantize (no plugin takes INT8 on this device): nothing to run
        ranges = calibrate(network, tensors, batches, calibrator, builder, config) \
            if tensors else {}
        if config.calibration_cache and tensors:
            write_cache(config.calibration_cache, model, calibrator, ranges,
                        {t: act_params(*r) for t, r in ranges.items()})
    chosen = confirm(network, chosen, ranges, Selector(builder.registry, config.pins),
                     config.device, kept)
    quantized = insert_qdq(network, chosen, ranges) if chosen else network
    if config.save_qdq:
        save_qdq(quantized, config.save_qdq)
    for name, why in kept.items():
        blog.info("int8: %s keeps FLOAT: %s", name, why)
    blog.info("int8: %d node(s) quantized (%s calibration%s)", len(chosen), calibrator,
              ", from the cache" if cached is not None else "")
    # whether the ranges came from a cache is logged, not kept: the calibrating build and
    # every build from its cache write the same engine file
    return quantized, {"calibrator": calibrator, "model": model,
                       "int8_nodes": [c.node.name for c in chosen],
                       "float_nodes": kept, "tensors": len(tensors)}
