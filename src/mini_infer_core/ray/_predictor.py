"""``EnginePredictor``: the callable class that ``Dataset.map_batches`` runs in each actor."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import ray

from ..errors import DeviceError, PluginLoadError, PluginNotFoundError
from ..session import InferenceSession
from ..threads import set_num_threads
from ._columns import IOSpec, add_outputs, bind_columns, feeds_from_batch, run_rows

if TYPE_CHECKING:
    import onnx  # an actor that loads an engine file never imports it (issue 30)

__all__ = ["EnginePredictor", "EngineSource"]

EngineSource: TypeAlias = "str | os.PathLike[str] | bytes | onnx.ModelProto | ray.ObjectRef[Any]"
"""An engine file's path or bytes, an ONNX model (path, bytes or ``ModelProto``, built once
per actor), or an ``ObjectRef`` to any of these put in the object store once by the driver."""

_WORKER_HINT = (
    "On a Ray cluster, install the plugin distribution on every worker, e.g. "
    "ray.init(runtime_env={'pip': ['<plugin wheel or requirement>']}) or "
    "map_batches(..., runtime_env={'pip': [...]}); see docs/distributed.md")


def _where() -> str:
    """This worker, for error messages: node address and process id."""
    try:
        node = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
    except Exception:  # noqa: BLE001 - outside a Ray worker
        node = socket.gethostname()
    return f"Ray worker {node} (pid {os.getpid()})"


def _assigned(resource: str) -> float:
    """How much of ``resource`` Ray gave this actor (0 outside Ray)."""
    if not ray.is_initialized():
        return 0.0
    try:
        assigned = ray.get_runtime_context().get_assigned_resources()  # type: ignore[no-untyped-call]
        return float(assigned.get(resource, 0.0))
    except Exception:  # noqa: BLE001 - the driver has no assigned resources
        return 0.0


class EnginePredictor:
    """Runs a mini-infer engine on NumPy batches: ``Dataset.map_batches(EnginePredictor,
    fn_constructor_kwargs={"engine": ...}, compute=ray.data.ActorPoolStrategy(size=N),
    batch_size=B)``.

    The constructor is the worker's start-up check: it loads the engine once (from an engine
    file's path or bytes, an ``ObjectRef`` to them, or an ONNX model it builds once), and an
    engine whose plugin distribution is missing on this worker fails here with
    ``Runtime.load_engine``'s message and ``pip install`` line.

    - ``device``: where an ONNX model is built (an engine file keeps the device it was built
      for); default ``cuda`` when Ray gave the actor a GPU (``num_gpus=1``), else ``cpu``.
    - ``input_columns``: ``{engine input: column}`` where the names differ, or one column name
      for an engine with one input; other inputs read the column of their own name.
    - ``output_columns``: ``{engine output: column}`` or a list of outputs to keep (default:
      every output under its own name). Outputs are added to the batch; a multi-dimensional
      output becomes a tensor column.
    - ``drop_inputs``: drop the columns fed to the engine from the result.
    - ``num_threads``: kernel threads of this actor (default: the CPUs Ray gave it, at least
      one; no limit outside Ray).
    """

    def __init__(self, engine: EngineSource, *, device: str | None = None,
                 input_columns: Mapping[str, str] | str | None = None,
                 output_columns: Mapping[str, str] | Sequence[str] | None = None,
                 drop_inputs: bool = False, num_threads: int | None = None) -> None:
        if device is None:
            device = "cuda" if _assigned("GPU") > 0 else "cpu"
        self.device = device
        cpus = _assigned("CPU")  # a fraction of a CPU gets one thread; none: no limit
        self.num_threads = num_threads if num_threads is not None else (
            max(1, int(cpus)) if cpus > 0 else None)
        if self.num_threads is not None:
            set_num_threads(self.num_threads)  # applied again when a native pool registers
        value: Any = ray.get(engine) if isinstance(engine, ray.ObjectRef) else engine
        source = os.fspath(value) if isinstance(value, os.PathLike) else value
        try:
            self.session = InferenceSession(source, device=device)
        except (PluginNotFoundError, PluginLoadError, DeviceError) as exc:
            raise type(exc)(f"{_where()}: {exc}\n{_WORKER_HINT}") from exc
        self.inputs = [IOSpec.from_node_arg(a) for a in self.session.get_inputs()]
        self.outputs = [IOSpec.from_node_arg(a) for a in self.session.get_outputs()]
        self.binding = bind_columns(self.inputs, self.outputs, input_columns, output_columns)
        self.drop_inputs = drop_inputs

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(batch, Mapping):
            raise TypeError(f"EnginePredictor takes NumPy batches (a dict of arrays), got "
                            f"{type(batch).__name__}: pass batch_format='numpy' to map_batches")
        feeds, rows = feeds_from_batch(batch, self.inputs, self.binding)
        results = run_rows(self.session.run, feeds, rows, self.inputs,
                           list(self.binding.outputs))
        return add_outputs(batch, self.binding, results, rows, self.drop_inputs)

    def __repr__(self) -> str:
        return (f"EnginePredictor(inputs={self.binding.inputs}, outputs={self.binding.outputs}, "
                f"device={self.device!r}, threads={self.num_threads})")
