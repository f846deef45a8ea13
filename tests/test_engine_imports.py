"""Cold start (issue 30): a fresh process that opens an engine imports the kernel modules of the
creators that engine names and no others (a module's operator classes, its schemas' and its
kernels', are most of what loading an engine costs), and not threadpoolctl: the compiled
pool registers with it when something imports it. Each case runs in a subprocess and its
result is checked against onnxruntime's."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi

#: where the operator-family modules are: the core's schemas and the CPU distributions' kernels
_FAMILIES = ("mini_infer_core.ops.", "mini_infer_cpu_plugins.ops.", "mini_infer_cpu_native.")

#: opens the engine argv[1] through InferenceSession, runs it on argv[2] (x, an .npy), prints
#: its first output, the modules it imported and whether threadpoolctl was among them; with
#: argv[3] == "pools", then imports threadpoolctl and reports the compiled pool
_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import mini_infer_core as mi

    sess = mi.InferenceSession(sys.argv[1])
    (y, *_) = sess.run(None, {"x": np.load(sys.argv[2])})
    found = {"y": y.astype(np.float64).tolist(), "modules": sorted(sys.modules),
             "threadpoolctl": "threadpoolctl" in sys.modules}
    registry = mi.get_plugin_registry()
    found["made"] = len(registry._by_key)  # creators made; the others wait, by identity
    found["known"] = len(registry._by_key) + len(registry._pending)
    if sys.argv[3] == "pools":
        from threadpoolctl import threadpool_info, threadpool_limits
        from mini_infer_cpu_native import _native

        found["pools"] = [(i["user_api"], i["internal_api"]) for i in threadpool_info()]
        with threadpool_limits(1, user_api="mini_infer"):
            found["limited"] = _native.pool_threads()
    print(json.dumps(found))
""")


def _native_usable() -> str | None:
    """Why the compiled kernels cannot serve here (None: they can)."""
    if importlib.util.find_spec("mini_infer_cpu_native._kernels") is None:
        return "mini-infer-cpu-native's compiled extension is not installed"
    from mini_infer_cpu_native._abi import problem

    return problem()


def _open_in_child(engine: Path, x: np.ndarray, tmp_path: Path, pools: bool = False
                   ) -> dict[str, Any]:
    np.save(tmp_path / "x.npy", x)
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(engine), str(tmp_path / "x.npy"),
                           "pools" if pools else "-"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    found["families"] = _families(found["modules"])
    return found


def _families(modules: list[str]) -> list[str]:
    """The operator-family modules among ``modules``: the core's schema modules
    (``mini_infer_core.ops.X``) and the CPU distributions' kernel modules
    (``mini_infer_cpu_plugins.ops.X``, ``mini_infer_cpu_native.X``), private ones and the
    distributions' hooks and catalogs left out."""
    found = []
    for name in modules:
        for prefix in _FAMILIES:
            rest = name.removeprefix(prefix)
            if rest != name and "." not in rest and not rest.startswith("_") \
                    and rest not in ("catalog", "hooks"):
                found.append(name)
    return sorted(found)


def _model(nodes: list[Any], x: list[int], y: list[int], inits: list[Any]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, x)], [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _mlp() -> onnx.ModelProto:
    rng = np.random.default_rng(0)

    def init(name: str, *shape: int) -> Any:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    return _model([helper.make_node("Gemm", ["x", "w1", "b1"], ["a"], transB=1),
                   helper.make_node("Relu", ["a"], ["r"]),
                   helper.make_node("Gemm", ["r", "w2", "b2"], ["l"], transB=1),
                   helper.make_node("Softmax", ["l"], ["y"], axis=1)],
                  [4, 32], [4, 10], [init("w1", 64, 32), init("b1", 64), init("w2", 10, 64),
                                     init("b2", 10)])


def _build(model: onnx.ModelProto, path: Path) -> Path:
    mi.build_engine(mi.parse_onnx(model), mi.BuilderConfig(device="cpu")).save(str(path))
    return path


def _expected(model: onnx.ModelProto, x: np.ndarray) -> Any:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def test_a_relu_engine_imports_the_activation_modules_only(tmp_path: Path) -> None:
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [2, 8], [2, 8], [])
    engine = _build(model, tmp_path / "relu.engine")
    x = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    found = _open_in_child(engine, x, tmp_path)
    np.testing.assert_array_equal(found["y"], _expected(model, x))
    # Relu is cpu-native's blocked.Relu (cpu_basic's function, declaring the channel-blocked
    # formats too), made on first use: its module, cpu_basic's and the schemas', nothing
    # else -- no convolution, no reductions, no elementwise family
    assert found["families"] == ["mini_infer_core.ops.activation",
                                 "mini_infer_cpu_native.blocked",
                                 "mini_infer_cpu_plugins.ops.activation"], found["families"]
    assert not found["threadpoolctl"]


def _mlp_in_child(tmp_path: Path, seed: int, needs: str, pools: bool = False
                  ) -> tuple[onnx.ModelProto, np.ndarray, dict[str, Any]]:
    """The MLP, a random X (from ``seed``) and what a child that opened the MLP's engine and
    ran it on X found; skipped (``needs``: why the compiled kernels are needed) without them."""
    why = _native_usable()
    if why is not None:
        pytest.skip(f"{needs}: {why}")
    model = _mlp()
    engine = _build(model, tmp_path / "mlp.engine")
    x = np.random.default_rng(seed).standard_normal((4, 32)).astype(np.float32)
    return model, x, _open_in_child(engine, x, tmp_path, pools=pools)


def test_an_mlp_engine_imports_its_gemm_and_softmax_modules_only(tmp_path: Path) -> None:
    model, x, found = _mlp_in_child(
        tmp_path, 2, "the compiled Gemm and Softmax are what this engine names")
    np.testing.assert_allclose(found["y"], _expected(model, x), rtol=1e-4, atol=1e-6)
    # the compiled Gemm (its Relu fused) and Softmax (cpu-native) and the families they derive
    # from; not the convolutions, pools and normalizations that share a module with the
    # compiled Conv, nor the other activations (Softmax is a family of its own), nor those
    # made on first use (Erf, Gelu, LayerNormalization: erf, gelu,
    # layer_norm), nor the reductions
    assert found["families"] == [
        "mini_infer_core.ops.gemm", "mini_infer_core.ops.softmax", "mini_infer_cpu_native.gemm",
        "mini_infer_cpu_native.softmax", "mini_infer_cpu_plugins.ops.gemm",
        "mini_infer_cpu_plugins.ops.softmax"], found["families"]
    assert not found["threadpoolctl"]


def test_a_layer_norm_engine_imports_no_activation_family(tmp_path: Path) -> None:
    """LayerNormalization's schema shares the float types of the activations (``FLOATS``,
    now in ``ops._schema``): it once imported the activation family's schemas for that tuple,
    and with them made its classes (issue 30)."""
    rng = np.random.default_rng(5)
    scale = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "s")
    bias = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b")
    model = _model([helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)],
                   [3, 16], [3, 16], [scale, bias])
    engine = _build(model, tmp_path / "ln.engine")
    x = rng.standard_normal((3, 16)).astype(np.float32)
    found = _open_in_child(engine, x, tmp_path)
    np.testing.assert_allclose(found["y"], _expected(model, x), rtol=1e-5, atol=1e-5)
    assert "mini_infer_core.ops.layer_norm" in found["families"], found["families"]
    assert not [f for f in found["families"] if f.endswith((".activation", ".softmax"))], \
        found["families"]


@pytest.mark.parametrize("op, opset, family", [("Gelu", 20, "gelu"),
                                                ("HardSwish", 17, "hardswish")])
def test_a_gelu_or_hardswish_engine_imports_no_other_activation(
        tmp_path: Path, op: str, opset: int, family: str) -> None:
    """A transformer's Gelu and MobileNetV3's HardSwish are families of their own: naming one
    once made the other activations' 30 classes (activation_extra's schemas and kernels)."""
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 16])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    engine = _build(model, tmp_path / f"{family}.engine")
    x = np.random.default_rng(6).standard_normal((3, 16)).astype(np.float32)
    found = _open_in_child(engine, x, tmp_path)
    np.testing.assert_allclose(found["y"], _expected(model, x), rtol=1e-5, atol=1e-6)
    assert f"mini_infer_core.ops.{family}" in found["families"], found["families"]
    assert not [f for f in found["families"]
                if f.endswith((".activation_extra", ".activation", ".math_unary"))], \
        found["families"]


def test_a_convolution_engine_imports_no_pooling_or_normalization(tmp_path: Path) -> None:
    """A Conv + Relu engine (the compiled Conv: cpu-native's ``conv`` module) imports the
    convolution family, not the pooling and normalization ones that once shared its module
    (cpu-native's ``plugins``, with cpu_basic's pool and normalization modules and their
    schemas under them: issue 30)."""
    why = _native_usable()
    if why is not None:
        pytest.skip(f"the compiled Conv is what this engine names: {why}")
    rng = np.random.default_rng(4)
    w = numpy_helper.from_array((rng.standard_normal((16, 8, 3, 3)) * 0.2).astype(np.float32),
                                "w")
    model = _model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                    helper.make_node("Relu", ["c"], ["y"])], [1, 8, 12, 12], [1, 16, 12, 12],
                   [w])
    engine = _build(model, tmp_path / "conv.engine")
    x = rng.standard_normal((1, 8, 12, 12)).astype(np.float32)
    found = _open_in_child(engine, x, tmp_path)
    np.testing.assert_allclose(found["y"], _expected(model, x), rtol=1e-4, atol=1e-5)
    assert "mini_infer_cpu_native.conv" in found["families"], found["families"]
    unwanted = [m for m in found["families"] if m.rsplit(".", 1)[1] in ("pool", "normalization")]
    assert unwanted == [], found["families"]


def test_an_erf_engine_imports_no_unary_math_family(tmp_path: Path) -> None:
    """Erf (torch's exported GELU) is a family of its own: its engine imports the Erf
    modules, not the unary math family's twenty operators and their schemas (issue 30)."""
    model = _model([helper.make_node("Erf", ["x"], ["y"])], [2, 8], [2, 8], [])
    engine = _build(model, tmp_path / "erf.engine")
    x = np.random.default_rng(6).standard_normal((2, 8)).astype(np.float32)
    found = _open_in_child(engine, x, tmp_path)
    np.testing.assert_allclose(found["y"], _expected(model, x), rtol=1e-6, atol=1e-6)
    assert "mini_infer_core.ops.erf" in found["families"], found["families"]
    assert not [m for m in found["families"] if m.endswith(".math_unary")], found["families"]


#: what opening an engine from a valid discovery cache no longer imports (issue 30): pluggy
#: (hooks called directly), importlib.metadata (the cache), logging (until something else
#: imports it), dataclasses and with it inspect's users (``_record``), concurrent.futures,
#: pathlib (with urllib.parse and ipaddress: the CPU budget's cgroup files and the catalogs'
#: folders are os.path strings)
_NOT_ON_THE_ENGINE_PATH = ("pluggy", "importlib.metadata", "logging", "dataclasses",
                           "concurrent.futures", "email", "pathlib")


def test_an_engine_opened_from_the_discovery_cache_imports_no_plugin_machinery(
        tmp_path: Path) -> None:
    model, x, _ = _mlp_in_child(
        tmp_path, 4, "the engine's plugins are the compiled Gemm and Softmax")
    # the first child may have (re)written the discovery cache; the second starts from it
    found = _open_in_child(tmp_path / "mlp.engine", x, tmp_path)
    np.testing.assert_allclose(found["y"], _expected(model, x), rtol=1e-4, atol=1e-6)
    modules = set(found["modules"])
    assert not modules & set(_NOT_ON_THE_ENGINE_PATH), sorted(
        modules & set(_NOT_ON_THE_ENGINE_PATH))
    assert "mini_infer_core._record" in modules  # the data classes' replacement served
    # the creators the engine names were made (Gemm with its Relu fused, Softmax), not the
    # hundreds the distributions provide
    assert 2 <= found["made"] <= 3 and found["known"] > 100, (found["made"], found["known"])


def test_the_compiled_pool_registers_when_threadpoolctl_is_imported_later(tmp_path: Path
                                                                          ) -> None:
    _, _, found = _mlp_in_child(tmp_path, 3, "the compiled pool is what this checks",
                                pools=True)
    assert not found["threadpoolctl"]  # loading and running did not import it
    assert ["mini_infer", "mini_infer_cpu_native"] in found["pools"], found["pools"]
    assert found["limited"] == 1


def test_with_threadpoolctl_calls_back_once_whoever_imports_it() -> None:
    code = textwrap.dedent("""
        import sys
        from mini_infer_core.threads import with_threadpoolctl
        assert "threadpoolctl" not in sys.modules
        seen = []
        with_threadpoolctl(lambda m: seen.append(("before", m.__name__)))
        hooked = len(sys.meta_path)
        import threadpoolctl
        with_threadpoolctl(lambda m: seen.append(("after", m.__name__)))
        import threadpoolctl  # again: nothing more
        print(seen, hooked - len(sys.meta_path))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300).stdout.strip()
    # each callback once, with the module; the import hook gone once it has served
    assert out == "[('before', 'threadpoolctl'), ('after', 'threadpoolctl')] 1", out


#: the execution context's modules for data-dependent nodes (segments, plans per key, If steps)
#: and device graphs: a static engine's run imports none of them (issue 30)
_DYNAMIC_ONLY = ("mini_infer_core.engine.segments", "mini_infer_core.engine.keyed",
                 "mini_infer_core.engine.branch_step", "mini_infer_core.engine._graphs")


def test_a_static_engine_runs_without_the_dynamic_and_graph_modules(tmp_path: Path) -> None:
    model, x, found = _mlp_in_child(tmp_path, 5, "the MLP's engine is the compiled kernels'")
    np.testing.assert_allclose(found["y"], _expected(model, x), rtol=1e-4, atol=1e-6)
    assert not set(found["modules"]) & set(_DYNAMIC_ONLY), sorted(
        set(found["modules"]) & set(_DYNAMIC_ONLY))


def test_a_data_dependent_engine_imports_the_segments_and_runs(tmp_path: Path) -> None:
    # NonZero's output shape follows from X's values: the context runs it in segments
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NonZero", ["r"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [2, None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    engine = _build(model, tmp_path / "nonzero.engine")
    x = np.random.default_rng(6).standard_normal((3, 4)).astype(np.float32)
    found = _open_in_child(engine, x, tmp_path)
    np.testing.assert_array_equal(found["y"], _expected(model, x))
    assert "mini_infer_core.engine.segments" in found["modules"]
    assert "mini_infer_core.engine._graphs" not in found["modules"]
