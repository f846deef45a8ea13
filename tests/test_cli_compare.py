"""``mini-infer compare`` (polygraphy's run --compare), issue 17 item 22: outputs of two backends
on the same inputs, and with ``--per-node`` the first node whose output diverges. The other
side is onnxruntime or onnx's ReferenceEvaluator (independent oracles); a deliberately wrong
kernel installed as a plugin distribution is what the per-node search must find."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from helpers import install_bad_relu, make_model, run_cli
from onnx import TensorProto, helper

from mini_infer_core.cli.compare import tensor_error
from mini_infer_core.cli.main import main


def _compare(capsys: pytest.CaptureFixture[str], *argv: str, status: int = 0) -> dict[str, Any]:
    assert main(["compare", *argv, "--json", "--no-tactic-timing"]) == status
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def _chain() -> onnx.ModelProto:
    """x -> Add -> Relu -> Mul -> Softmax -> y, no node a fusion would absorb."""
    rng = np.random.default_rng(1)
    b = onnx.numpy_helper.from_array(rng.standard_normal((1, 16)).astype(np.float32), "b")
    s = onnx.numpy_helper.from_array(np.full((1, 16), 0.5, np.float32), "s")
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Mul", ["r", "s"], ["m"], name="mul"),
             helper.make_node("Softmax", ["m"], ["y"], axis=-1, name="softmax")]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])], [b, s])


def test_tensor_error_follows_the_stated_tolerance() -> None:
    b = np.array([1.0, 100.0, 0.0], np.float32)
    a = b + np.array([1e-4, 0.05, 0.0], np.float32)
    err = tensor_error(a, b, rtol=1e-3, atol=1e-4)
    assert err["match"] is True  # 0.05 <= 1e-4 + 1e-3 * 100
    assert err["max_abs"] == pytest.approx(0.05, rel=1e-3)
    assert tensor_error(a, b, rtol=1e-4, atol=1e-4)["match"] is False
    assert tensor_error(np.array([np.nan]), np.array([np.nan]), 0, 0)["match"] is True
    assert tensor_error(np.zeros(3), np.zeros(4), 1, 1)["why"].startswith("shapes differ")
    assert tensor_error(np.array([1, 2]), np.array([1, 3]), 1, 1)["match"] is False  # exact


@pytest.mark.parametrize("other", ["onnxruntime", "reference"])
def test_cpu_matches_the_oracles_node_by_node(small_cnn: onnx.ModelProto, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              other: str) -> None:
    path = tmp_path / "cnn.onnx"
    onnx.save(small_cnn, str(path))
    data = _compare(capsys, str(path), "--a", "cpu", "--b", other, "--per-node",
                    "--shape", "x=2,3,8,8")
    assert data["a"] == "mini-infer cpu" and data["b"] == other and data["match"] is True
    (row,) = data["outputs"]
    assert row["output"] == "y" and row["shape"] == [2, 10] and row["max_abs"] < 1e-5
    assert data["inputs"] == {"x": {"shape": [2, 3, 8, 8], "dtype": "float32"}}
    # every node output the engine computes on its own (Conv+Relu may be fused) is compared
    assert data["per_node"]["compared_tensors"] >= 4
    assert data["per_node"]["first_divergence"] is None


def test_per_node_names_the_first_diverging_node_and_its_plugin(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    install_bad_relu(tmp_path, monkeypatch)
    path = tmp_path / "chain.onnx"
    onnx.save(_chain(), str(path))
    data = _compare(capsys, str(path), "--b", "onnxruntime", "--per-node", status=1)
    assert data["match"] is False and data["outputs"][0]["why"].startswith("values differ")
    first = data["per_node"]["first_divergence"]
    assert first["node"] == "relu" and first["op_type"] == "Relu" and first["output"] == "r"
    assert first["inputs_match"] is True
    assert "com.test.bad::Relu" in first["a"] and "mi-test-badrelu" in first["a"]
    # the text says the same, and the exit status is 1 (a mismatch, not an error)
    assert main(["compare", str(path), "--per-node", "--no-tactic-timing"]) == 1
    text = capsys.readouterr().out
    assert "FAIL: 0 of 1 output(s) match" in text
    assert "first divergence at node 'relu' (Relu)" in text and "itself computes" in text
    # without the bad plugin (blocked) both sides agree
    data = _compare(capsys, str(path), "--per-node", "-p", "no:mi-test-badrelu")
    assert data["match"] is True and data["per_node"]["first_divergence"] is None


def test_per_node_on_an_engine_whose_shapes_depend_on_data(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("NonZero", ["r"], ["nz"], name="nonzero"),
             helper.make_node("Cast", ["nz"], ["y"], to=TensorProto.FLOAT, name="cast")]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tmp_path / "nz.onnx"
    onnx.save(model, str(path))
    data = _compare(capsys, str(path), "--b", "reference", "--per-node")
    assert data["match"] is True and data["per_node"]["compared_tensors"] == 3
    assert data["per_node"]["first_divergence"] is None


def test_compare_with_cuda_on_a_machine_without_a_gpu_says_so(tmp_path: Path) -> None:
    from mini_infer_core.registry import discover

    cuda = discover().get_device("cuda")
    if cuda is not None and cuda.availability()[0]:
        pytest.skip("this machine has a usable GPU: the cuda side would run")
    path = tmp_path / "chain.onnx"
    onnx.save(_chain(), str(path))
    proc = run_cli("compare", str(path), "--a", "cpu", "--b", "cuda", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    if cuda is None:
        assert "unknown device 'cuda'" in proc.stderr
    else:
        assert "device 'cuda' is unavailable here: " + cuda.availability()[1] in proc.stderr
    assert "against onnxruntime or reference" in proc.stderr


def test_compare_refuses_what_it_cannot_compare(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "chain.onnx"
    onnx.save(_chain(), str(path))
    assert main(["compare", str(path), "--a", "onnxruntime"]) == 2
    assert "side a is a mini-infer device" in capsys.readouterr().err
    assert main(["compare", str(path), "--b", "tpu"]) == 2
    assert "unknown device 'tpu'" in capsys.readouterr().err
    (tmp_path / "junk.onnx").write_bytes(b"\x00junk")
    assert main(["compare", str(tmp_path / "junk.onnx")]) == 2
    assert "is not an ONNX model" in capsys.readouterr().err


def test_nan_and_inf_are_compared_as_polygraphy_does() -> None:
    one_nan = tensor_error(np.array([1.0, np.nan]), np.array([1.0, 2.0]), 1e-3, 1e-4)
    assert one_nan["match"] is False and one_nan["max_abs"] == np.inf
    inf = tensor_error(np.array([np.inf, -np.inf]), np.array([np.inf, -np.inf]), 0, 0)
    assert inf["match"] is True and inf["max_abs"] == 0.0
