"""``MINI_INFER_DEBUG=1`` / ``2`` prints the plugins' lifecycle on stderr, as documented
(docs/cli.md), without the application configuring logging (issue 29, item 7). Each case runs
in another process: the variable is read when mini_infer_core is imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import run_cli

_RUN = """
import sys
import numpy as np
import mini_infer_core as mi
engine = mi.load(sys.argv[1])
with engine.create_execution_context() as ctx:
    ctx.execute({"x": np.ones((1, 3, 8, 8), np.float32)})
"""


def _stderr(model: Path, level: str, code: str = _RUN) -> str:
    env = {**os.environ, "MINI_INFER_DEBUG": level}
    proc = subprocess.run([sys.executable, "-c", code, str(model)], capture_output=True,
                          text=True, env=env, timeout=300, check=True)
    return proc.stderr


def test_level_1_logs_the_lifecycle_and_2_every_enqueue(cnn_file: Path) -> None:
    one = _stderr(cnn_file, "1")
    for step in ("construct", "configure", "initialize", "terminate", "destroy"):
        assert f"[mini_infer.lifecycle] {step}" in one, one
    assert "enqueue" not in one
    two = _stderr(cnn_file, "2")
    assert "[mini_infer.lifecycle] enqueue" in two and "in=" in two
    assert _stderr(cnn_file, "0") == ""


def test_an_application_that_configured_logging_gets_each_record_once(cnn_file: Path) -> None:
    code = "import logging; logging.basicConfig(format='app %(name)s %(message)s')\n" + _RUN
    err = _stderr(cnn_file, "1", code)
    assert "app mini_infer.lifecycle construct" in err  # through the application's handler
    assert "[mini_infer.lifecycle]" not in err  # and not a second time through ours


def test_the_cli_with_the_variable_and_verbose_prints_each_line_once(cnn_file: Path) -> None:
    env = {"MINI_INFER_DEBUG": "1"}
    err = run_cli("run", str(cnn_file), env=env).stderr
    assert "[mini_infer.lifecycle] initialize" in err
    def lifecycle(err: str) -> list[str]:
        return [x for x in err.splitlines() if x.startswith("[mini_infer.lifecycle]")]

    verbose = lifecycle(run_cli("run", str(cnn_file), "-v").stderr)
    assert verbose
    assert lifecycle(run_cli("run", str(cnn_file), "-v", env=env).stderr) == verbose
