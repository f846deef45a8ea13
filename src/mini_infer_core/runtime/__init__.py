"""Runtime: engine files loaded, execution contexts."""

from .context import ExecutionContext
from .runtime import Runtime, load_engine

__all__ = ["ExecutionContext", "Runtime", "load_engine"]
