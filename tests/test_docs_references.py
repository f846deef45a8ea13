"""What the documentation names exists (issue 29, item 24): every file path it mentions
(``src/...``, ``plugin_packages/...``, ``engine/memory.py``, ``selection.py``) is a file or
folder of the repository, and every name of mini-infer it puts in backticks -- a dotted name
(``mini_infer_core.ops.INondeterministic``, ``errors.node_errors``), a class
(``ExecutionContext``), a member of one (``ExecutionContext.enable_graphs()``) -- is defined.
Names of other projects (TensorRT's, onnx's, onnxruntime's) are listed below, each with its
owner, so that a misspelt or renamed name of ours cannot pass as one of theirs."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT

import mini_infer_core

#: the documents: the README, the guides, each distribution's README
DOCS = sorted([ROOT / "README.md", *ROOT.glob("docs/*.md"),
               *ROOT.glob("plugin_packages/*/README.md"),
               *ROOT.glob("examples/plugins/*/README.md")])
#: where a path relative to a package (``plugin/_adapter.py``) may start
BASES = [ROOT, ROOT / "src", ROOT / "src" / "mini_infer_core", *ROOT.glob("plugin_packages/*"),
         *ROOT.glob("plugin_packages/*/src"), *ROOT.glob("plugin_packages/*/src/*"),
         *ROOT.glob("examples/plugins/*"), *ROOT.glob("examples/plugins/*/src"),
         *ROOT.glob("examples/plugins/*/src/*")]
#: the packages whose names the docs may use
PACKAGES = ("mini_infer_core", "mini_infer_cpu_plugins", "mini_infer_cpu_native",
            "mini_infer_ml_plugins", "mini_infer_cuda_plugins", "mini_infer_l2norm")
#: CamelCase names of other projects the docs mention, by owner
FOREIGN = {
    "TensorRT": {"IPluginV2IOExt", "ICudaEngine", "IExecutionContext", "IRuntime",
                 "IOptimizationProfile", "IPluginV3OneBuildV2", "TensorRTPhase"},
    "onnx": {"GraphProto", "ModelProto", "TypeProto", "TensorProto", "ReferenceEvaluator",
             "NodeProto", "ValueInfoProto", "AttributeProto"},
    "onnxruntime": {"SessionOptions", "NodeArg", "CPUExecutionProvider",
                    "CUDAExecutionProvider", "MatMulNBitsQuantizer"},
    "Ray": {"ObjectRef"},
    "Python, NumPy, pytest, scikit-learn": {
        "KeyError", "TypeError", "ValueError", "RuntimeWarning", "RuntimeError", "ImportError",
        "OSError", "DeprecationWarning", "UserWarning", "NotImplementedError", "Exception",
        "MemoryError", "AttributeError", "KeyboardInterrupt", "FileNotFoundError",
        "LogisticRegression", "RandomForestClassifier", "ActorPool", "Dataset"},
}
_FOREIGN = set().union(*FOREIGN.values())

_TICKED = re.compile(r"`([^`\n]+)`")
#: a path: a folder of the repository and what follows, a file with a folder before it, or a
#: source file named alone (``selection.py``); not a file name of another format
#: (``entry_points.txt`` is packaging metadata's)
_PATH = re.compile(r"^(?:[\w.-]+/)+[\w-]+\.(?:py|md|toml|sh|c|h|txt|cfg|json|ya?ml)$|"
                   r"^[\w-]+\.(?:py|sh|c|h)$|"
                   r"^(?:src|plugin_packages|examples|docs|scripts|tests|benchmarks)/[\w./-]*$")
_DOTTED = re.compile(r"^(?:mini_infer_\w+|[a-z_]+)(?:\.\w+)+(?:\(\))?$")
#: a file's name, never a dotted name of Python
_FILE = re.compile(r"\.(?:py|md|toml|sh|c|h|txt|cfg|json|ya?ml|so|onnx|engine|npy|npz|html)$")
_CLASS = re.compile(r"^([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)(?:\.(\w+))?(?:\(\))?$")


def _mentions() -> list[tuple[str, str]]:
    """``(where, text)`` of every backticked span outside fenced code blocks."""
    found = []
    for doc in DOCS:
        text = re.sub(r"^```.*?^```", lambda m: "\n" * m.group().count("\n"),
                      doc.read_text(encoding="utf-8"), flags=re.S | re.M)
        for n, line in enumerate(text.splitlines(), 1):
            found += [(f"{doc.relative_to(ROOT)}:{n}", m) for m in _TICKED.findall(line)]
    return found


MENTIONS = _mentions()


def _exists(path: str) -> bool:
    path = path.rstrip("/")
    if any((base / path).exists() for base in BASES):
        return True
    if "/" not in path:  # a module named alone: somewhere in a package
        return any(".egg-info" not in str(found)  # a build's, not the repository's
                   for base in ("src", "plugin_packages", "examples", "benchmarks", "scripts",
                                "tests")
                   for found in (ROOT / base).rglob(path))
    return False


def test_every_path_the_docs_mention_exists() -> None:
    paths = [(where, m) for where, m in MENTIONS if _PATH.match(m)]
    assert len(paths) > 40, paths  # the docs name files
    missing = [f"{where}: {m}" for where, m in paths if not _exists(m)]
    assert not missing, "\n".join(missing)


@cache
def _objects() -> dict[str, list[Any]]:
    """Every class, function and module-level name of our packages, by name."""
    found: dict[str, list[Any]] = {}
    for top in PACKAGES:
        try:
            package = importlib.import_module(top)
        except ImportError:  # cuda_basic imports without CuPy; the others are installed
            continue
        modules = [package]
        for info in pkgutil.walk_packages(package.__path__, f"{top}."):
            if info.name.endswith("__main__"):
                continue
            try:
                modules.append(importlib.import_module(info.name))
            except ImportError:  # a module of an absent optional dependency
                continue
        for module in modules:
            found.setdefault(module.__name__.rpartition(".")[2], []).append(module)
            names = dict(vars(module))
            for name in getattr(module, "__all__", ()):  # those made on first use (PEP 562)
                if name not in names and hasattr(module, name):
                    names[name] = getattr(module, name)
            for name, value in names.items():
                found.setdefault(name, []).append(value)
                for kind in ("op_type", "plugin_type"):  # an operator (``Copy`` steps)
                    if inspect.isclass(value) and isinstance(getattr(value, kind, None), str):
                        found.setdefault(getattr(value, kind), []).append(value)
    return found


def _has(owner: Any, member: str) -> bool:
    if hasattr(owner, member):
        return True
    return inspect.isclass(owner) and any(
        member in getattr(c, "__annotations__", {}) for c in owner.__mro__)


def _resolve(dotted: str) -> bool:
    """A dotted name of ours: a module and attributes, from a package or a module name."""
    parts = dotted.removesuffix("()").split(".")
    heads = [importlib.import_module(parts[0])] if parts[0].startswith("mini_infer_") else [
        obj for obj in _objects().get(parts[0], [])]
    for head in heads:
        obj, ok = head, True
        for part in parts[1:]:
            if not _has(obj, part):
                try:  # a submodule not imported yet
                    obj = importlib.import_module(f"{obj.__name__}.{part}")
                    continue
                except (AttributeError, ImportError, TypeError):
                    ok = False
                    break
            obj = getattr(obj, part, None)
        if ok:
            return True
    return False


def test_every_dotted_name_the_docs_mention_exists() -> None:
    ours = {m.split(".")[0] for m in _objects()}
    dotted = [(where, m) for where, m in MENTIONS if _DOTTED.match(m) and not _FILE.search(m)
              and (m.startswith("mini_infer_") or m.split(".")[0] in ours)]
    assert len(dotted) > 20, dotted
    missing = [f"{where}: {m}" for where, m in dotted if not _resolve(m)]
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: str(d.relative_to(ROOT)))
def test_every_class_name_the_docs_mention_exists(doc: Path) -> None:
    """A CamelCase name (and the member after its dot) is one of ours, or another
    project's listed in FOREIGN."""
    objects = _objects()
    missing = []
    for where, m in MENTIONS:
        match = _CLASS.match(m)
        if not where.startswith(str(doc.relative_to(ROOT)) + ":") or match is None:
            continue
        name, member = match.groups()
        if name in _FOREIGN or name in ("None", "True", "False"):
            continue
        owners = objects.get(name, [])
        if not owners or (member and not any(_has(o, member) for o in owners)):
            missing.append(f"{where}: {m}")
    assert not missing, "\n".join(missing)


def test_the_capability_table_of_the_architecture_is_the_plugin_apis() -> None:
    """docs/architecture.md's table of capabilities has one row per row of
    ``plugin.CAPABILITIES``, in its order."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("### Capabilities", 1)[1].split("###", 1)[0]
    rows = re.findall(r"^\| `(I\w+)`", section, flags=re.M)
    assert rows == [c.name for c in mini_infer_core.plugin.CAPABILITIES]
