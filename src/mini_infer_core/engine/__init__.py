"""The engine and its file format."""

from .engine import Engine, EngineNode, TensorSpec
from .format import ENGINE_MAGIC, FORMAT_VERSION, read_engine_file, serialize_engine, write_engine

__all__ = ["ENGINE_MAGIC", "FORMAT_VERSION", "Engine", "EngineNode", "TensorSpec",
           "read_engine_file", "serialize_engine", "write_engine"]
