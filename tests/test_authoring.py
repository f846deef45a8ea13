"""Plugin authoring: input counts checked at build time, duplicate creators rejected alone,
fields from a mapping, the kit's read-only inputs, scaffold names refused, ``plugins --check``
and the compatible-release pin on mini-infer-core (issue 17, items 12-17 and 20)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import textwrap
import tomllib
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from helpers import ROOT, ort_run
from onnx import TensorProto, helper
from packaging.requirements import Requirement
from packaging.version import Version

import mini_infer_core as mi
import mini_infer_core.plugin as mp
from mini_infer_core.cli._scaffold import check_name
from mini_infer_core.cli.main import main
from mini_infer_core.errors import BuildError, MiniInferError, PluginInterfaceError
from mini_infer_core.plugin import OnnxPlugin, OnnxPluginCreator, fields_from_values
from mini_infer_core.registry import (
    DuplicatePluginWarning,
    PluginRegistry,
    core_requirement,
    discover,
)
from mini_infer_core.testing import plugin_kit
from mini_infer_core.testing.plugin_kit import PluginCheckError

# -- item 12: how many inputs a plugin takes, checked at build time ---------------------------


def _one_node(op: str, inputs: list[str], domain: str = "", opset: int = 17,
              **attrs: Any) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    node = helper.make_node(op, inputs, ["y"], name="n1", domain=domain, **attrs)
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    return helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=opsets)


@pytest.mark.parametrize(("op", "inputs", "expected"), [
    ("Relu", ["x", "x"], "exactly 1 input"),
    ("Add", ["x"], "exactly 2 inputs"),
    ("Clip", ["x", "", "", ""], "1 to 3 inputs"),
])
def test_a_node_with_a_wrong_input_count_is_a_build_error(op: str, inputs: list[str],
                                                          expected: str) -> None:
    model = _one_node(op, inputs)
    with pytest.raises(onnx.checker.ValidationError, match="input size"):  # onnx agrees
        onnx.checker.check_model(model)
    with pytest.raises(BuildError) as info:
        mi.load(model)
    text = str(info.value)
    # the distribution of the plugin chosen for it (cpu-native's compiled Add where installed)
    dist = mi.discover().candidates("", op, "cpu", 17)[0].distribution
    for part in ("node 'n1'", op, dist, f"the node has {len(inputs)} input",
                 f"the plugin takes {expected}"):
        assert part in text, text


def test_optional_and_variadic_inputs_still_build() -> None:
    x = np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3)
    hi = np.array(1.5, np.float32)
    clip = _one_node("Clip", ["x", "", "hi"])
    clip.graph.initializer.append(onnx.numpy_helper.from_array(hi, "hi"))
    total = _one_node("Sum", ["x", "x", "x"])
    for model in (clip, total):
        onnx.checker.check_model(model)
        with mi.load(model).create_execution_context() as ctx:
            got = ctx.execute({"x": x})["y"]
        np.testing.assert_allclose(got, ort_run(model, {"x": x})[0], rtol=1e-6)


def test_a_third_party_op_is_checked_against_its_compute_signature() -> None:
    # mini-infer-example-l2norm declares no count: its compute(self, x, *, out, ...) says 1
    model = _one_node("L2Norm", ["x", "x"], domain="com.example")
    with pytest.raises(BuildError, match=r"node 'n1' \(com.example::L2Norm.*"
                       r"mini-infer-example-l2norm.*the node has 2 inputs, the plugin takes "
                       r"exactly 1 input"):
        mi.load(model)


class Blend(OnnxPlugin):
    """y = mean of two or three inputs: the counts declared."""

    domain = "com.test.count"
    min_inputs, max_inputs = 2, 3

    def compute(self, *xs: Any, out: Any) -> None:
        np.mean(np.stack(xs), axis=0, out=out)


def test_declared_counts_refuse_and_accept() -> None:
    reg = discover()
    reg.register_creator(OnnxPluginCreator(Blend, namespace="test.count"))
    with pytest.raises(BuildError, match="the node has 1 input, the plugin takes 2 to 3 inputs"):
        mi.load(_one_node("Blend", ["x"], domain="com.test.count"), registry=reg)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    engine = mi.load(_one_node("Blend", ["x", "x", "x"], domain="com.test.count"), registry=reg)
    with engine.create_execution_context() as ctx:
        np.testing.assert_allclose(ctx.execute({"x": x})["y"], x)


class _CountedBuild(mp.IPluginV3OneBuild, mp.IInputCount):
    num_outputs = 1

    def get_output_data_types(self, input_types: Sequence[mp.DataType]) -> list[mp.DataType]:
        return [input_types[0]]

    def get_output_shapes(self, inputs: Sequence[mp.DimsExprs | None],
                          expr_builder: mp.ExprBuilder) -> list[mp.DimsExprs]:
        assert inputs[0] is not None
        return [mp.DimsExprs(list(inputs[0]))]

    def input_count(self) -> tuple[int, int | None]:
        return 1, 1


class _GainRuntime(mp.IPluginV3OneRuntime):
    def __init__(self, gain: float) -> None:
        self.gain = gain

    def enqueue(self, input_descs: Any, output_descs: Any, inputs: Sequence[Any],
                outputs: Sequence[Any], workspace: Any, stream: Any) -> None:
        np.multiply(inputs[0], self.gain, out=outputs[0])

    def get_fields_to_serialize(self) -> mp.PluginFieldCollection:
        return fields_from_values({"gain": self.gain})


class GainV3(mp.IPluginV3):
    """y = gain * x, one input (declared on its build object)."""

    def __init__(self, gain: float) -> None:
        self.core = mp.IPluginV3OneCore()
        self.core.plugin_name, self.core.plugin_namespace = "GainV3", "test.v3count"
        self.build, self.runtime = _CountedBuild(), _GainRuntime(gain)

    def get_capability_interface(self, kind: mp.PluginCapabilityType) -> Any:
        return {mp.PluginCapabilityType.CORE: self.core,
                mp.PluginCapabilityType.BUILD: self.build,
                mp.PluginCapabilityType.RUNTIME: self.runtime}[kind]

    def clone(self) -> GainV3:
        return GainV3(self.runtime.gain)


class GainV3Creator(mp.IPluginCreatorV3One):
    name, plugin_namespace, domain, op_type = "GainV3", "test.v3count", "com.test.v3", "GainV3"
    field_names = ("gain",)

    def create_plugin_v3(self, name: str, fields: mp.PluginFieldCollection,
                         phase: mp.PluginPhase) -> mp.IPluginV3:
        return GainV3(float(fields.values_dict().get("gain", 1.0)))


def test_a_v3_plugin_declares_its_count_on_its_build_object() -> None:
    reg = discover()
    reg.register_creator(GainV3Creator())
    with pytest.raises(BuildError, match="the node has 2 inputs, the plugin takes exactly 1"):
        mi.load(_one_node("GainV3", ["x", "x"], domain="com.test.v3"), registry=reg)
    assert mi.load(_one_node("GainV3", ["x"], domain="com.test.v3"), registry=reg).nodes


# -- item 13: a duplicate creator is rejected alone ------------------------------------------

_HOOKS = '''
import numpy as np
from mini_infer_core.plugin import OnnxPluginCreator, UnaryPlugin
from mini_infer_core.registry import hookimpl


class {cls}(UnaryPlugin):
    domain = "com.test.dup"
    op_type = "{op}"

    def compute(self, x, *, out):
        np.multiply(x, {factor}, out=out)


@hookimpl
def mini_infer_creators():
    return [{creators}]
'''


def _distribution(root: Path, name: str, module: str, body: str) -> None:
    info = root / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[mini_infer.plugins]\n{module} = {module}\n")
    (root / f"{module}.py").write_text(body)


def test_a_duplicate_identity_rejects_only_that_creator(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    tag = tmp_path.name.replace("-", "_")[-12:]
    a_mod, b_mod = f"mi_dup_a_{tag}", f"mi_dup_b_{tag}"
    creator = 'OnnxPluginCreator({cls}, namespace="{ns}")'
    _distribution(tmp_path, "mi-test-dup-a", a_mod, _HOOKS.format(
        cls="Twice", op="Twice", factor=2.0,
        creators=creator.format(cls="Twice", ns="com.test.dup")))
    _distribution(tmp_path, "mi-test-dup-b", b_mod, _HOOKS.format(
        cls="Thrice", op="Thrice", factor=3.0, creators=", ".join([
            # the same (name, version, namespace) as mi-test-dup-a's Twice
            'OnnxPluginCreator(type("Twice", (Thrice,), {"op_type": "Twice"}), '
            'namespace="com.test.dup")',
            creator.format(cls="Thrice", ns="com.test.dup.b")])))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(DuplicatePluginWarning) as caught:
        reg = discover()
    dists = {d.name: d for d in reg.distributions}
    a, b = dists["mi-test-dup-a"], dists["mi-test-dup-b"]
    assert (a.status, b.status) == ("loaded", "loaded")
    assert a.creators == ["com.test.dup::Twice"] and b.creators == ["com.test.dup.b::Thrice"]
    (reason,) = b.rejected
    assert "'Twice'" in reason and "mi-test-dup-a 1.0" in reason and "mi-test-dup-b 1.0" in reason
    assert any("mi-test-dup-a" in str(w.message) and "mi-test-dup-b" in str(w.message)
               for w in caught)
    assert b.to_json()["rejected"] == [reason]
    rec = reg.get_creator("Twice", "1", "com.test.dup")
    assert rec is not None and rec.distribution == "mi-test-dup-a"
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for op, factor in (("Twice", 2.0), ("Thrice", 3.0)):  # both distributions still serve
        engine = mi.load(_one_node(op, ["x"], domain="com.test.dup"), registry=reg)
        with engine.create_execution_context() as ctx:
            np.testing.assert_allclose(ctx.execute({"x": x})["y"], factor * x)


def test_registering_a_duplicate_by_hand_still_raises() -> None:
    reg = PluginRegistry()
    reg.register_creator(OnnxPluginCreator(Blend, namespace="n"))
    with pytest.raises(MiniInferError, match="already registered"):
        reg.register_creator(OnnxPluginCreator(Blend, namespace="n"))


# -- item 14: create_plugin with a mapping ---------------------------------------------------


def test_create_plugin_accepts_a_mapping_of_values(creator_for: Any) -> None:
    lazy = creator_for("LeakyRelu", opset=16)  # a lazy creator, as installed
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    for creator in (lazy, lazy.resolve()):
        for fields in ({"alpha": 0.25}, {"alpha": mp.PluginField.from_value("alpha", 0.25)},
                       fields_from_values({"alpha": 0.25})):
            plugin = creator.create_plugin("n", fields)
            (out,) = plugin_kit.run_plugin(plugin, [x])
            np.testing.assert_allclose(out, np.where(x < 0, 0.25 * x, x), rtol=1e-6)
    blend = OnnxPluginCreator(Blend, namespace="n").create_plugin("b", {})
    assert isinstance(blend, Blend) and blend.attrs == {}


def test_create_plugin_says_what_it_expects(creator_for: Any) -> None:
    creator = creator_for("LeakyRelu", opset=16)
    with pytest.raises(PluginInterfaceError, match=r"PluginFieldCollection or a mapping of "
                       r"field name to value such as \{'alpha': 2.0\}.*not list"):
        creator.create_plugin("n", [("alpha", 0.25)])
    with pytest.raises(PluginInterfaceError, match="not understood"):
        creator.create_plugin("n", {"beta": 1.0})


def test_a_v3_creator_accepts_a_mapping() -> None:
    plugin = GainV3Creator().create_plugin("c", {"gain": 2.5})
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    np.testing.assert_array_equal(plugin_kit.run_plugin(plugin, [x])[0], 2.5 * x)


# -- item 15: the kit names a kernel that writes into its input ------------------------------


class InPlaceDouble(OnnxPlugin):
    """Wrong on purpose: doubles its input in place, then copies it."""

    domain = "com.test.kit"

    def compute(self, x: Any, *, out: Any) -> None:
        x *= 2
        np.copyto(out, x)


class SneakyDouble(OnnxPlugin):
    """Wrong on purpose: makes its input writable again (as a C kernel could write anyway)."""

    domain = "com.test.kit"

    def compute(self, x: Any, *, out: Any) -> None:
        with contextlib.suppress(ValueError):
            x.flags.writeable = True
        np.multiply(x, 2, out=x)
        np.copyto(out, x)


@pytest.mark.parametrize(("cls", "message"), [
    (InPlaceDouble, "enqueue wrote into one of its inputs"),
    (SneakyDouble, "enqueue changed input 0"),
])
def test_the_kit_names_a_kernel_that_writes_into_its_input(cls: type[OnnxPlugin],
                                                           message: str) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    before = x.copy()
    with pytest.raises(PluginCheckError, match=message) as info:
        plugin_kit.check_plugin(OnnxPluginCreator(cls, namespace="test.kit"), {}, [x])
    assert "serialize" not in str(info.value) and "never write into its inputs" in str(info.value)
    np.testing.assert_array_equal(x, before)  # the caller's array is untouched
    assert x.flags.writeable


# -- item 16: scaffold names ------------------------------------------------------------------


@pytest.mark.parametrize(("name", "why"), [
    ("mini-infer-core", "one of mini-infer's own distributions"),
    ("mini_infer_cpu_plugins", "one of mini-infer's own distributions"),
    ("Mini.Infer.Cuda-Plugins", "one of mini-infer's own distributions"),
    ("numpy", "already installed"),
    ("mini-infer-example-l2norm", "already installed"),
    ("json", "import name 'json'"),
    ("class", "keyword"),
    ("3d-plugin", "not a valid distribution name"),
    ("my plugin", "not a valid distribution name"),
    ("acme--scale", "not a valid distribution name"),
])
def test_plugins_new_refuses_names_it_must_not_use(name: str, why: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "new", name, "--dir", str(tmp_path)]) == 2
    assert why in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_plugins_new_accepts_a_fresh_name(tmp_path: Path) -> None:
    assert check_name("Acme_Scale") == ("acme-scale", "acme_scale")
    assert main(["plugins", "new", "acme-scale", "--dir", str(tmp_path)]) == 0
    assert (tmp_path / "acme-scale" / "src" / "acme_scale" / "plugin.py").is_file()


# -- item 17: plugins --check ------------------------------------------------------------------

_LAZY_HOOKS = '''
from mini_infer_core.plugin import LazyPluginCreator
from mini_infer_core.registry import hookimpl


@hookimpl
def mini_infer_creators():
    return [LazyPluginCreator("{kernels}:Broken", name="Broken", namespace="com.test.chk",
                              domain="com.test.chk", field_names=()),
            LazyPluginCreator("{stale}:Stale", name="Stale", namespace="com.test.chk",
                              domain="com.test.chk", field_names=("gone",))]
'''


@pytest.fixture
def broken_kernels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    tag = tmp_path.name.replace("-", "_")[-12:]
    names = {"hooks": f"mi_chk_hooks_{tag}", "kernels": f"mi_chk_kernels_{tag}",
             "stale": f"mi_chk_stale_{tag}"}
    _distribution(tmp_path, "mi-test-check", names["hooks"], _LAZY_HOOKS.format(**names))
    (tmp_path / f"{names['kernels']}.py").write_text("import mi_no_such_module_anywhere\n")
    (tmp_path / f"{names['stale']}.py").write_text(textwrap.dedent('''
        from mini_infer_core.plugin import UnaryPlugin

        class Stale(UnaryPlugin):
            domain = "com.test.chk"

            def compute(self, x, *, out):
                out[...] = x
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield names


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_plugins_check_imports_every_kernel_module(broken_kernels: dict[str, str]) -> None:
    code, out, _ = _cli("plugins")
    assert code == 0 and re.search(r"mi-test-check 1.0 +loaded ", out)  # lazily: loaded
    code, out, _ = _cli("plugins", "--check")
    assert code == 1, out
    lines = [line for line in out.splitlines() if "mi-test-check" in line]
    assert any(broken_kernels["kernels"] in line and "ModuleNotFoundError" in line
               and "mi_no_such_module_anywhere" in line and "com.test.chk::Broken" in line
               for line in lines), out
    assert any(f"{broken_kernels['stale']}:Stale" in line and "lacking ['gone']" in line
               for line in lines), out
    code, out, _ = _cli("plugins", "--check", "--json")
    data = json.loads(out)
    assert code == 1 and data["ok"] is False
    failed = {f["module"] for f in data["failures"] if f["distribution"] == "mi-test-check"}
    assert failed == {broken_kernels["kernels"], f"{broken_kernels['stale']}:Stale"}
    # the other distributions' kernels all import
    assert {f["distribution"] for f in data["failures"]} == {"mi-test-check"}


def test_plugins_check_passes_and_blocking_the_broken_one_fixes_it(
        broken_kernels: dict[str, str]) -> None:
    code, out, _ = _cli("plugins", "-p", "no:mi-test-check", "--check")
    assert code == 0 and "all OK" in out, out
    assert re.search(r"imported \d+ kernel module", out)


# -- item 20: a compatible-release pin on mini-infer-core -------------------------------------

def _plugin_pyprojects() -> list[Path]:
    return sorted([*ROOT.glob("plugin_packages/*/pyproject.toml"),
                   *ROOT.glob("examples/plugins/*/pyproject.toml")])


def _core_requirement(requirements: list[str]) -> Requirement:
    (core,) = [r for r in map(Requirement, requirements) if r.name == "mini-infer-core"]
    return core


def _assert_compatible_release(req: Requirement) -> None:
    current = Version(mi.__version__)
    nxt = Version(f"{current.major}.{current.minor + 1}.0") if current.major == 0 else \
        Version(f"{current.major + 1}.0.0")
    assert req.specifier.contains(current), req
    assert req.specifier.contains(Version(f"{current.major}.{current.minor}.99")), req
    assert not req.specifier.contains(nxt), f"{req} admits {nxt}, whose plugin API may differ"


@pytest.mark.parametrize("pyproject", _plugin_pyprojects(), ids=lambda p: p.parent.name)
def test_plugin_distributions_pin_a_compatible_core(pyproject: Path) -> None:
    project = tomllib.loads(pyproject.read_text())["project"]
    _assert_compatible_release(_core_requirement(project["dependencies"]))


def test_the_scaffold_pins_a_compatible_core(tmp_path: Path) -> None:
    assert main(["plugins", "new", "acme-pin", "--dir", str(tmp_path)]) == 0
    project = tomllib.loads((tmp_path / "acme-pin" / "pyproject.toml").read_text())["project"]
    req = _core_requirement(project["dependencies"])
    _assert_compatible_release(req)
    assert req.specifier == Requirement(core_requirement()).specifier
    assert any(Requirement(r).name == "mini-infer-cpu-plugins" for r in project["dependencies"])


def test_core_requirement_follows_the_version() -> None:
    assert core_requirement("0.1.0") == "mini-infer-core>=0.1.0,<0.2"
    assert core_requirement("0.7.3") == "mini-infer-core>=0.7.3,<0.8"
    assert core_requirement("1.4.0") == "mini-infer-core>=1.4.0,<2"


def test_warnings_are_not_errors_here() -> None:
    # the duplicate warning is a UserWarning users may filter, never an exception
    assert issubclass(DuplicatePluginWarning, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        discover()  # the installed distributions have no duplicates
