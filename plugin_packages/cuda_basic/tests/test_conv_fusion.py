"""The cuda Conv absorbs what follows it (``ConvFusion``: BatchNormalization, per-channel
Mul/Add, a residual, a Relu) and still computes what onnxruntime computes: on the NumPy paths,
on the GPU branch with the kernels compiled for the host, and (marked ``gpu``) on a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from cuda_support import NumpyDevice, registry

import mini_infer_core as mi
from mini_infer_core.testing.conv_fusions import conv_fusion_models

pytest.importorskip("mini_infer_cpu_plugins", reason="the host plugins fold constants")

MODELS = conv_fusion_models(seed=1)
IDS = [m[0] for m in MODELS]


def _check(case: tuple[str, Any, dict[str, np.ndarray]], cuda: Any) -> None:
    name, model, feeds = case
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    config = mi.BuilderConfig(device="cuda")
    sess = mi.InferenceSession(model, config=config, registry=registry(cuda))
    nodes = sess.engine.nodes
    cuda_nodes = [n.op_type for n in nodes if n.device == "cuda"]
    if name == "scale_shift_clip":  # Clip is not fused on cuda: the epilogues know Relu only
        assert cuda_nodes == ["Conv", "Clip"], cuda_nodes
    else:
        assert cuda_nodes == ["Conv"] * cuda_nodes.count("Conv") and cuda_nodes, \
            f"{name}: not fused: {[n.op_type for n in nodes]}"
    got = sess.run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", MODELS, ids=IDS)
def test_fused_conv_on_the_numpy_paths_matches_onnxruntime(case: Any) -> None:
    _check(case, NumpyDevice("cuda"))


@pytest.mark.parametrize("case", MODELS, ids=IDS)
def test_fused_conv_on_the_host_compiled_gpu_branch_matches_onnxruntime(
        case: Any, emulated_gpu: Any) -> None:
    _check(case, NumpyDevice("cuda"))


@pytest.mark.gpu
@pytest.mark.parametrize("case", MODELS, ids=IDS)
def test_fused_conv_on_the_gpu_matches_onnxruntime(case: Any) -> None:
    from mini_infer_cuda_plugins.device import probe_cuda

    ok, reason = probe_cuda()
    if not ok:
        pytest.skip(f"no usable CUDA device: {reason}")
    _check(case, None)
