"""``mini-infer debug reduce`` (Polygraphy's debug reduce, issue 28 item 2): a failing model shrinks
to the subgraph that still fails. The failures are independent of the reducer: a command that
inspects the model with onnx, or mini-infer with a deliberately wrong plugin against
onnxruntime; the reduced models are checked with onnx's checker and onnxruntime."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from helpers import install_bad_relu, install_plugin_module, make_model, run_cli
from onnx import TensorProto, helper

from mini_infer_core.cli.main import main


def _branchy() -> onnx.ModelProto:
    """Twelve nodes, two branches joined twice; one Relu (node 'relu'), one Sigmoid."""
    rng = np.random.default_rng(3)

    def const(name: str) -> onnx.TensorProto:
        return onnx.numpy_helper.from_array(rng.standard_normal((1, 8)).astype(np.float32),
                                            name)

    mk = helper.make_node
    nodes = [mk("Add", ["x", "c0"], ["a0"], name="add0"),
             mk("Mul", ["a0", "c1"], ["m0"], name="mul0"),
             mk("Tanh", ["a0"], ["t0"], name="tanh0"),
             mk("Add", ["m0", "t0"], ["j0"], name="join0"),
             mk("Sub", ["j0", "c2"], ["s0"], name="sub0"),
             mk("Relu", ["s0"], ["r0"], name="relu"),
             mk("Mul", ["r0", "c3"], ["m1"], name="mul1"),
             mk("Sigmoid", ["s0"], ["g0"], name="sigmoid"),
             mk("Add", ["m1", "g0"], ["j1"], name="join1"),
             mk("Neg", ["j1"], ["n0"], name="neg"),
             mk("Abs", ["n0"], ["b0"], name="abs"),
             mk("Softmax", ["b0"], ["y"], axis=-1, name="softmax")]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
                      [const(f"c{i}") for i in range(4)])


def _reduce(capsys: pytest.CaptureFixture[str], *argv: str, status: int = 0) -> dict[str, Any]:
    assert main(["debug", "reduce", *argv, "--json"]) == status
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def _ort(model: onnx.ModelProto, inputs: dict[str, str]) -> list[np.ndarray]:
    onnx.checker.check_model(model, full_check=True)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {n: np.load(f) for n, f in inputs.items()})  # type: ignore[no-any-return]


def _has_op_script(tmp_path: Path, op: str) -> str:
    """A check command of its own: exits 1 when the model holds a node of ``op`` (read with
    onnx, not with mini-infer)."""
    script = tmp_path / "has_op.py"
    script.write_text(textwrap.dedent(f"""
        import sys, onnx
        m = onnx.load(sys.argv[1])
        def ops(g):
            for n in g.node:
                yield n.op_type
                for a in n.attribute:
                    if a.HasField("g"):
                        yield from ops(a.g)
        sys.exit(1 if {op!r} in set(ops(m.graph)) else 0)
    """))
    return f"{sys.executable} {script} {{model}}"


def test_compare_mode_finds_the_wrong_plugins_node(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    site = install_bad_relu(tmp_path, monkeypatch)
    path, out = tmp_path / "m.onnx", tmp_path / "reduced.onnx"
    onnx.save(_branchy(), str(path))
    data = _reduce(capsys, str(path), "-o", str(out), "--mode", "compare")
    assert data["original_nodes"] == 12 and data["nodes"] == ["relu"]
    reduced = onnx.load(str(out))
    assert [n.op_type for n in reduced.graph.node] == ["Relu"]
    assert [i.name for i in reduced.graph.input] == ["s0"] and set(data["inputs"]) == {"s0"}
    expected = _ort(reduced, data["inputs"])[0]
    # mini-infer with the wrong plugin still differs from onnxruntime on the reduced model
    proc = run_cli("run", str(out), "--input", f"s0={data['inputs']['s0']}", "--output-dir",
                   str(tmp_path / "o"), env={"PYTHONPATH": str(site)})
    assert proc.returncode == 0, proc.stderr
    got = np.load(next((tmp_path / "o").glob("*.npy")))
    assert not np.allclose(got, expected) and np.allclose(got, 1.5 * expected)
    # without the wrong plugin there is nothing to reduce
    assert main(["debug", "reduce", str(path), "-o", str(tmp_path / "r2.onnx"), "--mode",
                 "compare", "-p", "no:mi-test-badrelu"]) == 2
    assert "whole model passes the check" in capsys.readouterr().err


def test_check_command_reduces_to_the_node_it_rejects(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, out = tmp_path / "m.onnx", tmp_path / "small.onnx"
    onnx.save(_branchy(), str(path))
    data = _reduce(capsys, str(path), "-o", str(out), "--check",
                   _has_op_script(tmp_path, "Sigmoid"))
    assert data["nodes"] == ["sigmoid"]
    reduced = onnx.load(str(out))
    (y,) = _ort(reduced, data["inputs"])
    s0 = np.load(data["inputs"]["s0"])
    np.testing.assert_allclose(y, 1 / (1 + np.exp(-s0)), rtol=1e-4, atol=1e-6)
    # the bisection took far fewer checks than one per node pair
    assert len(data["checks"]) <= 12


def test_control_flow_node_keeps_what_its_branches_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An If whose branches read a tensor of the outer graph: the reduced model feeds it."""
    then_g = helper.make_graph([helper.make_node("Mul", ["h", "h"], ["o"])], "then", [],
                               [helper.make_tensor_value_info("o", TensorProto.FLOAT, [3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["h"], ["o"])], "else", [],
                               [helper.make_tensor_value_info("o", TensorProto.FLOAT, [3])])
    nodes = [helper.make_node("Abs", ["x"], ["h"], name="abs"),
             helper.make_node("ReduceSum", ["h"], ["s"], keepdims=0, name="sum"),
             helper.make_node("Greater", ["s", "zero"], ["c"], name="gt"),
             helper.make_node("If", ["c"], ["i"], then_branch=then_g, else_branch=else_g,
                              name="if"),
             helper.make_node("Relu", ["i"], ["y"], name="relu")]
    zero = onnx.numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], [zero])
    path, out = tmp_path / "if.onnx", tmp_path / "if_small.onnx"
    onnx.save(model, str(path))
    data = _reduce(capsys, str(path), "-o", str(out), "--check", _has_op_script(tmp_path, "If"))
    assert data["nodes"] == ["if"]
    reduced = onnx.load(str(out))
    assert {i.name for i in reduced.graph.input} == {"c", "h"}
    (y,) = _ort(reduced, data["inputs"])
    h = np.load(data["inputs"]["h"])
    np.testing.assert_allclose(y, h * h)  # random x >= 0: the sum is positive, then-branch


def test_reduce_refuses_what_it_cannot_do(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_branchy(), str(path))
    out = str(tmp_path / "r.onnx")
    assert main(["debug", "reduce", str(path), "-o", out]) == 2
    assert "exactly one of --check" in capsys.readouterr().err
    assert main(["debug", "reduce", str(path), "-o", out, "--check", "true",
                 "--mode", "compare"]) == 2
    capsys.readouterr()
    # a check that never fails: nothing to reduce, nothing written
    assert main(["debug", "reduce", str(path), "-o", out, "--check", "true"]) == 2
    assert "whole model passes the check" in capsys.readouterr().err
    assert not Path(out).exists()
    assert main(["debug", "reduce", str(tmp_path / "none.onnx"), "-o", out, "--check",
                 "false"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["debug", "reduce", str(path), "-o", str(tmp_path / "no" / "r.onnx"),
                 "--check", "false"]) == 2
    assert "does not exist" in capsys.readouterr().err


_BROKEN_TANH = '''
import numpy as np
from mini_infer_core.ops import activation
from mini_infer_core.plugin import OnnxPluginCreator
from mini_infer_core.registry import hookimpl


class Tanh(activation.Tanh):
    def output_shapes(self, inputs):
        raise ValueError("this plugin cannot say its output shape")  # the build must fail

    def compute(self, x, *, out, **_):
        np.tanh(x, out=out)


@hookimpl
def mini_infer_creators():
    return [OnnxPluginCreator(Tanh, namespace="com.test.broken", devices=("cpu",),
                              priority=100)]
'''


def test_check_reduces_a_model_that_fails_to_build_to_the_failing_node(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    install_plugin_module(site, "mi-test-brokentanh", "0.0.1", "brokentanh", _BROKEN_TANH)
    monkeypatch.setenv("PYTHONPATH", str(site))  # the check command's process sees it too
    monkeypatch.syspath_prepend(str(site))
    path, out = tmp_path / "m.onnx", tmp_path / "small.onnx"
    onnx.save(_branchy(), str(path))
    build = run_cli("build", str(path), "-o", str(tmp_path / "m.engine"), check=False)
    assert build.returncode == 2 and "tanh0" in build.stderr  # it does fail to build
    check = (f"{sys.executable} -m mini_infer_core.cli.main build {{model}} -o "
             f"{tmp_path / 'candidate.engine'} --no-tactic-timing")
    data = _reduce(capsys, str(path), "-o", str(out), "--check", check)
    assert data["nodes"] == ["tanh0"]
    assert [n.op_type for n in onnx.load(str(out)).graph.node] == ["Tanh"]


def test_report_of_a_cpu_engine_with_device_cuda_says_so(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    path, engine = tmp_path / "m.onnx", tmp_path / "m.engine"
    onnx.save(_branchy(), str(path))
    assert main(["build", str(path), "-o", str(engine), "--no-tactic-timing"]) == 0
    assert main(["report", str(engine), "-o", str(tmp_path / "r.html"), "--device",
                 "cuda"]) == 2
    assert "engine built for device 'cpu'" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()
