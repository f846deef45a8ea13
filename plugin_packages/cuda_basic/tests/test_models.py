"""Whole models through the cuda plugins without a GPU.

* Cross-building: the nine light models build for device ``cuda`` with ``strict_device``
  (every node on a cuda plugin: shape/type inference, formats, build-time values), constant
  folding done by the host plugins; the engine round-trips through its serialized form.
* Running: a NumPy-backed stand-in of the ``cuda`` device runs engines of randomized light
  models through the cuda plugins (the NumPy paths, or, with ``emulated_gpu``, the GPU
  branch with the CUDA kernels compiled for the host), compared with the cpu plugins.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from cuda_support import NumpyDevice, registry

import mini_infer_core as mi
from mini_infer_core.testing.light_models import (
    LIGHT_MODELS,
    default_inputs,
    load_light_model,
    logits_model,
    randomize_weights,
)

cpu_catalog = pytest.importorskip("mini_infer_cpu_plugins.catalog",
                                  reason="the host plugins fold constants and give references")


def _model(name: str) -> onnx.ModelProto:
    return logits_model(randomize_weights(load_light_model(name), seed=3))


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_cross_builds_for_cuda_with_every_node_on_a_cuda_plugin(name: str
                                                                           ) -> None:
    reg = registry()
    if reg.get_device("cuda").availability()[0]:  # type: ignore[union-attr]
        pytest.skip("a GPU is present: cross-building is for machines without one")
    config = mi.BuilderConfig(device="cuda", strict_device=True)
    engine = mi.load(load_light_model(name), config=config, registry=reg)
    assert engine.nodes and {n.device for n in engine.nodes} == {"cuda"}
    assert {n.plugin.plugin_namespace for n in engine.nodes} == {"mini_infer.cuda"}
    again = mi.Runtime(reg).deserialize_engine(engine.serialize())
    assert [(n.name, n.plugin.serialize()) for n in again.nodes] == \
        [(n.name, n.plugin.serialize()) for n in engine.nodes]


def _compare(name: str, emulate: bool, request: pytest.FixtureRequest) -> None:
    model = _model(name)
    feeds = default_inputs(model)
    want = mi.InferenceSession(model, "cpu", registry=registry()).run(None, feeds)[0]
    if emulate:
        request.getfixturevalue("emulated_gpu")
    config = mi.BuilderConfig(device="cuda", strict_device=True)
    sess = mi.InferenceSession(model, config=config, registry=registry(NumpyDevice("cuda")))
    assert {n.device for n in sess.engine.nodes} == {"cuda"}
    got = sess.run(None, feeds)[0]
    err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    assert got.shape == want.shape and err < 1e-5, f"{name}: relative L2 error {err:.3g}"


@pytest.mark.parametrize("name", ["squeezenet", "shufflenet", "inception_v1"])
def test_light_model_runs_on_the_numpy_paths_like_the_cpu_plugins(
        name: str, request: pytest.FixtureRequest) -> None:
    _compare(name, False, request)


@pytest.mark.parametrize("name", ["squeezenet", "shufflenet", "inception_v1"])
def test_light_model_runs_on_the_gpu_branch_with_host_compiled_kernels(
        name: str, request: pytest.FixtureRequest) -> None:
    _compare(name, True, request)


@pytest.mark.slow
@pytest.mark.parametrize("name", [m for m in LIGHT_MODELS
                                  if m not in ("squeezenet", "shufflenet", "inception_v1")])
def test_other_light_models_run_on_the_gpu_branch_with_host_compiled_kernels(
        name: str, request: pytest.FixtureRequest) -> None:
    _compare(name, True, request)
