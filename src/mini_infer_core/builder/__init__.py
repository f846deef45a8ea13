"""The builder: Network → Engine (selection, shapes, folding, memory planning)."""

from .builder import Builder, BuilderConfig, OptimizationProfile, build_engine, subgraph_factory
from .timing_cache import TimingCache

__all__ = ["Builder", "BuilderConfig", "OptimizationProfile", "TimingCache", "build_engine",
           "subgraph_factory"]
