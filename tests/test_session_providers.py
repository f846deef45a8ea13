"""Issue 29, item 17: ``InferenceSession`` takes onnxruntime's arguments (``sess_options``,
``providers`` as names or ``(name, options)`` pairs, ``provider_options``), so that code
written for onnxruntime runs unchanged; onnxruntime itself is the oracle of what that code
computes and of which providers it reports."""

from __future__ import annotations

import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mini_infer_core as mi

ort = pytest.importorskip("onnxruntime")


def _cuda_usable() -> bool:
    cuda = mi.get_plugin_registry().get_device("cuda")
    return cuda is not None and cuda.availability()[0]


def _written_for_onnxruntime(rt: types.ModuleType, path: str, x: np.ndarray
                             ) -> tuple[Any, list[str]]:
    """Application code as it is written for onnxruntime; ``rt`` is the module it imported."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = rt.InferenceSession(path, so, providers=[("CUDAExecutionProvider", {"device_id": 0}),
                                                    "CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    (y,) = sess.run(None, {name: x})
    return y, sess.get_providers()


def test_code_written_for_onnxruntime_runs_unchanged(cnn_file: Path) -> None:
    x = np.random.default_rng(0).random((1, 3, 8, 8), dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both warn that CUDA is not available (if it is not)
        want, their_providers = _written_for_onnxruntime(ort, str(cnn_file), x)
        got, providers = _written_for_onnxruntime(mi, str(cnn_file), x)  # type: ignore[arg-type]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    if _cuda_usable():
        assert providers == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    else:
        assert providers == their_providers == ["CPUExecutionProvider"]


@pytest.mark.parametrize("providers, options, device", [
    (["CPUExecutionProvider"], None, "cpu"),
    ([("CPUExecutionProvider", {"arena_extend_strategy": "kSameAsRequested"})], None, "cpu"),
    (["CPUExecutionProvider"], [{"x": 1}], "cpu"),
])
def test_providers_map_to_devices(cnn_file: Path, providers: list[Any],
                                  options: list[dict[str, Any]] | None, device: str) -> None:
    sess = mi.InferenceSession(str(cnn_file), providers=providers, provider_options=options)
    assert sess.engine is not None and sess.engine.device_name == device
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert set(sess.get_provider_options()) == {"CPUExecutionProvider"}


def test_cuda_provider_runs_on_cuda_where_it_is_usable(cnn_file: Path) -> None:
    if not _cuda_usable():
        with pytest.warns(UserWarning, match="'CUDAExecutionProvider' is not in available "
                                             "provider names: its device 'cuda'"):
            sess = mi.InferenceSession(str(cnn_file), providers=["CUDAExecutionProvider"])
        assert sess.engine is not None and sess.engine.device_name == "cpu"  # as onnxruntime
        return
    sess = mi.InferenceSession(str(cnn_file), providers=["CUDAExecutionProvider",
                                                         "CPUExecutionProvider"])
    assert sess.engine is not None and sess.engine.device_name == "cuda"
    assert sess.get_providers() == ["CUDAExecutionProvider", "CPUExecutionProvider"]


def test_an_unknown_provider_warns_as_onnxruntime_does(cnn_file: Path) -> None:
    with pytest.warns(UserWarning) as theirs:
        ort.InferenceSession(str(cnn_file), providers=["FooExecutionProvider",
                                                       "CPUExecutionProvider"])
    with pytest.warns(UserWarning) as ours:
        sess = mi.InferenceSession(str(cnn_file), providers=["FooExecutionProvider",
                                                            "CPUExecutionProvider"])
    said = "Specified provider 'FooExecutionProvider' is not in available provider names"
    assert any(said in str(w.message) for w in theirs)
    assert any(said in str(w.message) and "CUDAExecutionProvider" in str(w.message)
               for w in ours)  # and which ones mini-infer knows
    assert sess.get_providers() == ["CPUExecutionProvider"]


@pytest.mark.parametrize("kwargs, said", [
    ({"providers": "CPUExecutionProvider"}, "give a list of provider names"),
    ({"providers": [1]}, "neither a provider name nor a (name, options dict) pair"),
    ({"providers": ["CPUExecutionProvider"], "provider_options": [{}, {}]},
     "one per provider"),
    ({"device": "cpu", "providers": ["CPUExecutionProvider"]}, "give one"),
])
def test_malformed_provider_arguments_are_input_errors(cnn_file: Path, kwargs: dict[str, Any],
                                                       said: str) -> None:
    with pytest.raises(mi.InputError, match=said.replace("(", r"\(").replace(")", r"\)")):
        mi.InferenceSession(str(cnn_file), **kwargs)


def test_sess_options_are_kept_and_device_still_works(cnn_file: Path) -> None:
    so = ort.SessionOptions()
    sess = mi.InferenceSession(str(cnn_file), sess_options=so)
    assert sess.get_session_options() is so and sess.get_providers() == ["CPUExecutionProvider"]
    assert mi.InferenceSession(str(cnn_file), "cpu").get_providers() == ["CPUExecutionProvider"]
    with pytest.raises(mi.InputError, match="sess_options is given twice"):
        mi.InferenceSession(str(cnn_file), so, sess_options=so)
