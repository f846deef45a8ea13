"""What the integer-GEMM tests share (test_qgemm.py, test_qconv.py): the 8-bit types and their
ONNX element types (their fixture ``isa``, every integer-GEMM kernel this CPU has, is in
conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto

import mini_infer_core

U8, S8 = np.uint8, np.int8
ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32,
        np.dtype(U8): TensorProto.UINT8, np.dtype(S8): TensorProto.INT8}


def each_isa(isa: str, supported: Callable[[str], bool], use: Callable[[str | None], str],
             what: str) -> Iterator[str]:
    """An ``isa`` fixture's body: the test run on ``what``'s kernels of ``isa`` (``use``
    forces them, then back to the best), skipped where this CPU cannot run them."""
    if not supported(isa):
        pytest.skip(f"this CPU cannot run the {what}'s {isa} kernels")
    assert use(isa) == isa
    yield isa
    use(None)


def run_saved_engine(model: onnx.ModelProto, name: str, x: np.ndarray[Any, Any],
                     tmp_path: Path) -> np.ndarray[Any, Any]:
    """Build ``model`` (its one node's constant weights packed by the build: ``__qpacked__``),
    save the engine and run it in another process on ``x`` (input ``name``): its output."""
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(device="cpu"))
    assert engine.nodes[0].plugin.hidden.get("__qpacked__") == 1  # type: ignore[attr-defined]
    path = tmp_path / "q.engine"
    engine.save(str(path))
    np.save(tmp_path / "x.npy", x)
    script = ("import sys, numpy as np, mini_infer_core as mi\n"
              "s = mi.InferenceSession(sys.argv[1], device='cpu')\n"
              f"np.save(sys.argv[2] + '/y.npy', s.run(None, {{{name!r}: np.load(sys.argv[2] + "
              "'/x.npy')})[0])\n")
    subprocess.run([sys.executable, "-c", script, str(path), str(tmp_path)], check=True,
                   timeout=300)
    return np.load(tmp_path / "y.npy")  # type: ignore[no-any-return]
