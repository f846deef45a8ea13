"""``infer(dataset, engine, ...)``: the one-liner for the common case."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ray
import ray.data

from .. import Engine, PluginRegistry
from ..session import load
from ._predictor import EnginePredictor, EngineSource

__all__ = ["infer", "ship_engine"]


def _is_model_proto(value: Any) -> bool:
    """Whether ``value`` is an ``onnx.ModelProto``, without importing onnx: none can exist in
    a process that has not imported it (an engine file's driver never does, issue 30)."""
    onnx = sys.modules.get("onnx")
    return onnx is not None and isinstance(value, onnx.ModelProto)


def ship_engine(engine: EngineSource | Engine, *, device: str = "cpu",
                registry: PluginRegistry | None = None) -> ray.ObjectRef[Any]:
    """Put the engine's bytes in the object store once, building an ONNX model first on the
    driver (a ``.onnx`` path, a ``ModelProto``); an engine file's bytes travel as they are
    and are checked by each worker. Workers then need neither the file nor the build."""
    if isinstance(engine, ray.ObjectRef):
        return engine
    if isinstance(engine, Engine):
        return ray.put(engine.serialize())
    if _is_model_proto(engine) or (
            isinstance(engine, (str, os.PathLike)) and Path(engine).suffix.lower() == ".onnx"):
        built = load(engine, device, registry=registry)
        return ray.put(built.serialize())
    if isinstance(engine, (str, os.PathLike)):
        return ray.put(Path(engine).read_bytes())
    return ray.put(bytes(engine))  # engine bytes, or ONNX bytes each actor builds


def infer(dataset: ray.data.Dataset, engine: EngineSource | Engine, *, workers: int = 1,
          batch_size: int = 64, device: str | None = None, num_cpus: float | None = None,
          num_gpus: float | None = None,
          input_columns: Mapping[str, str] | str | None = None,
          output_columns: Mapping[str, str] | Sequence[str] | None = None,
          drop_inputs: bool = False, num_threads: int | None = None,
          preserve_order: bool | None = None, runtime_env: dict[str, Any] | None = None,
          registry: PluginRegistry | None = None, **map_batches_args: Any) -> ray.data.Dataset:
    """``dataset`` with the engine's outputs added as columns, computed by ``workers`` actors
    (a fixed pool) on batches of ``batch_size`` rows. Lazy, like every Ray Data transform.

    The engine is built (from ONNX) or read (an engine file) once on the driver and shipped
    to the actors through the object store; each actor loads it once and checks its plugins.
    ``device="cuda"`` gives each actor one GPU unless ``num_gpus`` says otherwise, and
    ``num_gpus`` alone implies ``cuda``. ``preserve_order`` sets Ray Data's
    ``execution_options.preserve_order`` on the dataset's context (None: leave it as it is).
    ``runtime_env`` applies to the actors (e.g. ``{"pip": [plugin wheel]}``); other keyword
    arguments go to ``Dataset.map_batches``. See :class:`EnginePredictor` for the rest.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if device is None and num_gpus:
        device = "cuda"
    if device == "cuda" and num_gpus is None:
        num_gpus = 1
    ref = ship_engine(engine, device=device or "cpu", registry=registry)
    if preserve_order is not None:
        dataset.context.execution_options.preserve_order = preserve_order
    kwargs: dict[str, Any] = {"engine": ref, "device": device, "input_columns": input_columns,
                              "output_columns": output_columns, "drop_inputs": drop_inputs,
                              "num_threads": num_threads}
    if num_cpus is not None:
        map_batches_args["num_cpus"] = num_cpus
    if num_gpus is not None:
        map_batches_args["num_gpus"] = num_gpus
    if runtime_env is not None:
        map_batches_args["runtime_env"] = runtime_env
    return dataset.map_batches(
        EnginePredictor, fn_constructor_kwargs=kwargs,
        compute=ray.data.ActorPoolStrategy(size=workers), batch_size=batch_size,
        batch_format="numpy", **map_batches_args)
