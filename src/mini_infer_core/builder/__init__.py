"""The builder: Network → Engine (selection, shapes, folding, memory planning)."""

from .builder import Builder, BuilderConfig, OptimizationProfile, build_engine, subgraph_factory

__all__ = ["Builder", "BuilderConfig", "OptimizationProfile", "build_engine",
           "subgraph_factory"]
