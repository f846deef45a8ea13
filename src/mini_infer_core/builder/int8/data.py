"""Calibration data: what ``BuilderConfig(calibration=...)`` and ``mini-infer build
--calibration DATA`` take, checked against the model's inputs before any work.

- a ``.npz`` file: one array per model input, named after it, all with the same leading
  length N (the model's batch axis); it is cut into batches of ``calibration_batch_size``
  rows;
- a folder of ``.npz`` files (one batch each, arrays named after the inputs) or of ``.npy``
  files (one batch each, for a model with one input), read in file-name order;
- from Python, an iterable of ``{input name: array}`` batches (TensorRT's ``get_batch``).

Every batch must name exactly the model's inputs, with the declared rank, the declared size
of each fixed dimension and the declared element type: anything else is a
:class:`~mini_infer_core.errors.CalibrationError` naming the batch, the input and what the
model declares.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import CalibrationError
from ...network import Network

__all__ = ["load_batches"]

Batch = dict[str, np.ndarray[Any, Any]]


def load_batches(data: Any, network: Network, batch_size: int = 32) -> list[Batch]:
    """The calibration batches ``data`` names, each checked against ``network``'s inputs."""
    if data is None:
        raise CalibrationError(
            "an INT8 build needs calibration data or a calibration cache made for this model: "
            "pass calibration= (mini-infer build --calibration DATA: a .npz file or a folder "
            "of .npz/.npy files) or calibration_cache= naming an existing cache")
    if batch_size < 1:
        raise CalibrationError(f"calibration_batch_size must be at least 1, got {batch_size}")
    if isinstance(data, (str, os.PathLike)):
        batches = _from_path(Path(data), network, batch_size)
    elif isinstance(data, Iterable) and not isinstance(data, Mapping):
        batches = [{str(k): np.asarray(v) for k, v in b.items()} for b in data]
        where = [f"batch {k}" for k in range(len(batches))]
        for b, w in zip(batches, where, strict=True):
            _check(b, network, w)
    else:
        raise CalibrationError(
            f"calibration data must be a path (.npz file or folder) or an iterable of "
            f"{{input name: array}} batches, not {type(data).__name__}")
    if not batches:
        raise CalibrationError(f"calibration data {data!r} holds no batch")
    return batches


def _from_path(path: Path, network: Network, batch_size: int) -> list[Batch]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".npz", ".npy"))
        if not files:
            raise CalibrationError(f"calibration folder {path} holds no .npz or .npy file")
        batches = [_read(f, network) for f in files]
        for b, f in zip(batches, files, strict=True):
            _check(b, network, f"calibration file {f}")
        return batches
    if not path.is_file():
        raise CalibrationError(f"calibration data {path}: no such file or folder")
    if path.suffix not in (".npz", ".npy"):
        raise CalibrationError(f"calibration data {path}: expected a .npz or .npy file "
                               "(or a folder of them)")
    whole = _read(path, network)
    if any(a.ndim == 0 for a in whole.values()) or len({len(a) for a in whole.values()}) > 1:
        raise CalibrationError(
            f"calibration file {path}: its arrays must share one leading batch length, got "
            f"{ {k: a.shape for k, a in whole.items()} }")
    n = len(next(iter(whole.values()))) if whole else 0
    fixed = {t.shape[0] for t in network.inputs if t.shape and isinstance(t.shape[0], int)}
    step = fixed.pop() if len(fixed) == 1 else batch_size  # a fixed batch: that many rows
    batches = [{k: a[s:s + step] for k, a in whole.items()} for s in range(0, n, step)]
    for k, b in enumerate(batches):
        _check(b, network, f"calibration file {path} (rows {k * step} to "
                           f"{min(n, (k + 1) * step) - 1})")
    return batches


def _read(path: Path, network: Network) -> Batch:
    try:
        if path.suffix == ".npy":
            names = [t.name for t in network.inputs]
            if len(names) != 1:
                raise CalibrationError(
                    f"calibration file {path}: a .npy file holds one array, the model has "
                    f"{len(names)} inputs {names}: use .npz files with one array per input")
            return {names[0]: np.load(path, allow_pickle=False)}
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise CalibrationError(f"calibration file {path} cannot be read: {exc}") from None


def _check(batch: Mapping[str, np.ndarray[Any, Any]], network: Network, where: str) -> None:
    """Names, ranks, fixed dimensions and element types against the model's inputs."""
    declared = {t.name: t for t in network.inputs}
    missing = sorted(set(declared) - set(batch))
    unknown = sorted(set(batch) - set(declared))
    if missing or unknown:
        raise CalibrationError(
            f"{where}: names {sorted(batch)} do not fit the model's inputs {sorted(declared)}"
            + (f" (missing {missing})" if missing else "")
            + (f" (not inputs of the model: {unknown})" if unknown else "")
            + "; name each array after the model input it feeds")
    for name, arr in batch.items():
        t = declared[name]
        if t.dtype is not None and arr.dtype != t.dtype.numpy:
            raise CalibrationError(
                f"{where}: input {name!r} is {arr.dtype}, the model declares "
                f"{t.dtype.numpy}; convert the calibration data (arr.astype)")
        if t.shape is None:
            continue
        if arr.ndim != len(t.shape) or any(
                isinstance(d, int) and d != s for d, s in zip(t.shape, arr.shape, strict=False)):
            raise CalibrationError(
                f"{where}: input {name!r} has shape {tuple(arr.shape)}, the model declares "
                f"{list(t.shape)} (a name or None is any size); reshape the calibration data")
