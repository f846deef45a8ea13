"""The calibration cache (TensorRT's ``readCalibrationCache``/``writeCalibrationCache``): a
JSON file a later build reads instead of calibrating, so that it gives the same engine.

    {"format": "mini-infer-int8-calibration", "version": 1,
     "calibrator": "entropy", "model": "<sha256 of the float network>",
     "tensors": {"NAME": {"min": -1.5, "max": 3.25, "scale": 0.0186..., "zero_point": 81,
                          "type": "uint8"}, ...}}

Floats are written as Python writes them (the shortest text that reads back to the same
double), so a cache read back gives bit-identical scales. A cache made for another model
(its hash differs) is an error, never silently used.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from ...errors import CalibrationError
from ...network import Network

__all__ = ["FORMAT", "model_hash", "read_cache", "write_cache"]

FORMAT = "mini-infer-int8-calibration"
VERSION = 1
Ranges = dict[str, tuple[float, float]]


def model_hash(network: Network) -> str:
    """A SHA-256 of the float network: its inputs, nodes (operator, tensors, attributes)
    and constants (names, types, shapes, bytes)."""
    h = hashlib.sha256()
    for t in network.inputs:
        h.update(f"in {t.name} {t.dtype} {t.shape}\n".encode())
    for n in network.nodes:
        attrs = sorted((f.name, f.type.name, bytes(np.asarray(f.data).tobytes()))
                       for f in n.fields.fields)
        h.update(f"node {n.qualified_op} {n.inputs} {n.outputs} {attrs}\n".encode())
    for name in sorted(network.constants):
        a = np.ascontiguousarray(network.constants[name])
        h.update(f"const {name} {a.dtype} {a.shape}\n".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def read_cache(path: str | os.PathLike[str], model: str) -> tuple[str, Ranges] | None:
    """(calibrator, ranges) from the cache at ``path``; None where there is no such file."""
    p = Path(path)
    if not p.exists():
        return None
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise CalibrationError(f"calibration cache {p} cannot be read: {exc}; delete it to "
                               "calibrate again") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CalibrationError(f"calibration cache {p} is not a mini-infer calibration cache "
                               f"(no \"format\": \"{FORMAT}\")")
    if data.get("version") != VERSION:
        raise CalibrationError(f"calibration cache {p} has version {data.get('version')!r}, "
                               f"this mini-infer reads version {VERSION}; calibrate again")
    if data.get("model") != model:
        raise CalibrationError(
            f"calibration cache {p} was made for another model (hash "
            f"{str(data.get('model'))[:12]}..., this one {model[:12]}...); delete it or name "
            "another file to calibrate this model")
    try:
        ranges = {str(k): (float(v["min"]), float(v["max"]))
                  for k, v in data["tensors"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CalibrationError(f"calibration cache {p}: malformed tensors entry ({exc})"
                               ) from None
    return str(data.get("calibrator", "")), ranges


def write_cache(path: str | os.PathLike[str], model: str, calibrator: str,
                ranges: Ranges, params: dict[str, tuple[float, int]]) -> None:
    """Write the ranges (and the scale and zero point each gives) to ``path``."""
    tensors = {name: {"min": lo, "max": hi, "scale": params[name][0],
                      "zero_point": params[name][1], "type": "uint8"}
               for name, (lo, hi) in sorted(ranges.items())}
    text = json.dumps({"format": FORMAT, "version": VERSION, "calibrator": calibrator,
                       "model": model, "tensors": tensors}, indent=1)
    p = Path(path)
    try:
        p.write_text(text + "\n")
    except OSError as exc:
        raise CalibrationError(f"cannot write the calibration cache {p}: "
                               f"{exc.strerror or exc}") from None
