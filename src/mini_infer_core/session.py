"""InferenceSession: onnxruntime's familiar one-liner on top of Builder/Runtime."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._providers import Providers, providers_of, resolve
from ._record import record
from .engine.engine import Engine
from .engine.format import ENGINE_MAGIC, is_engine_file
from .errors import InputError, InputShapesRequired
from .runtime import ExecutionContext, Runtime

if TYPE_CHECKING:
    # the builder and the importer import onnx (and through it ml_dtypes, half a second):
    # an engine file opened here never needs them, so they are imported where a model is
    # built (issue 30)
    import onnx

    from .builder import BuilderConfig
    from .network import Network
    from .registry import PluginRegistry

__all__ = ["InferenceSession", "NodeArg", "load", "one_off_config"]


@record(frozen=True)
class NodeArg:
    """Like onnxruntime's NodeArg: name, shape (ints and symbol names), type string
    (``tensor(float)``, ``seq(tensor(float))``, ``optional(tensor(int64))``; the shape of a
    sequence is its elements')."""

    name: str
    shape: list[int | str]
    type: str


def load(source: str | os.PathLike[str] | bytes | onnx.ModelProto | Engine,
         device: str = "cpu", *, config: BuilderConfig | None = None,
         registry: PluginRegistry | None = None) -> Engine:
    """An Engine from an ONNX model (path, bytes, ModelProto) or an engine file/bytes."""
    return _load(source, device, config, registry, one_off=False)


def _load(source: str | os.PathLike[str] | bytes | onnx.ModelProto | Engine, device: str,
          config: BuilderConfig | None, registry: PluginRegistry | None, *, one_off: bool
          ) -> Engine:
    """load(); ``one_off``: a model built with no config given is built by
    :func:`one_off_config` (a session's), not ``BuilderConfig(device=device)``."""
    if isinstance(source, Engine):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)) and bytes(source[:8]) == ENGINE_MAGIC:
        return Runtime(registry).deserialize_engine(source)
    if isinstance(source, (str, os.PathLike)) and is_engine_file(source):
        return Runtime(registry).load_engine(source)
    from .builder import Builder, BuilderConfig
    from .importer import parse_onnx

    cfg = config or (one_off_config(device) if one_off else BuilderConfig(device=device))
    return Builder(registry).build_engine(parse_onnx(source), cfg, release_network=True)


def one_off_config(device: str) -> BuilderConfig:
    """The build of a model opened for one session (no config given): no tactic timing.

    Timing runs the whole engine once per tactic index on random inputs, which costs more
    than a small model's whole start; without it each plugin keeps its own choice for its
    shapes (cpu-native's Conv: Winograd where its heuristic says it wins) and formats come
    from the cost model. ``benchmarks/tactic_heuristic.py`` measures what that costs in
    steady state (docs/performance.md, "Cold start"); a deployer who wants the timed choice
    builds an engine once (``mini-infer build``) or passes ``config=BuilderConfig()``."""
    from .builder import BuilderConfig

    return BuilderConfig(device=device, time_tactics=False)


class _PerShape:
    """A model built once per set of input shapes (at most ``capacity`` kept), for a network
    whose shapes cannot be worked out for every input shape at once (as many kept as
    ``MINI_INFER_PLAN_CACHE`` plans, default 8)."""

    def __init__(self, network: Network, config: BuilderConfig,
                 registry: PluginRegistry | None) -> None:
        self.network, self.config, self.registry = network, config, registry
        self.capacity = max(1, int(os.environ.get("MINI_INFER_PLAN_CACHE", "8")))
        self.engines: OrderedDict[tuple[Any, ...], Engine] = OrderedDict()
        self.lock = threading.Lock()

    def engine(self, feeds: Mapping[str, Any]) -> Engine:
        shapes = {t.name: tuple(np.shape(feeds[t.name])) for t in self.network.inputs
                  if t.name in feeds and t.value_kind.is_tensor}
        key = tuple(sorted(shapes.items()))
        with self.lock:
            engine = self.engines.get(key)
            if engine is None:
                import dataclasses

                from .builder import Builder

                config = dataclasses.replace(self.config, input_shapes=shapes)
                engine = Builder(self.registry).build_engine(self.network, config)
                self.engines[key] = engine
                while len(self.engines) > self.capacity:
                    self.engines.popitem(last=False)
            self.engines.move_to_end(key)
            return engine


class InferenceSession:
    """``InferenceSession(path, device="cpu").run(None, {"x": x})``.

    ``path`` may be an ``.onnx`` file (built on the fly: without a ``config``, as for one
    session, with no tactic timing, see :func:`one_off_config`), an engine file, ONNX or
    engine bytes, or an ``onnx.ModelProto``. One session may be used from several threads: each
    thread gets its own execution context. A model whose shapes can be worked out only for
    given input shapes (:class:`~mini_infer_core.errors.InputShapesRequired`) is built for
    the shapes of each run, once per set of shapes (``engine`` is then None).

    onnxruntime's arguments are accepted, so that code written for it runs unchanged:
    ``InferenceSession(path, sess_options, providers, provider_options)``. The first provider
    usable here picks the device (``CPUExecutionProvider``: cpu, ``CUDAExecutionProvider``:
    cuda); others are skipped with a warning, as onnxruntime does (``_providers.py``).
    ``sess_options`` (an onnxruntime ``SessionOptions``) is accepted and not applied: the
    builder decides what onnxruntime's options tune, and thread pools are process-wide
    (``mini_infer_core.threads.set_num_threads``).
    """

    def __init__(self, path_or_model: str | os.PathLike[str] | bytes | onnx.ModelProto | Engine,
                 device: str | Any = None, providers: Providers | None = None,
                 provider_options: Sequence[Mapping[str, Any]] | None = None, *,
                 sess_options: Any = None, config: BuilderConfig | None = None,
                 registry: PluginRegistry | None = None) -> None:
        if device is not None and not isinstance(device, str):  # onnxruntime's sess_options
            if sess_options is not None:
                raise InputError("sess_options is given twice (the second argument and "
                                 "sess_options=)")
            sess_options, device = device, None
        self._sess_options = sess_options
        self._provider_options: dict[str, dict[str, str]] = {}
        if providers is not None or provider_options is not None:
            if device is not None:
                raise InputError(f"device={device!r} and providers= each choose the device; "
                                 "give one")
            device, self._provider_options = resolve(providers or [], provider_options,
                                                     registry)
        device = device or "cpu"
        self._device = config.device if config is not None else device
        self._per_shape: _PerShape | None = None
        try:
            self.engine: Engine | None = _load(path_or_model, device, config, registry,
                                               one_off=True)
        except InputShapesRequired:
            if isinstance(path_or_model, Engine):
                raise
            from .importer import parse_onnx

            self.engine = None
            self._per_shape = _PerShape(parse_onnx(path_or_model),
                                        config or one_off_config(device), registry)
        self._local = threading.local()
        self._contexts: list[ExecutionContext] = []
        self._lock = threading.Lock()

    def _context(self, engine: Engine) -> ExecutionContext:
        try:
            mine: dict[int, ExecutionContext] = self._local.contexts
        except AttributeError:  # this thread's first run
            mine = self._local.contexts = {}
        ctx = mine.get(id(engine))
        if ctx is None or ctx.engine is not engine:
            ctx = mine[id(engine)] = engine.create_execution_context()
            with self._lock:
                self._contexts.append(ctx)
        if engine is self.engine:  # what run() tries first in this thread
            self._local.context = ctx
        return ctx

    def _declared(self, outputs: bool) -> list[NodeArg]:
        if self.engine is not None:
            specs = self.engine.outputs if outputs else self.engine.inputs
            return [NodeArg(t.name, list(t.shape), t.type_string) for t in specs]
        assert self._per_shape is not None
        infos = self._per_shape.network.outputs if outputs else self._per_shape.network.inputs
        return [NodeArg(t.name, [d if d is not None else "?" for d in t.shape or []],
                        t.value_kind.type_string(t.dtype))
                for t in infos]

    def get_providers(self) -> list[str]:
        """onnxruntime's names of the devices this session runs on: its own, then the CPU's
        (``["CUDAExecutionProvider", "CPUExecutionProvider"]`` on cuda)."""
        return providers_of(self.engine.device_name if self.engine is not None
                            else self._device)

    def get_provider_options(self) -> dict[str, dict[str, str]]:
        """The options given with ``providers``/``provider_options``, by provider name."""
        return {name: dict(options) for name, options in self._provider_options.items()}

    def get_session_options(self) -> Any:
        """The ``sess_options`` given (None where none was)."""
        return self._sess_options

    def get_inputs(self) -> list[NodeArg]:
        return self._declared(outputs=False)

    def get_outputs(self) -> list[NodeArg]:
        return self._declared(outputs=True)

    def run(self, output_names: list[str] | None, input_feed: dict[str, Any]
            ) -> list[Any]:
        """The outputs, in order: arrays; a sequence as a list of arrays, an optional as
        None (empty) or its value, a map as a dict (as onnxruntime returns them)."""
        if output_names is None:  # a run like this thread's last: its plan's own function
            ctx: ExecutionContext | None = getattr(self._local, "context", None)
            out = ctx.run_direct(input_feed) if ctx is not None else None
            if out is not None:
                return out
        engine = self.engine if self._per_shape is None else self._per_shape.engine(input_feed)
        assert engine is not None
        if output_names is None:
            names: Sequence[str] = engine.output_names
        else:
            names = list(output_names)
            unknown = [n for n in names if n not in engine.output_names]
            if unknown:
                raise InputError(f"unknown output name(s) {unknown}; the engine's outputs "
                                 f"are {list(engine.output_names)}")
        result = self._context(engine).execute(input_feed)
        return [result[n] for n in names]

    def save_engine(self, path: str | os.PathLike[str]) -> None:
        if self.engine is None:
            raise InputShapesRequired(
                "this model is built per input shape: build an engine for given shapes "
                "(mini-infer build --shape NAME=D0,D1,.., BuilderConfig(input_shapes=...))")
        self.engine.save(str(path))

    def close(self) -> None:
        with self._lock:
            for ctx in self._contexts:
                ctx.close()
            self._contexts.clear()
