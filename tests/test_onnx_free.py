"""Listing plugins, ``--help`` and loading and running an engine file do not import onnx
(issue 17, item 24): the schemas read what they need from onnx.defs out of a generated table,
which is checked here against onnx.defs so that it cannot drift. Listing plugins imports no
schema and no kernel module either (the creators' metadata comes from that table), and
``--help`` imports no NumPy."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import onnx
import pytest

import mini_infer_core as mi
from mini_infer_core.ops import MODULES, _catalog, _memo, kernel_catalog
from mini_infer_core.plugin import LazyPluginCreator

_SCRIPT = textwrap.dedent("""
    import contextlib, io, json, sys
    import numpy as np
    import mini_infer_core as mi
    from mini_infer_core.cli.main import main

    def onnx_modules():
        return sorted(m for m in sys.modules if m == "onnx" or m.startswith("onnx."))

    seen = {"import": onnx_modules()}
    for argv in (["plugins"], ["plugins", "--creators"], ["--help"], ["build", "--help"],
                 ["inspect", sys.argv[1]]):
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                main(argv)
            except SystemExit as exit:
                assert not exit.code, (argv, exit.code)
        seen[" ".join(argv[:1] if argv[0] == "inspect" else argv)] = onnx_modules()
    engine = mi.Runtime().load_engine(sys.argv[1])
    with engine.create_execution_context() as ctx:
        (y,) = ctx.execute({"x": np.ones((1, 3, 8, 8), np.float32)}).values()
    assert y.shape == (1, 10), y.shape
    seen["load and run"] = onnx_modules()
    print(json.dumps(seen))
""")


def test_listing_help_and_an_engine_file_import_no_onnx(small_cnn: onnx.ModelProto,
                                                       tmp_path: Path) -> None:
    path = tmp_path / "cnn.engine"
    mi.build_engine(mi.parse_onnx(small_cnn), mi.BuilderConfig(device="cpu")).save(str(path))
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(path)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen == {step: [] for step in seen}, seen
    assert len(seen) == 7


def test_the_schema_table_is_what_onnx_defs_says_now() -> None:
    """Regenerated from onnx.defs in a fresh process (every question every schema asks),
    the table must be the committed one: otherwise `python -m mini_infer_core.ops`."""
    table = Path(_memo.__file__).with_name("_table.py")
    assert _memo.render() == table.read_text(encoding="utf-8"), (
        "the schema table is stale: run python -m mini_infer_core.ops")


_ROOT = Path(__file__).resolve().parents[1]
#: the modules behind building and running: a listing has no use for them
_NOT_FOR_LISTING = ("onnx", "mini_infer_core.ops._schema", "mini_infer_core.plugin.shapes",
                    "mini_infer_core.engine", "mini_infer_core.builder",
                    "mini_infer_core.runtime", "mini_infer_core.importer",
                    *(f"mini_infer_core.ops.{name}" for name in MODULES))


#: runs a console script as its own process does, then writes the modules it imported
_RUNNER = textwrap.dedent("""
    import atexit, json, runpy, sys
    atexit.register(lambda: sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules))))
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
""")


def _imported(args: list[str], **env: str) -> tuple[str, set[str]]:
    """What the ``mini-infer ARGS`` command prints, and every module its process imported."""
    script = Path(sys.executable).with_name("mini-infer")
    proc = subprocess.run([sys.executable, "-c", _RUNNER, str(script), *args],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    modules = json.loads(proc.stderr.rpartition("MODULES ")[2])
    return proc.stdout, set(modules)


def _kernel_modules() -> set[str]:
    """The modules the installed distributions' lazy creators would import."""
    reg = mi.discover()
    targets = {r.creator.target.partition(":")[0] for r in reg.creators
               if isinstance(r.creator, LazyPluginCreator)}
    assert len(targets) > 20, targets  # cpu_basic, cpu_native, ml_basic, cuda_basic kernels
    return targets


@pytest.mark.parametrize("args", [["plugins"], ["plugins", "--creators"],
                                  ["plugins", "--json"], ["plugins", "--markdown"]])
def test_listing_imports_no_schema_no_kernel_and_no_onnx(args: list[str]) -> None:
    out, modules = _imported(args)
    assert "numpy" not in modules  # the plugin API and the devices import it when they run
    assert "mini-infer-cpu-plugins" in out
    kernels = _kernel_modules()
    assert not kernels & modules, sorted(kernels & modules)
    assert not [m for m in modules if m.startswith(_NOT_FOR_LISTING)], sorted(
        m for m in modules if m.startswith(_NOT_FOR_LISTING))


@pytest.mark.parametrize("args", [["--help"], ["plugins", "--help"], ["plugins"]])
def test_help_and_a_listing_without_distributions_import_no_numpy(args: list[str]) -> None:
    """With no distribution loaded (autoload off), nothing needs NumPy: the core's listing
    and parser import neither it nor the plugin API's modules."""
    out, modules = _imported(args, MINI_INFER_DISABLE_PLUGIN_AUTOLOAD="1")
    assert "usage: mini-infer" in out or "disabled" in out, out
    assert "mini_infer_core.cli.main" in modules
    heavy = [m for m in modules if m.startswith(("numpy", "mini_infer_core.plugin",
                                                  *_NOT_FOR_LISTING))]
    assert heavy == [], heavy


def test_kernel_metadata_without_the_table_is_the_same(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """Where the table is stale (the schema sources changed since it was made), a kernel's
    metadata comes from its schema class, and is what the table says where it is current."""
    cpu_ops = _ROOT / "plugin_packages/cpu_basic/src/mini_infer_cpu_plugins/ops"
    assert _memo.schemas() is not None, "the schema table is stale: python -m mini_infer_core.ops"
    from_table = kernel_catalog("mini_infer_cpu_plugins.ops", cpu_ops)
    for cached in (_memo.schemas, _catalog._metadata):
        monkeypatch.setattr(cached.__wrapped__, "__name__", cached.__name__)
        cached.cache_clear()
    monkeypatch.setattr(_memo, "sources_digest", lambda: "changed")
    try:
        assert _memo.schemas() is None
        from_classes = kernel_catalog("mini_infer_cpu_plugins.ops", cpu_ops)
    finally:
        _memo.schemas.cache_clear()
        _catalog._metadata.cache_clear()
    assert len(from_table) > 200 and from_table == from_classes


def test_all_read_alone_is_what_the_whole_module_says() -> None:
    """The kernels' names come from each module's ``__all__`` statement parsed alone; on every
    module of the repository that is what parsing the whole module gives."""
    files = [p for p in _ROOT.glob("**/*.py") if ".venv" not in p.parts and "build" not in
             p.parts]
    assert len(files) > 300
    checked = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        whole = _catalog._tree_all(ast.parse(text))
        assert _catalog._parsed_all(str(path), path.stat().st_mtime_ns) == whole, path
        checked += bool(whole)
    assert checked > 200
