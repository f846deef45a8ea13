"""docs/operators.md is generated from the registry and must be current."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_infer_core.cli.main import main

DOC = Path(__file__).resolve().parents[1] / "docs" / "operators.md"


def test_operators_doc_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "--markdown", "-p", "no:l2norm"]) == 0
    generated = capsys.readouterr().out
    assert "| ai.onnx | Conv |" in generated
    assert DOC.read_text() == generated, (
        "docs/operators.md is stale: run "
        "`mini-infer plugins --markdown -p no:l2norm > docs/operators.md`")
