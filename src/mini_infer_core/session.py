"""InferenceSession: onnxruntime's familiar one-liner on top of Builder/Runtime."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from .builder import Builder, BuilderConfig
from .engine.engine import Engine, TensorSpec
from .engine.format import ENGINE_MAGIC, is_engine_file
from .errors import InputError
from .importer import parse_onnx
from .registry import PluginRegistry
from .runtime import ExecutionContext, Runtime

__all__ = ["InferenceSession", "NodeArg", "load"]


@dataclass(frozen=True)
class NodeArg:
    """Like onnxruntime's NodeArg: name, shape (ints and symbol names), type string."""

    name: str
    shape: list[int | str]
    type: str


def _type_string(spec: TensorSpec) -> str:
    name = onnx.helper.tensor_dtype_to_string(spec.dtype.value).split(".")[-1].lower()
    return f"tensor({name})"


def load(source: str | os.PathLike[str] | bytes | onnx.ModelProto | Engine,
         device: str = "cpu", *, config: BuilderConfig | None = None,
         registry: PluginRegistry | None = None) -> Engine:
    """An Engine from an ONNX model (path, bytes, ModelProto) or an engine file/bytes."""
    if isinstance(source, Engine):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)) and bytes(source[:8]) == ENGINE_MAGIC:
        return Runtime(registry).deserialize_engine(source)
    if isinstance(source, (str, os.PathLike)) and is_engine_file(source):
        return Runtime(registry).load_engine(source)
    cfg = config or BuilderConfig(device=device)
    return Builder(registry).build_engine(parse_onnx(source), cfg)


class InferenceSession:
    """``InferenceSession(path, device="cpu").run(None, {"x": x})``.

    ``path`` may be an ``.onnx`` file (built on the fly), an engine file, ONNX or engine
    bytes, or an ``onnx.ModelProto``. One session may be used from several threads: each
    thread gets its own execution context.
    """

    def __init__(self, path_or_model: str | os.PathLike[str] | bytes | onnx.ModelProto | Engine,
                 device: str = "cpu", *, config: BuilderConfig | None = None,
                 registry: PluginRegistry | None = None) -> None:
        self.engine = load(path_or_model, device, config=config, registry=registry)
        self._local = threading.local()
        self._contexts: list[ExecutionContext] = []
        self._lock = threading.Lock()

    def _context(self) -> ExecutionContext:
        ctx = getattr(self._local, "ctx", None)
        if ctx is None:
            ctx = self.engine.create_execution_context()
            self._local.ctx = ctx
            with self._lock:
                self._contexts.append(ctx)
        return ctx

    def get_inputs(self) -> list[NodeArg]:
        return [NodeArg(t.name, list(t.shape), _type_string(t)) for t in self.engine.inputs]

    def get_outputs(self) -> list[NodeArg]:
        return [NodeArg(t.name, list(t.shape), _type_string(t)) for t in self.engine.outputs]

    def run(self, output_names: list[str] | None, input_feed: dict[str, Any]
            ) -> list[np.ndarray[Any, Any]]:
        names = list(self.engine.output_names) if output_names is None else list(output_names)
        unknown = [n for n in names if n not in self.engine.output_names]
        if unknown:
            raise InputError(f"unknown output name(s) {unknown}; the engine's outputs are "
                             f"{list(self.engine.output_names)}")
        result = self._context().execute(input_feed)
        return [result[n] for n in names]

    def save_engine(self, path: str | os.PathLike[str]) -> None:
        self.engine.save(str(path))

    def close(self) -> None:
        with self._lock:
            for ctx in self._contexts:
                ctx.close()
            self._contexts.clear()
