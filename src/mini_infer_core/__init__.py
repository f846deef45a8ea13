"""mini-infer: a TensorRT-style inference engine for ONNX models whose kernels are plugins.

Three lines::

    import mini_infer_core as mi
    sess = mi.InferenceSession("model.onnx", device="cpu")
    outputs = sess.run(None, {"input": x})
"""

from ._version import __version__
from .builder import Builder, BuilderConfig, OptimizationProfile, build_engine  # noqa: E402
from .engine import Engine  # noqa: E402
from .errors import *  # noqa: E402,F403
from .errors import __all__ as _errors_all  # noqa: E402
from .importer import parse_onnx  # noqa: E402
from .network import Network  # noqa: E402
from .registry import (  # noqa: E402
    PluginRegistry,
    discover,
    get_plugin_registry,
    reset_plugin_registry,
)
from .runtime import ExecutionContext, Runtime, load_engine  # noqa: E402
from .session import InferenceSession, load  # noqa: E402

__all__ = [
    "Builder",
    "BuilderConfig",
    "Engine",
    "ExecutionContext",
    "InferenceSession",
    "Network",
    "OptimizationProfile",
    "PluginRegistry",
    "Runtime",
    "__version__",
    "build_engine",
    "discover",
    "get_plugin_registry",
    "load",
    "load_engine",
    "parse_onnx",
    "reset_plugin_registry",
    *_errors_all,
]
