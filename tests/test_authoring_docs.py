"""Every snippet of docs/plugin-authoring.md works as written (issue 17, item 18).

Each Python block is run with the names the guide says come from elsewhere (NumPy, the plugin
API, "your package's base", a device library) and its result checked: plugin classes through
the plugin kit (against NumPy or onnx's ReferenceEvaluator) and, where the guide says so,
through an engine; the hooks module through the loader that validates distributions. A block
no check knows fails the test, so a new snippet comes with its check. The pyproject block is
the example distribution's own, every ``mini-infer`` command line parses, and each
``python -c`` line runs. The README names ``scripts/setup.sh``, which its two commands begin with.
"""

from __future__ import annotations

import re
import shlex
import struct
import sys
import tomllib
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import ROOT
from onnx import TensorProto, helper
from packaging.requirements import Requirement

import mini_infer_core as mi
from mini_infer_core.cli.main import _parser, main
from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DataType, LazyPluginCreator, OnnxPlugin, OnnxPluginCreator
from mini_infer_core.registry import PluginRegistry, discover, load_plugin_module
from mini_infer_core.testing import plugin_kit

DOC = ROOT / "docs" / "plugin-authoring.md"
TEXT = DOC.read_text()
BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```", TEXT, flags=re.S | re.M)
X = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)


def _python(marker: str) -> str:
    found = [code for lang, code in BLOCKS if lang == "python" and marker in code]
    assert len(found) == 1, f"{len(found)} python blocks contain {marker!r}"
    return str(found[0])


def _run(code: str, **names: Any) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": "doc_snippet", "np": np, "struct": struct,
                          "OnnxPlugin": OnnxPlugin, "OnnxPluginCreator": OnnxPluginCreator,
                          "PluginInterfaceError": PluginInterfaceError, **names}
    exec(compile(code, str(DOC), "exec"), ns)
    return ns


def numpy_l2norm(x: Any, epsilon: float, axis: int) -> Any:
    return x / np.sqrt(np.sum(x * x, axis=axis, keepdims=True) + epsilon)


def _section2_l2norm() -> type[OnnxPlugin]:
    cls: type[OnnxPlugin] = _run(_python('class L2Norm(OnnxPlugin):\n    domain = '))["L2Norm"]
    return cls


def check_kernel() -> None:
    creator = OnnxPluginCreator(_section2_l2norm(), namespace="doc")
    report = plugin_kit.check_plugin(creator, {"epsilon": 1e-3, "axis": 1}, [X])
    np.testing.assert_allclose(report.outputs[0], numpy_l2norm(X, 1e-3, 1), rtol=1e-5)


def check_schema_kernel() -> None:
    base = type("MyPlugin", (OnnxPlugin,), {})  # "your package's base", as CpuPlugin is
    ns = _run(_python("class LeakyRelu(MyPlugin"), MyPlugin=base)
    creator = OnnxPluginCreator(ns["LeakyRelu"], namespace="doc")
    report = plugin_kit.check_plugin(creator, {"alpha": 0.3}, [X], opset=16)
    assert any("ReferenceEvaluator" in c for c in report.checks)


def check_num_outputs() -> None:
    minmax = _run(_python("class MinMax(OnnxPlugin)"))["MinMax"]
    (alone,) = plugin_kit.check_plugin(OnnxPluginCreator(minmax, namespace="doc"), {},
                                       [X]).outputs
    np.testing.assert_array_equal(alone, X.min(axis=-1))
    # through an engine, from a lazy creator that does not list the hidden field
    module = types.ModuleType("doc_minmax_kernels")
    module.MinMax = minmax  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        reg = discover()
        reg.register_creator(LazyPluginCreator(
            f"{module.__name__}:MinMax", name="MinMax", domain="com.example",
            namespace="doc", field_names=()))
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])
        outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3, 4]) for n in "ab"]
        node = helper.make_node("MinMax", ["x"], ["a", "b"], domain="com.example")
        model = helper.make_model(helper.make_graph([node], "g", [x], outs), opset_imports=[
            helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
        with mi.load(model, registry=reg).create_execution_context() as ctx:
            got = ctx.execute({"x": X})
    finally:
        del sys.modules[module.__name__]
    np.testing.assert_array_equal(got["a"], X.min(axis=-1))
    np.testing.assert_array_equal(got["b"], X.max(axis=-1))


def check_serialization() -> None:
    # the snippet shows only what section 3 adds to section 2's class
    ns = _run(_python("_RECORD = struct.Struct"), OnnxPlugin=_section2_l2norm())
    creator = ns["L2NormCreatorType"](ns["L2Norm"], namespace="com.example")
    report = plugin_kit.check_plugin(creator, {"epsilon": 1e-2, "axis": 2}, [X])
    np.testing.assert_allclose(report.outputs[0], numpy_l2norm(X, 1e-2, 2), rtol=1e-5)
    assert creator.create_plugin("p", {"epsilon": 1e-2}).serialize()[:4] == b"L2NM"
    with pytest.raises(PluginInterfaceError, match="not an L2Norm record"):
        creator.deserialize_plugin("p", b"MIPF\x01")


def check_hooks() -> None:
    module = types.ModuleType("doc_hooks")
    exec(compile(_python("def mini_infer_creators"), str(DOC), "exec"), module.__dict__)
    reg = PluginRegistry()
    names, devices = load_plugin_module(reg, module, distribution="doc-hooks", version="0")
    assert names == ["com.example::L2Norm"] and devices == []
    rec = reg.get_creator("L2Norm", "1", "com.example")
    assert rec is not None and isinstance(rec.creator, LazyPluginCreator)
    plugin = rec.creator.create_plugin("p", {"epsilon": 1e-3})  # its target imports
    np.testing.assert_allclose(plugin_kit.run_plugin(plugin, [X])[0],
                               numpy_l2norm(X, 1e-3, -1), rtol=1e-5)


def check_kit_test() -> None:
    from mini_infer_l2norm.plugin import L2NormCreator

    ns = _run(_python("def test_l2norm_passes_the_plugin_kit"), L2NormCreator=L2NormCreator,
              numpy_l2norm=numpy_l2norm)
    ns["test_l2norm_passes_the_plugin_kit"](plugin_kit)


def check_backend() -> None:
    my_lib = types.SimpleNamespace(relu=lambda x, out: np.maximum(x, 0, out=out),
                                   add=lambda a, b, out: np.add(a, b, out=out))
    ns = _run(_python("class MyPlugin(OnnxPlugin):"), MY_DEVICE_TYPES=(DataType.FLOAT,),
              my_lib=my_lib)
    for op, inputs in (("Relu", [X]), ("Add", [X, X[0, 0]])):
        creator = OnnxPluginCreator(ns[op], namespace="doc")
        report = plugin_kit.check_plugin(creator, {}, inputs, opset=17)
        assert any("ReferenceEvaluator" in c for c in report.checks)
    refused = ns["Relu"]("r")
    desc = mi.plugin.PluginTensorDesc((2,), DataType.DOUBLE)
    assert not refused.supports_format_combination(0, [desc, desc], 1)


CHECKS: dict[str, Callable[[], None]] = {
    'class L2Norm(OnnxPlugin):\n    domain = ': check_kernel,
    "class LeakyRelu(MyPlugin": check_schema_kernel,
    "class MinMax(OnnxPlugin)": check_num_outputs,
    "_RECORD = struct.Struct": check_serialization,
    "def mini_infer_creators": check_hooks,
    "def test_l2norm_passes_the_plugin_kit": check_kit_test,
    "class MyPlugin(OnnxPlugin):": check_backend,
}


def test_every_python_block_has_a_check() -> None:
    blocks = [code for lang, code in BLOCKS if lang == "python"]
    unchecked = [code.splitlines()[0] for code in blocks
                 if sum(marker in code for marker in CHECKS) != 1]
    assert not unchecked, f"python blocks without exactly one check: {unchecked}"
    assert len(blocks) == len(CHECKS)


@pytest.mark.parametrize("marker", list(CHECKS), ids=lambda m: m.split("(")[0].split()[-1])
def test_python_block(marker: str) -> None:
    CHECKS[marker]()


def test_the_pyproject_block_is_the_examples_and_has_what_the_scaffold_adds(
        tmp_path: Path) -> None:
    (block,) = [code for lang, code in BLOCKS if lang == "toml"]
    shown = tomllib.loads(block)["project"]
    real = tomllib.loads((ROOT / "examples/plugins/l2norm/pyproject.toml").read_text())["project"]
    for key in ("name", "version", "dependencies", "entry-points"):
        assert shown[key] == real[key], key
    assert main(["plugins", "new", "acme-docs", "--dir", str(tmp_path)]) == 0
    made = tomllib.loads((tmp_path / "acme-docs" / "pyproject.toml").read_text())["project"]
    names = {Requirement(r).name for r in shown["dependencies"]}
    assert {Requirement(r).name for r in made["dependencies"]} <= names


def _command_lines() -> Iterator[list[str]]:
    for lang, code in BLOCKS:
        if lang != "bash":
            continue
        for line in code.splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words[:1] == ["mini-infer"]:
                    yield words[1:]


def test_every_mini_infer_command_line_parses() -> None:
    lines = list(_command_lines())
    assert ["plugins", "--check"] in lines
    for argv in lines:
        _parser().parse_args(argv)  # SystemExit on an unknown command or option


def test_every_python_c_line_runs() -> None:
    lines = re.findall(r'`python -c "([^"`]+)"`', TEXT)
    assert lines
    for code in lines:
        exec(compile(code, str(DOC), "exec"), {})


def test_the_readme_names_setup_sh_and_the_scripts_it_says_begin_with_it() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "bash scripts/setup.sh" in readme
    assert (ROOT / "scripts" / "setup.sh").is_file()
    # "Both begin with `bash scripts/setup.sh`": the two commands named just above
    commands = re.findall(r"^bash (scripts/\w+\.sh)", readme.split("## The two commands")[1]
                          .split("Both begin with")[0], flags=re.M)
    assert commands == ["scripts/demo.sh", "scripts/test.sh"]
    for script in commands:
        lines = [line for line in (ROOT / script).read_text().splitlines()
                 if line.strip() and not line.startswith("#") and not line.startswith("set ")
                 and not line.startswith("cd ")]
        assert lines[0] == "bash scripts/setup.sh", script
