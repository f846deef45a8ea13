"""Issue 29, items 12, 13 and 14: what a CLI user is told. Options that would be accepted and
mean nothing are refused or warned about (``bench --compare tensorrt``, ``compare --rtol -1``,
``-p no:nonexistent``); an engine file given another ``--device`` says so instead of running on
its own device silently; messages name what the user gave (a folder, a file that is no .npy,
``--shape``), and sizes and times read as a person reads them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import make_model
from onnx import TensorProto, helper

import mini_infer_core as mi
from mini_infer_core.cli.main import main


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Exit status 2 and one ``mini-infer: error: ErrorClass: message`` line: the message."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mini-infer: error: "), err
    return err[0]


@pytest.fixture
def relu_file(tmp_path: Path) -> Path:
    """A model of one Relu whose input has a dynamic first dimension."""
    model = make_model([helper.make_node("Relu", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])])
    path = tmp_path / "relu.onnx"
    onnx.save(model, str(path))
    return path


# -- item 12: accepted but meaningless --------------------------------------------------------

def test_bench_refuses_an_unknown_comparison_target(
        cnn_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _fails(capsys, ["bench", str(cnn_file), "--compare", "tensorrt", "--iterations", "1"])
    assert "InputError: --compare tensorrt" in err and "onnxruntime, reference" in err
    assert "model" not in capsys.readouterr().out  # refused before any build or timing


@pytest.mark.parametrize("option, value", [("--rtol", "-1"), ("--atol", "-0.5"),
                                           ("--rtol", "nan")])
def test_compare_refuses_a_negative_tolerance(cnn_file: Path, capsys: pytest.CaptureFixture[str],
                                              option: str, value: str) -> None:
    err = _fails(capsys, ["compare", str(cnn_file), option, value])
    assert f"InputError: {option} {value}" in err and ">= 0" in err


@pytest.mark.parametrize("opt", ["no:nonexistent", "nonexistent"])
def test_dash_p_naming_no_installed_plugin_warns(capsys: pytest.CaptureFixture[str],
                                                 opt: str) -> None:
    assert main(["plugins", "--json", "-p", opt]) == 0
    out, err = capsys.readouterr()
    json.loads(out)  # the command still runs
    assert f"mini-infer: warning: -p {opt}: no installed plugin distribution or entry point " \
           "is named 'nonexistent'" in err
    assert "mini-infer-cpu-plugins" in err  # what is installed


def test_dash_p_naming_an_installed_plugin_does_not_warn(
        capsys: pytest.CaptureFixture[str]) -> None:
    for opt in ("no:cpu_basic", "no:mini-infer-example-l2norm", "no:mini_infer_example_l2norm"):
        assert main(["plugins", "--json", "-p", opt]) == 0
        assert "warning" not in capsys.readouterr().err, opt


# -- item 13: an engine file runs on its own device -------------------------------------------

def test_run_of_a_cpu_engine_with_device_cuda_says_so(
        cnn_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    engine = tmp_path / "cnn.engine"
    assert main(["build", str(cnn_file), "-o", str(engine), "--no-tactic-timing"]) == 0
    capsys.readouterr()
    for command in ("run", "inspect", "bench"):
        err = _fails(capsys, [command, str(engine), "--device", "cuda"])
        assert "InputError: --device cuda" in err and "built for device 'cpu'" in err, err
        assert "--device cuda -o" in err  # how to get an engine for it
    assert main(["run", str(engine), "--device", "cpu"]) == 0  # its own device: fine
    assert main(["run", str(engine)]) == 0


# -- item 14: messages that name what the user gave -------------------------------------------

def test_a_folder_given_as_a_model_is_called_a_folder(tmp_path: Path) -> None:
    with pytest.raises(mi.ModelImportError, match="is a folder, not a model file") as info:
        mi.InferenceSession(str(tmp_path))
    assert "does not exist" not in str(info.value)


def test_an_input_file_that_is_not_npy_does_not_advise_pickle(
        cnn_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "file.py"
    script.write_text("print('hello')\n")
    err = _fails(capsys, ["run", str(cnn_file), "--input", f"x={script}"])
    assert f"{script} is not a NumPy .npy file" in err and "numpy.save" in err
    assert "pickle" not in err
    objects = tmp_path / "objects.npy"
    np.save(objects, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    err = _fails(capsys, ["run", str(cnn_file), "--input", f"x={objects}"])
    assert "holds Python objects, which are never unpickled" in err
    assert "allow_pickle" not in err


def test_build_shape_errors_name_no_python_parameter(
        relu_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _fails(capsys, ["build", str(relu_file), "-o", str(tmp_path / "r.engine"),
                          "--shape", "x=2,4"])
    assert "input 'x' is given the fixed shape (2, 4)" in err and "['N', 3]" in err, err
    assert "input_shapes" not in err


def test_bench_prints_times_without_seconds_in_their_name(
        relu_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", str(relu_file), "--shape", "x=2,3", "--iterations", "2",
                 "--warmup", "0", "--no-tactic-timing"]) == 0
    out = capsys.readouterr().out
    assert "  build: " in out and "  load: " in out and "  first run: " in out, out
    assert "seconds:" not in out


def test_small_sizes_are_not_zero_mib(relu_file: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    from mini_infer_core.cli._report import size_text

    engine = tmp_path / "r.engine"
    assert main(["build", str(relu_file), "-o", str(engine), "--shape", "x=2,3"]) == 0
    out = capsys.readouterr().out
    assert f"({size_text(os.path.getsize(engine))}, 1 nodes" in out and "0.0 MiB" not in out
    assert main(["inspect", str(engine)]) == 0
    out = capsys.readouterr().out
    assert "0.00 MiB" not in out and "constants: 0 tensors, 0 bytes" in out, out


@pytest.mark.parametrize("nbytes, text", [(0, "0 bytes"), (1023, "1023 bytes"),
                                          (1024, "1.00 KiB"), (3 * 2**20 + 2**19, "3.50 MiB"),
                                          (250 * 2**20, "250.0 MiB"), (5 * 2**30, "5.00 GiB"),
                                          (999 * 2**10, "999.0 KiB"), (1000 * 2**10,
                                                                       "0.98 MiB")])
def test_size_text(nbytes: int, text: str) -> None:
    from mini_infer_core.cli._report import size_text

    assert size_text(nbytes) == text
