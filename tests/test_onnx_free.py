"""Listing plugins, ``--help`` and loading and running an engine file do not import onnx
(issue 17, item 24): the schemas read what they need from onnx.defs out of a generated table,
which is checked here against onnx.defs so that it cannot drift."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import onnx

import mini_infer_core as mi
from mini_infer_core.ops import _memo

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
