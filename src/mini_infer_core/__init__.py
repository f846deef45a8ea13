"""mini-infer: a TensorRT-style inference engine for ONNX models whose kernels are plugins.

Three lines::

    import mini_infer_core as mi
    sess = mi.InferenceSession("model.onnx", device="cpu")
    outputs = sess.run(None, {"input": x})

The names below are imported on first use (PEP 562): ``import mini_infer_core`` alone does not
import onnx, so that listing plugins and loading engine files stay fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._debug import install_from_env as _install_debug_logging
from ._version import __version__
from .errors import *  # noqa: F403
from .errors import __all__ as _errors_all

_install_debug_logging()  # MINI_INFER_DEBUG=1/2: lifecycle logging on stderr

if TYPE_CHECKING:
    from .builder import Builder, BuilderConfig, OptimizationProfile, build_engine
    from .engine import Engine
    from .importer import parse_onnx
    from .network import Network
    from .registry import (
        PluginRegistry,
        discover,
        get_plugin_registry,
        reset_plugin_registry,
    )
    from .runtime import ExecutionContext, Runtime, load_engine
    from .session import InferenceSession, load

#: public name -> the submodule that defines it
_LAZY = {
    "Builder": "builder", "BuilderConfig": "builder", "OptimizationProfile": "builder",
    "build_engine": "builder", "Engine": "engine", "parse_onnx": "importer",
    "Network": "network", "PluginRegistry": "registry", "discover": "registry",
    "get_plugin_registry": "registry", "reset_plugin_registry": "registry",
    "ExecutionContext": "runtime", "Runtime": "runtime", "load_engine": "runtime",
    "InferenceSession": "session", "load": "session",
}

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
