"""Batch inference on Ray Data: build the engine once, run it on every worker.

``mini-infer-core[ray]`` is an optional extra; importing this module without Ray Data raises
:class:`~mini_infer_core.ray._require.RayNotInstalledError` (a ``MiniInferError`` and an
``ImportError``) with the ``pip install`` line. See docs/distributed.md.

::

    import ray
    from mini_infer_core.ray import EnginePredictor, infer

    ds = ray.data.read_parquet("images.parquet")
    out = infer(ds, "model.engine", workers=2, batch_size=64)       # the one-liner
    out = ds.map_batches(EnginePredictor, fn_constructor_kwargs={"engine": ref},
                         compute=ray.data.ActorPoolStrategy(size=2), batch_size=64)
"""

from __future__ import annotations

from ._require import PIP_LINE, RayNotInstalledError, require_ray

require_ray()

from ._infer import infer  # noqa: E402
from ._predictor import EnginePredictor  # noqa: E402

__all__ = ["PIP_LINE", "EnginePredictor", "RayNotInstalledError", "infer"]
