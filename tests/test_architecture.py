"""What the architecture promises, checked on the tree itself: every kernel of the first-party
device packages is its core schema plus a kernel (nothing about the operator re-declared), no
capability is probed by name in builder, engine or runtime, and the core's layers hold
(``lint-imports`` runs in scripts/test.sh; this test runs it too where import-linter is
installed)."""

from __future__ import annotations

import ast
import inspect
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import mini_infer_cpu_native.conv as native_conv
import mini_infer_cpu_native.gemm as native_gemm
import mini_infer_cpu_native.normalization as native_norm
import mini_infer_cpu_native.pool as native_pool
import mini_infer_cpu_plugins.ops as cpu_ops
import mini_infer_cuda_plugins.ops as cuda_ops
import pytest

from mini_infer_core.ops import Op, schema_named

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "src" / "mini_infer_core"
#: what a schema says about its operator; a kernel class must not say it again (op_type is
#: set on every class from its name, and checked equal below)
SCHEMA_MEMBERS = ("attributes", "extra_attributes", "output_shapes", "output_types",
                  "output_values", "min_opset", "max_opset", "plugin_version", "n_outputs",
                  "value_inputs")


def _kernels() -> list[type[Any]]:
    return [*cpu_ops.plugin_classes(), *cuda_ops.plugin_classes(),
            native_conv.Conv, native_gemm.Gemm, native_pool.MaxPool_1, native_pool.MaxPool,
            native_pool.AveragePool,
            native_norm.LRN, native_norm.BatchNormalization]


def test_every_kernel_is_its_core_schema_plus_a_kernel() -> None:
    kernels = _kernels()
    assert len(kernels) > 250
    for cls in kernels:
        schema = schema_named(cls.__name__)
        assert schema is not None and issubclass(cls, schema), cls
        assert (cls.op_type, cls.plugin_version, cls.min_opset, cls.max_opset) == (
            schema.op_type, schema.plugin_version, schema.min_opset, schema.max_opset), cls
        device_side = [c for c in cls.__mro__ if not issubclass(c, Op)
                       and c.__module__.split(".")[0] != "mini_infer_core"]
        device_side += [c for c in cls.__mro__[:cls.__mro__.index(schema)]
                        if c.__module__.split(".")[0] != "mini_infer_core"]
        for c in device_side:
            said = sorted(m for m in SCHEMA_MEMBERS if m in c.__dict__
                          and not _extends(c.__dict__[m], m))
            assert not said, f"{c.__module__}.{c.__qualname__} re-declares {said}"


def _extends(member: Any, name: str) -> bool:
    """A device-side override that starts from the schema's answer (to record build-time
    facts of its own, as cuda's Slice does) does not re-declare it."""
    return callable(member) and f"super().{name}(" in inspect.getsource(member)


def test_no_capability_is_probed_by_name_in_builder_engine_or_runtime() -> None:
    """The core asks for capabilities through plugin/_adapter.py, never getattr/hasattr on a
    plugin."""
    probe = re.compile(r"\b(getattr|hasattr)\(\s*[\w.]*plugin\b")
    found = []
    for folder in ("builder", "engine", "runtime"):
        for path in (CORE / folder).glob("*.py"):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if probe.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_layer_contract_has_no_exceptions() -> None:
    """The layers hold as declared: no import is left out of the contract."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = config["tool"]["importlinter"]["contracts"]
    assert contract["type"] == "layers"
    assert not contract.get("ignore_imports"), contract["ignore_imports"]


def test_the_layers_hold() -> None:
    exe = shutil.which("lint-imports", path=str(Path(__import__("sys").executable).parent))
    if exe is None:
        pytest.skip("import-linter is not installed here (pip install import-linter)")
    proc = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]


def _sources() -> dict[str, list[Path]]:
    """Every distribution's Python files, by the top-level package they make."""
    found: dict[str, list[Path]] = {"mini_infer_core": sorted(CORE.rglob("*.py"))}
    for src in [*ROOT.glob("plugin_packages/*/src"), *ROOT.glob("examples/plugins/*/src")]:
        for package in src.iterdir():
            if (package / "__init__.py").exists():
                found[package.name] = sorted(package.rglob("*.py"))
    return found


def _private_uses(path: Path, own: str, others: set[str]) -> list[str]:
    """Where ``path`` (of package ``own``) reaches into another distribution's private
    parts: a module or a name with a leading underscore, imported or read off a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    foreign: set[str] = set()  # names bound to another distribution's modules
    found = []

    def private(dotted: str) -> bool:
        return any(part.startswith("_") for part in dotted.split(".")[1:])

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in others:
                    if private(alias.name):
                        found.append(f"{path}:{node.lineno}: import {alias.name}")
                    foreign.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] in others:
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                if private(dotted):
                    found.append(f"{path}:{node.lineno}: from {node.module} import "
                                 f"{alias.name}")
                foreign.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in foreign and node.attr.startswith("_") and \
                not node.attr.startswith("__"):
            found.append(f"{path}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_distribution_reaches_into_another_ones_private_modules() -> None:
    """A plugin distribution uses another one (the core, or the one whose kernels it
    subclasses) only through its public modules and names: what a version range in its
    dependencies can promise (cpu_native uses ``mini_infer_cpu_plugins.toolkit``)."""
    sources = _sources()
    assert {"mini_infer_core", "mini_infer_cpu_plugins", "mini_infer_cpu_native"} <= set(
        sources)
    found = []
    for own, paths in sources.items():
        for path in paths:
            found += _private_uses(path, own, set(sources) - {own})
    assert not found, "\n".join(str(f).replace(str(ROOT) + "/", "") for f in found)


def test_execution_context_keeps_each_job_in_a_small_module_of_its_own() -> None:
    """ExecutionContext's jobs (issue 29, item 25): input checks, planned runs and their
    timing, device graphs each in a module of its own; the context module keeps what each
    run goes through and the plugins' lifecycle."""
    from mini_infer_core.engine import _graphs, _inputs, _running, context

    ctx = context.ExecutionContext
    roles = {"time_steps": _running, "steps": _running, "execute": context, "close": context}
    for member, module in roles.items():
        owner = next(c for c in ctx.__mro__ if member in vars(c))
        assert owner.__module__ == module.__name__, (member, owner.__module__)
    # device graphs: functions of the context in their module, which the context imports
    # only when graphs are asked for (issue 30); its methods hand over to them
    for member, function in (("enable_graphs", "enable"), ("graphs_refused", "refused")):
        method = vars(ctx)[member]
        code = (method.fget if isinstance(method, property) else method).__code__
        assert function in code.co_names and callable(getattr(_graphs, function)), member
    assert "InputCheck" in vars(_inputs)
    for module in (context, _graphs, _inputs, _running):
        lines = Path(module.__file__ or "").read_text(encoding="utf-8").count("\n")
        assert lines < 250, f"{module.__name__} has {lines} lines: split it by role"
