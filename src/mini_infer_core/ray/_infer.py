"""``infer(dataset, engine, ...)``: the one-liner for the common case."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ray
import ray.data

from .. import Engine, PluginRegistry
from ..errors import DeviceError
from ..session import load
from ._predictor import EnginePredictor, EngineSource

log = logging.getLogger("mini_infer.ray")

__all__ = ["fit_resources", "infer", "ship_engine"]


def _cluster(resource: str) -> float:
    return float(ray.cluster_resources().get(resource, 0.0))  # type: ignore[no-untyped-call]


def fit_resources(workers: int, num_cpus: float, num_gpus: float | None
                  ) -> tuple[float, str | None]:
    """The CPUs each actor can reserve, and a note where that is less than ``num_cpus``.

    The actor pool starts first; where it would hold every CPU of the cluster, the Parquet
    listing, read and write tasks wait for one forever (no error, no message): each actor
    then reserves a share of all but one CPU (at least a fraction; its kernel threads follow,
    at least one). GPUs the cluster lacks would be waited for the same way: that is a
    :class:`DeviceError` at once."""
    if not ray.is_initialized():  # Ray Data starts it on the first execution: unknown yet
        return num_cpus, None
    if num_gpus:
        gpus = _cluster("GPU")
        if gpus < workers * num_gpus:
            raise DeviceError(
                f"device 'cuda', which is unavailable here: {workers} worker(s) x {num_gpus:g} "
                f"GPU need {workers * num_gpus:g} GPU(s), the Ray cluster has {gpus:g}; run "
                "on a cluster with GPUs (ray.init(address=...)), lower workers, or use "
                "device='cpu'")
    total = _cluster("CPU")
    if total <= 1 or workers * num_cpus <= total - 1:
        return num_cpus, None
    shared = (total - 1) / workers
    return shared, (f"{workers} worker(s) x {num_cpus:g} CPU would leave none of the cluster's "
                    f"{total:g} for reading and writing; each worker reserves {shared:.3g} CPU")


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

    ``num_cpus`` (default 1 per actor) is lowered where the pool would hold every CPU of the
    cluster, which would leave the dataset's read and write tasks waiting forever (logged on
    ``mini_infer.ray``); GPUs the cluster lacks are a :class:`DeviceError` at once.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if device is None and num_gpus:
        device = "cuda"
    if device == "cuda" and num_gpus is None:
        num_gpus = 1
    num_cpus, note = fit_resources(workers, 1.0 if num_cpus is None else num_cpus, num_gpus)
    if note is not None:
        log.info("infer: %s", note)
    ref = ship_engine(engine, device=device or "cpu", registry=registry)
    if preserve_order is not None:
        dataset.context.execution_options.preserve_order = preserve_order
    kwargs: dict[str, Any] = {"engine": ref, "device": device, "input_columns": input_columns,
                              "output_columns": output_columns, "drop_inputs": drop_inputs,
                              "num_threads": num_threads}
    map_batches_args["num_cpus"] = num_cpus
    if num_gpus is not None:
        map_batches_args["num_gpus"] = num_gpus
    if runtime_env is not None:
        map_batches_args["runtime_env"] = runtime_env
    return dataset.map_batches(
        EnginePredictor, fn_constructor_kwargs=kwargs,
        compute=ray.data.ActorPoolStrategy(size=workers), batch_size=batch_size,
        batch_format="numpy", **map_batches_args)
