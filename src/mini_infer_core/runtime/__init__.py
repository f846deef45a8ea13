"""Runtime: engine loading, execution contexts and the InferenceSession one-liner."""

from .context import ExecutionContext
from .runtime import Runtime, load_engine
from .session import InferenceSession, NodeArg, load

__all__ = ["ExecutionContext", "InferenceSession", "NodeArg", "Runtime", "load", "load_engine"]
