"""Runtime: engine files loaded into engines (their execution contexts are the engine
layer's: ``engine/context.py``, re-exported here)."""

from ..engine.context import ExecutionContext
from .runtime import Runtime, load_engine

__all__ = ["ExecutionContext", "Runtime", "load_engine"]
