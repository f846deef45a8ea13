"""Entry point of ``mini_infer.plugins``: hands mini-infer this package's creators
(the CPU device itself comes from mini-infer-cpu-plugins)."""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

from mini_infer_core.errors import PluginLoadError
from mini_infer_core.registry import hookimpl


def _compiled_present() -> bool:
    """Whether the compiled extension is installed."""
    return find_spec("mini_infer_cpu_native._kernels") is not None


def _compiled_problem() -> str | None:
    """Why the installed extension cannot be used (None: it can): its ABI version or the
    layout of its argument structs differs from this package's Python side (a stale build).
    Loads the library with ctypes, once per process (a millisecond; NumPy is not imported)."""
    from ._abi import problem

    return problem()


@hookimpl
def mini_infer_plugin_api_version() -> str:
    return "1"


@hookimpl
def mini_infer_creators() -> list[Any]:
    # Without a usable extension these creators would outrank cpu_basic's and then fail to
    # load: the distribution is marked failed instead, and cpu_basic's kernels serve.
    if not _compiled_present():
        raise PluginLoadError(
            "the compiled extension mini_infer_cpu_native._kernels is missing (installed "
            "without a C compiler?); reinstall mini-infer-cpu-native where gcc and the Python "
            "headers are present, or `pip uninstall mini-infer-cpu-native` (mini-infer-cpu-"
            "plugins' NumPy kernels serve meanwhile)")
    problem = _compiled_problem()
    if problem is not None:
        raise PluginLoadError(
            f"the compiled extension cannot be used: {problem} (mini-infer-cpu-plugins' NumPy "
            "kernels serve meanwhile)")
    from .catalog import lazy_creators, reformat_creator

    return [*lazy_creators(), reformat_creator()]
