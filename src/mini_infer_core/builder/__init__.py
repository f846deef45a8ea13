"""The builder: Network → Engine (selection, shapes, folding, memory planning)."""

from .builder import Builder, BuilderConfig, OptimizationProfile, build_engine
from .memory import MemoryPlan, plan_memory

__all__ = ["Builder", "BuilderConfig", "MemoryPlan", "OptimizationProfile", "build_engine",
           "plan_memory"]
