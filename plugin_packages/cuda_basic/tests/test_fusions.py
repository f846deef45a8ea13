"""The cuda Conv and BatchNormalization absorb what follows them (``ConvFusion``:
BatchNormalization, per-channel Mul/Add, a residual, a Relu; ``BatchNormFusion``: per-channel
Mul/Add, a Relu) and still compute what onnxruntime computes: on the NumPy paths, on the GPU
branch with the kernels compiled for the host, and (marked ``gpu``) on a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from cuda_support import NumpyDevice, cupy_or_skip, registry

import mini_infer_core as mi
from mini_infer_core.testing.fusions import fusion_models

pytest.importorskip("mini_infer_cpu_plugins", reason="the host plugins fold constants")

MODELS = fusion_models(seed=1)
IDS = [m[0] for m in MODELS]


def _check(case: tuple[str, Any, dict[str, np.ndarray], list[str]], cuda: Any) -> None:
    name, model, feeds, fused = case
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    config = mi.BuilderConfig(device="cuda")
    sess = mi.InferenceSession(model, config=config, registry=registry(cuda))
    ops = [n.op_type for n in sess.engine.nodes if n.device == "cuda"]
    # Clip is not fused on cuda: the epilogues know Relu only
    assert ops == (["Conv", "Clip"] if name == "scale_shift_clip" else fused), (name, ops)
    got = sess.run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", MODELS, ids=IDS)
def test_fusions_on_the_numpy_paths_match_onnxruntime(case: Any) -> None:
    _check(case, NumpyDevice("cuda"))


@pytest.mark.parametrize("case", MODELS, ids=IDS)
def test_fusions_on_the_host_compiled_gpu_branch_match_onnxruntime(
        case: Any, emulated_gpu: Any) -> None:
    _check(case, NumpyDevice("cuda"))


@pytest.mark.gpu
@pytest.mark.parametrize("case", MODELS, ids=IDS)
def test_fusions_on_the_gpu_match_onnxruntime(case: Any) -> None:
    cupy_or_skip()
    _check(case, None)
