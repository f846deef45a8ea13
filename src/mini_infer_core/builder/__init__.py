"""The builder: Network → Engine (selection, shapes, folding, memory planning)."""

from typing import Any

from .builder import Builder, BuilderConfig, OptimizationProfile, build_engine, subgraph_factory

__all__ = ["Builder", "BuilderConfig", "OptimizationProfile", "TimingCache", "build_engine",
           "subgraph_factory"]


def __getattr__(name: str) -> Any:
    """``TimingCache``, imported when first named (a build without tactic timing, a one-off
    session's, never reads a timing cache)."""
    if name == "TimingCache":
        from .timing_cache import TimingCache

        return TimingCache
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
