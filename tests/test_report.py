"""The engine report (issue 28 item 1) opened in a real browser: Debian's chromium driven by
Playwright, for a CNN, a transformer block and a model with control flow. What is checked is
what a user sees: no console errors, every engine node in the graph, search selecting a node,
one latency bar per profiled node, no network request; and that a 1,000-node model's report is
usable within 3 s."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from helpers import make_model, run_cli
from onnx import TensorProto, helper

import mini_infer_core as mi

pytestmark = pytest.mark.slow
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: scripts/setup.sh installs Debian's chromium")
        pytest.skip("Debian's chromium is not installed (scripts/setup.sh installs it when run "
                    "as root: apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed "
                                   "(the [test] extra has it)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def _init(rng: np.random.Generator, name: str, *shape: int) -> onnx.TensorProto:
    return onnx.numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32),
                                        name)


def _cnn() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    mk = helper.make_node
    nodes = [mk("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             mk("Relu", ["c1"], ["r1"], name="relu1"),
             mk("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=8, name="dwconv"),
             mk("Relu", ["c2"], ["r2"], name="relu2"),
             mk("Add", ["r1", "r2"], ["s"], name="residual"),
             mk("MaxPool", ["s"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
             mk("GlobalAveragePool", ["p"], ["g"], name="gap"),
             mk("Flatten", ["g"], ["f"], name="flatten"),
             mk("Gemm", ["f", "fc", "fcb"], ["l"], transB=1, name="fc"),
             mk("Softmax", ["l"], ["y"], name="softmax")]
    inits = [_init(rng, "w1", 8, 3, 3, 3), _init(rng, "b1", 8), _init(rng, "w2", 8, 1, 3, 3),
             _init(rng, "fc", 10, 8), _init(rng, "fcb", 10)]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                            [1, 3, 16, 16])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)


def _transformer() -> onnx.ModelProto:
    """One encoder block: LayerNorm, two-head attention, residual, MLP."""
    rng = np.random.default_rng(1)
    mk, d, h = helper.make_node, 16, 2
    shape = onnx.numpy_helper.from_array(np.array([1, 8, h, d // h], np.int64), "heads")
    back = onnx.numpy_helper.from_array(np.array([1, 8, d], np.int64), "back")
    scale = onnx.numpy_helper.from_array(np.array(1 / np.sqrt(d // h), np.float32), "scale")
    nodes = [mk("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1, name="ln")]
    for p in "qkv":
        nodes += [mk("MatMul", ["n", f"w{p}"], [f"{p}0"], name=f"proj_{p}"),
                  mk("Reshape", [f"{p}0", "heads"], [f"{p}1"], name=f"split_{p}"),
                  mk("Transpose", [f"{p}1"], [f"{p}2"],
                     perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3], name=f"heads_{p}")]
    nodes += [mk("MatMul", ["q2", "k2"], ["att0"], name="scores"),
              mk("Mul", ["att0", "scale"], ["att1"], name="scale_scores"),
              mk("Softmax", ["att1"], ["att2"], axis=-1, name="softmax"),
              mk("MatMul", ["att2", "v2"], ["ctx0"], name="context"),
              mk("Transpose", ["ctx0"], ["ctx1"], perm=[0, 2, 1, 3], name="merge_t"),
              mk("Reshape", ["ctx1", "back"], ["ctx2"], name="merge"),
              mk("MatMul", ["ctx2", "wo"], ["o"], name="out_proj"),
              mk("Add", ["o", "x"], ["res"], name="residual"),
              mk("MatMul", ["res", "w1"], ["h0"], name="mlp_up"),
              mk("Relu", ["h0"], ["h1"], name="mlp_act"),
              mk("MatMul", ["h1", "w2"], ["h2"], name="mlp_down"),
              mk("Add", ["h2", "res"], ["y"], name="residual2")]
    inits = [onnx.numpy_helper.from_array(np.ones(d, np.float32), "g"),
             onnx.numpy_helper.from_array(np.zeros(d, np.float32), "b"), shape, back, scale,
             *(_init(rng, f"w{p}", d, d) for p in "qkvo"), _init(rng, "w1", d, 4 * d),
             _init(rng, "w2", 4 * d, d)]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, d])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, d])], inits)


def _control_flow() -> onnx.ModelProto:
    """An If on the input's values (both branches keep the shape), then a Loop of 3 steps."""
    out = helper.make_tensor_value_info("o", TensorProto.FLOAT, [4])
    then_g = helper.make_graph([helper.make_node("Mul", ["a", "a"], ["o"])], "then", [], [out])
    else_g = helper.make_graph([helper.make_node("Neg", ["a"], ["o"])], "else", [], [out])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "one"], ["acc_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [4])])
    mk = helper.make_node
    nodes = [mk("Abs", ["x"], ["a"], name="abs"),
             mk("ReduceSum", ["a"], ["s"], keepdims=0, name="sum"),
             mk("Greater", ["s", "limit"], ["c"], name="gt"),
             mk("If", ["c"], ["i"], then_branch=then_g, else_branch=else_g, name="if"),
             mk("Loop", ["trips", "", "i"], ["y"], body=body, name="loop")]
    inits = [onnx.numpy_helper.from_array(np.array(1.0, np.float32), "limit"),
             onnx.numpy_helper.from_array(np.array(3, np.int64), "trips"),
             onnx.numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], inits)


def _chain(n: int) -> onnx.ModelProto:
    """``n`` nodes that no fusion joins: blocks of Mul, Sin, a residual Add and Abs."""
    mk, nodes, prev = helper.make_node, [], "x"
    for i in range(n):
        op, out = ("Mul", "Sin", "Add", "Abs")[i % 4], f"t{i}"
        ins = {"Mul": [prev, "k"], "Add": [prev, f"t{max(i - 3, 0)}"]}.get(op, [prev])
        nodes.append(mk(op, ins, [out], name=f"n{i}_{op.lower()}"))
        prev = out
    nodes[-1].output[0] = "y"
    k = onnx.numpy_helper.from_array(np.full((1, 8), 0.5, np.float32), "k")
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [k])


def _open(browser: Any, path: Path) -> tuple[Any, list[str], list[str], float]:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    start = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_function("window.miReport && window.miReport.ready", timeout=30000)
    return page, errors, requests, time.perf_counter() - start


@pytest.mark.parametrize("make", [_cnn, _transformer, _control_flow],
                         ids=["cnn", "transformer", "control-flow"])
def test_report_in_chromium(browser: Any, tmp_path: Path, make: Any) -> None:
    model = make()
    path, html = tmp_path / "m.onnx", tmp_path / "report.html"
    onnx.save(model, str(path))
    proc = run_cli("report", str(path), "-o", str(html), "--compare", "onnxruntime",
                   "--runs", "3", "--no-tactic-timing")
    assert proc.returncode == 0, proc.stderr
    # built as the report's was (untimed: formats from the cost model, the same each time)
    engine = mi.build_engine(mi.parse_onnx(model), mi.BuilderConfig(time_tactics=False))
    names = [nd.name for nd in engine.nodes]
    page, errors, requests, _ = _open(browser, html)
    assert errors == []
    assert requests == [html.as_uri()], "the report asked for something outside itself"
    shown = page.eval_on_selector_all("#graph-svg .node[data-node]",
                                      "els => els.map(e => e.getAttribute('data-node'))")
    assert sorted(n for n in shown if n) == sorted(names)
    target = names[len(names) // 2]
    page.fill("#search", target)
    assert page.evaluate("window.miReport.selected") == target
    assert page.get_attribute(f'#graph-svg .node[data-node="{target}"]', "class").split()[-1] \
        == "selected"
    assert target in page.inner_text("#details")
    page.click("nav button[data-view=latency]")
    page.wait_for_function("window.miReport.rendered.latency === true")
    bars = page.eval_on_selector_all("#chart-latency g.mark-rect.role-mark path",
                                     "els => els.length")
    assert bars == len(names) == len(page.evaluate("window.miReport.data.profile"))
    assert page.evaluate("window.miReport.data.ort_profile.length") > 0
    page.click("nav button[data-view=memory]")
    page.wait_for_function("window.miReport.rendered.memory === true")
    memory = page.evaluate("window.miReport.data.memory")
    if memory is not None:  # planned (static shapes): one lifetime bar per planned tensor
        assert page.eval_on_selector_all("#chart-memory g.mark-rect.role-mark path",
                                         "els => els.length") == len(memory["tensors"])
    page.close()


def test_fused_nodes_expand_into_what_they_replaced(browser: Any, tmp_path: Path) -> None:
    engine = mi.build_engine(mi.parse_onnx(_cnn()))
    html = engine.report(tmp_path / "r.html", runs=2)
    fused = engine.build_info["fused"]
    assert any("'relu1' into Conv 'conv1'" in f for f in fused)
    page, errors, _, _ = _open(browser, html)
    page.evaluate("window.miReport.toggle('conv1')")
    text = page.text_content('#graph-svg .node[data-node="conv1"]') or ""
    assert "+ Relu relu1" in text and errors == []
    page.close()


def test_diff_of_two_builds(browser: Any, tmp_path: Path) -> None:
    model = _cnn()
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    a, b = tmp_path / "a.engine", tmp_path / "b.engine"
    assert run_cli("build", str(path), "-o", str(a), "--no-tactic-timing").returncode == 0
    assert run_cli("build", str(path), "-o", str(b), "--no-tactic-timing", "-p",
                   "no:mini-infer-cpu-native").returncode == 0
    html = tmp_path / "diff.html"
    proc = run_cli("report", str(a), "-o", str(html), "--diff", str(b), "--no-profile")
    assert proc.returncode == 0, proc.stderr
    page, errors, _, _ = _open(browser, html)
    diff = page.evaluate("window.miReport.data.diff")
    assert {c["what"] for c in diff["changed"]} >= {"distribution", "plugin"}
    page.click("nav button[data-view=diff]")
    assert "mini-infer-cpu-native" in page.inner_text("#diff-body") and errors == []
    page.close()


def test_a_1000_node_report_is_usable_within_3_seconds(browser: Any, tmp_path: Path) -> None:
    model = _chain(1000)
    engine = mi.build_engine(mi.parse_onnx(model), mi.BuilderConfig(time_tactics=False))
    assert len(engine.nodes) == 1000
    html = engine.report(tmp_path / "big.html", runs=1)
    page, errors, _, took = _open(browser, html)
    target = engine.nodes[len(engine.nodes) // 2].name
    start = time.perf_counter()
    page.fill("#search", target)
    assert page.evaluate("window.miReport.selected") == target
    took += time.perf_counter() - start
    print(f"1,000-node report: open, laid out, drawn and a search in {took:.2f} s")
    assert took < 3.0 and errors == []
    page.close()
