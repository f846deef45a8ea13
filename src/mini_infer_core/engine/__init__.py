"""The engine and its file format."""

from .engine import Engine, EngineNode, TensorSpec
from .format import ENGINE_MAGIC, FORMAT_VERSION, read_engine_file, serialize_engine, write_engine
from .memory import MemoryPlan, plan_memory

__all__ = ["ENGINE_MAGIC", "FORMAT_VERSION", "Engine", "EngineNode", "MemoryPlan", "TensorSpec",
           "plan_memory", "read_engine_file", "serialize_engine", "write_engine"]
