"""Every user mistake on the command line is one ``mini-infer: error:`` line, never a Python
traceback (issue 17, items 4, 6, 7, 8, 9, 10, 11, 21); the CLI runs in another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import install_plugin_module, l2norm_hooks, make_model, run_cli
from onnx import TensorProto, helper


def _fails_cleanly(*args: str, env: dict[str, str] | None = None) -> str:
    """Run the CLI, expect exit 2 with one error line and no traceback; return stderr."""
    proc = run_cli(*args, check=False, env=env, timeout=300)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert "mini-infer: error:" in proc.stderr
    return proc.stderr


# -- item 4: malformed --shape -------------------------------------------------------------

@pytest.mark.parametrize("command, shape, said", [
    ("run", "x=2,x", "'x' is not a dimension"),
    ("run", "x", "expected NAME=D0,D1"),
    ("run", "x=-1,3,8,8", "'-1' is not a dimension"),
    ("run", "=1,3,8,8", "expected NAME=D0,D1"),
    ("bench", "x=1,,8,8", "'' is not a dimension"),
    ("build", "x=-1,3,8,8", "'-1' is not a dimension"),
])
def test_a_malformed_shape_is_one_error_line(cnn_file: Path, tmp_path: Path, command: str,
                                             shape: str, said: str) -> None:
    extra = ["-o", str(tmp_path / "m.engine")] if command == "build" else []
    err = _fails_cleanly(command, str(cnn_file), "--shape", shape, *extra)
    assert "InputError" in err and f"--shape {shape!r}" in err and said in err
    assert not (tmp_path / "m.engine").exists()


def test_an_input_file_that_is_not_npy_is_one_error_line(cnn_file: Path,
                                                          tmp_path: Path) -> None:
    bad = tmp_path / "x.npy"
    bad.write_text("not numpy")
    err = _fails_cleanly("run", str(cnn_file), "--input", f"x={bad}")
    assert "is not a NumPy .npy file" in err
    err = _fails_cleanly("run", str(cnn_file), "--input", f"x={tmp_path / 'missing.npy'}")
    assert "no such file" in err


# -- item 11: names that do not exist -------------------------------------------------------

def test_shape_of_an_unknown_input_lists_the_inputs(cnn_file: Path, tmp_path: Path) -> None:
    err = _fails_cleanly("run", str(cnn_file), "--shape", "q=1,3,8,8")
    assert "--shape names 'q', not an input of the model; its inputs are 'x'" in err
    engine = tmp_path / "m.engine"
    run_cli("build", str(cnn_file), "-o", str(engine), "--no-tactic-timing")
    err = _fails_cleanly("run", str(engine), "--shape", "x=1,3,8,8", "--shape", "q=2")
    assert "'q'" in err and "its inputs are 'x'" in err
    np.save(tmp_path / "q.npy", np.zeros((1, 3, 8, 8), np.float32))
    err = _fails_cleanly("run", str(engine), "--input", f"q={tmp_path / 'q.npy'}")
    assert "--input names 'q'" in err
    err = _fails_cleanly("build", str(cnn_file), "-o", str(tmp_path / "b.engine"),
                         "--shape", "q=1,3,8,8")
    assert "--shape names 'q'" in err and not (tmp_path / "b.engine").exists()


def test_pin_of_an_operator_the_model_lacks_lists_its_operators(cnn_file: Path,
                                                                 tmp_path: Path) -> None:
    err = _fails_cleanly("build", str(cnn_file), "-o", str(tmp_path / "m.engine"),
                         "--pin", "Cnov=mini_infer.cpu")
    assert "--pin names operator(s) 'Cnov' that the model does not use" in err
    for op in ("Conv", "Relu", "MaxPool", "Gemm", "Softmax"):
        assert op in err
    err = _fails_cleanly("build", str(cnn_file), "-o", str(tmp_path / "m.engine"),
                         "--pin", "Conv")
    assert "expected OP=PROVIDER" in err
    # a real operator pinned to a real provider still builds
    run_cli("build", str(cnn_file), "-o", str(tmp_path / "m.engine"), "--no-tactic-timing",
            "--pin", "Conv=mini-infer-cpu-plugins")


# -- item 9: the engine's folder does not exist ---------------------------------------------

def test_build_into_a_missing_folder_names_the_target(cnn_file: Path, tmp_path: Path) -> None:
    target = tmp_path / "missing" / "dir" / "a.engine"
    err = _fails_cleanly("build", str(cnn_file), "-o", str(target))
    assert f"-o {target}" in err and f"folder {target.parent} does not exist" in err
    assert ".partial" not in err
    assert not target.parent.exists()
    assert not [p for p in tmp_path.rglob("*") if p.suffix in (".partial", ".engine")]


def test_build_onto_a_folder_says_so(cnn_file: Path, tmp_path: Path) -> None:
    err = _fails_cleanly("build", str(cnn_file), "-o", str(tmp_path))
    assert "is a folder" in err


# -- item 10: options before the command -----------------------------------------------------

def test_dash_p_before_the_command_works_as_after_it(cnn_file: Path, tmp_path: Path) -> None:
    before = json.loads(run_cli("-p", "no:cpu_native", "plugins", "--json").stdout)
    after = json.loads(run_cli("plugins", "--json", "-p", "no:cpu_native").stdout)
    for data in (before, after):
        dists = {d["name"]: d["status"] for d in data["distributions"]}
        assert dists["mini-infer-cpu-native"] == "blocked"
    engine = tmp_path / "m.engine"
    proc = run_cli("-p", "no:cpu_native", "--json", "build", str(cnn_file), "-o", str(engine),
                   "--no-tactic-timing")
    assert json.loads(proc.stdout)["nodes"] >= 1
    inspect = json.loads(run_cli("inspect", str(engine), "--json").stdout)
    assert "mini-infer-cpu-native" not in {n["distribution"] for n in inspect["nodes"]}
    # both places at once add up
    err = _fails_cleanly("-p", "no:cpu_native", "run", str(engine), "-p", "no:cpu_basic")
    assert "mini-infer-cpu-plugins 0.1.0 is installed but blocked" in err


# -- item 6: a closed pipe -----------------------------------------------------------------

def test_a_closed_pipe_ends_quietly() -> None:
    """`mini-infer plugins --json | head -1`: the reader closes early."""
    proc = subprocess.Popen([sys.executable, "-m", "mini_infer_core.cli.main", "plugins",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # as head does after its lines
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert proc.returncode == 1


# -- item 21: the short listing --------------------------------------------------------------

def test_plugins_prints_a_short_header_and_the_table_on_request() -> None:
    text = run_cli("plugins").stdout
    lines = text.splitlines()
    assert lines[0].startswith("mini-infer-core ") and "plugin API" in lines[0]
    assert lines[1].startswith("plugins: ") and "mini-infer-cpu-plugins-0.1.0" in lines[1]
    assert len(lines) < 20, text
    data = json.loads(run_cli("plugins", "--json").stdout)
    n_cpu = sum(1 for c in data["creators"] if c["distribution"] == "mini-infer-cpu-plugins")
    assert any(line.split()[:3] == ["mini-infer-cpu-plugins", "0.1.0", "loaded"]
               and f"{n_cpu} creators" in line and "device cpu" in line for line in lines)
    assert f"creators: {len(data['creators'])} " in text and "--creators" in text
    full = run_cli("plugins", "--creators").stdout
    assert len(full.splitlines()) > len(data["creators"])
    assert f"conflicts ({len(data['conflicts'])}):" in full


# -- item 7: a comparison target that refuses the model ---------------------------------------

def test_bench_skips_a_comparison_that_refuses_the_model(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("L2Norm", ["x"], ["y"], domain="com.example", name="norm")], "g",
        [x], [y]), opset_imports=[helper.make_opsetid("", 17),
                                  helper.make_opsetid("com.example", 1)])
    path = tmp_path / "l2.onnx"
    onnx.save(model, str(path))
    proc = run_cli("bench", str(path), "--compare", "onnxruntime", "--warmup", "1",
                   "--iterations", "2", "--json")
    assert "Traceback" not in proc.stderr
    data = json.loads(proc.stdout)
    assert data["results"]["mini-infer"]["median_ms"] > 0 and "onnxruntime" not in data["results"]
    note = data["notes"]["onnxruntime"]
    assert note.startswith("onnxruntime cannot load the model") and "L2Norm" in note
    text = run_cli("bench", str(path), "--compare", "onnxruntime", "--warmup", "1",
                   "--iterations", "2").stdout
    assert "onnxruntime: skipped: onnxruntime cannot load the model" in text


# -- item 8: install hints for installed but idle distributions -------------------------------

_HOOKS = l2norm_hooks("com.example", extra='''
@hookimpl
def mini_infer_plugin_api_version():
    if os.environ.get("MI_TEST_FAIL"):
        raise RuntimeError("the hook module is broken on purpose")
    return os.environ.get("MI_TEST_API", "1")
''')


@pytest.fixture
def twin_site(tmp_path: Path) -> Path:
    """A plugin distribution ``mi-test-l2twin`` 0.0.7 (the example's L2Norm creator under
    another distribution) installed into a folder put on PYTHONPATH."""
    site = tmp_path / "site"
    install_plugin_module(site, "mi-test-l2twin", "0.0.7", "l2twin", _HOOKS)
    return site


def test_install_hints_say_why_an_installed_distribution_serves_nothing(
        twin_site: Path, tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    model = make_model([helper.make_node("L2Norm", ["x"], ["y"], domain="com.example",
                                         name="norm")], [x], [y])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    path, engine = tmp_path / "l2.onnx", tmp_path / "l2.engine"
    onnx.save(model, str(path))
    site = {"PYTHONPATH": os.pathsep.join([str(twin_site), os.environ.get("PYTHONPATH", "")])}
    run_cli("build", str(path), "-o", str(engine), "-p", "no:l2norm", env=site)
    assert "mi-test-l2twin" in {n["distribution"] for n in json.loads(
        run_cli("inspect", str(engine), "--json", "-p", "no:l2norm", env=site).stdout)["nodes"]}
    load = ("run", str(engine), "-p", "no:l2norm")
    # not installed at all: the pip line
    err = _fails_cleanly(*load)
    assert "pip install mi-test-l2twin==0.0.7" in err
    # installed but blocked / failing / made for another plugin API: say that instead
    err = _fails_cleanly(*load, "-p", "no:mi-test-l2twin", env=site)
    assert "mi-test-l2twin 0.0.7 is installed but blocked" in err and "pip install" not in err
    err = _fails_cleanly(*load, env={**site, "MI_TEST_FAIL": "1"})
    assert "mi-test-l2twin 0.0.7 is installed but failed to load: RuntimeError: the hook " \
           "module is broken on purpose" in err
    assert "pip install mi-test-l2twin==0.0.7\n" not in err
    err = _fails_cleanly(*load, env={**site, "MI_TEST_API": "0"})
    assert "mi-test-l2twin 0.0.7 is installed but incompatible with this mini-infer-core " \
           "(plugin API 1): targets plugin API 0" in err
    assert "pip install mi-test-l2twin==0.0.7" not in err
    err = _fails_cleanly(*load, env={**site, "MINI_INFER_DISABLE_PLUGIN_AUTOLOAD": "1",
                                     "MINI_INFER_PLUGINS": "cpu_basic"})
    assert "is installed but not loaded, plugin autoload is off" in err
    assert "MINI_INFER_PLUGINS=mi-test-l2twin" in err


def test_an_incompatible_cpu_distribution_is_not_told_to_install_itself(
        twin_site: Path, cnn_file: Path, tmp_path: Path) -> None:
    """The only distribution allowed to load targets another plugin API: build says that,
    not `pip install mini-infer-cpu-plugins`."""
    site = {"PYTHONPATH": os.pathsep.join([str(twin_site), os.environ.get("PYTHONPATH", "")]),
            "MINI_INFER_DISABLE_PLUGIN_AUTOLOAD": "1", "MINI_INFER_PLUGINS": "l2twin",
            "MI_TEST_API": "0"}
    err = _fails_cleanly("build", str(cnn_file), "-o", str(tmp_path / "m.engine"), env=site)
    assert "no plugin distribution provides any device" in err
    assert "mi-test-l2twin 0.0.7 is installed but incompatible" in err
    assert "mini-infer-cpu-plugins 0.1.0 is installed but not loaded" in err
    assert "pip install mini-infer-cpu-plugins" not in err


# -- issue 29, items 4 and 5: arguments and output paths checked before any work -------------

def _error_line(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the CLI in this process (an exception would fail the test: no traceback is
    printed by it); expect exit 2 and the one ``mini-infer: error: ErrorClass: message``."""
    from mini_infer_core.cli.main import main

    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("mini-infer: error:")]
    assert line.split(": ")[2] in {"InputError", "MiniInferError"}, line
    return line


def _unwritable_folders(tmp_path: Path) -> list[Path]:
    """Folders no file can be created in, for any user: /proc (a file system of the kernel's)
    and, where the tests do not run as root (whom permission bits do not stop), a folder of
    mode 0o500."""
    folders = [Path("/proc")]
    if os.geteuid() != 0:
        ro = tmp_path / "read-only"
        ro.mkdir()
        ro.chmod(0o500)
        folders.append(ro)
    return folders


def test_run_output_dir_is_checked_before_the_run(cnn_file: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    line = _error_line(capsys, "run", str(cnn_file), "--output-dir", str(afile))
    assert f"InputError: --output-dir {afile}: is a file, not a folder" in line
    line = _error_line(capsys, "run", str(cnn_file), "--output-dir", str(afile / "sub"))
    assert f"lies under {afile}, a file" in line
    for folder in _unwritable_folders(tmp_path):
        line = _error_line(capsys, "run", str(cnn_file), "--output-dir", str(folder / "out"))
        assert f"--output-dir {folder / 'out'}: cannot write the outputs there: folder " \
               f"{folder} is not writable" in line
        assert "loaded" not in capsys.readouterr().out  # nothing ran
    assert afile.read_text() == ""


@pytest.mark.parametrize("argv, said", [
    (["bench", "--iterations", "0"], "--iterations 0: must be at least 1"),
    (["bench", "--iterations", "-5"], "--iterations -5: must be at least 1"),
    (["bench", "--warmup", "-1"], "--warmup -1: must be at least 0"),
    (["bench", "--threads", "0"], "--threads 0: must be at least 1"),
    (["run", "--seed", "-1"], "--seed -1: must be at least 0"),
    (["compare", "--seed", "-1"], "--seed -1: must be at least 0"),
])
def test_counts_and_seeds_out_of_range_are_one_error_line(
        cnn_file: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str) -> None:
    line = _error_line(capsys, argv[0], str(cnn_file), *argv[1:])
    assert f"InputError: {said}" in line


def test_bench_trace_where_it_cannot_be_written_names_the_trace(
        cnn_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for folder in _unwritable_folders(tmp_path):
        trace = folder / "x.json"
        line = _error_line(capsys, "bench", str(cnn_file), "--trace", str(trace),
                           "--iterations", "1", "--warmup", "0")
        assert f"InputError: --trace {trace}: cannot write the trace there" in line
        assert ".tmp" not in line  # no temporary file's name


def test_plugins_new_in_a_file_says_so(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    line = _error_line(capsys, "plugins", "new", "my-plugin", "--dir", str(afile))
    assert f"--dir {afile}: is a file, not a folder" in line
    for folder in _unwritable_folders(tmp_path):
        line = _error_line(capsys, "plugins", "new", "my-plugin", "--dir", str(folder))
        assert f"--dir {folder}: cannot create" in line


# -- issue 29, item 8: a creator rejected as a duplicate ---------------------------------------

def test_a_rejected_duplicate_is_listed_by_plugins_and_one_line_elsewhere(
        twin_site: Path, cnn_file: Path) -> None:
    """mi-test-l2twin registers the example's L2Norm identity first (names sort first):
    mini-infer-example-l2norm's creator is rejected; ``plugins`` says so under that
    distribution, other commands print one warning line, no Python warning with a path."""
    site = {"PYTHONPATH": os.pathsep.join([str(twin_site), os.environ.get("PYTHONPATH", "")])}
    proc = run_cli("plugins", env=site)
    lines = proc.stdout.splitlines()
    (row,) = [x for x in lines if x.split()[:1] == ["mini-infer-example-l2norm"]]
    assert "0 creators (1 rejected as duplicate)" in row
    detail = lines[lines.index(row) + 1]
    assert detail.startswith("    rejected: plugin 'L2Norm' version '1' namespace "
                             "'com.example' from mini-infer-example-l2norm 0.1.0 is already "
                             "registered by mi-test-l2twin 0.0.7")
    assert "Warning" not in proc.stderr, proc.stderr
    proc = run_cli("run", str(cnn_file), env=site)
    warned = [x for x in proc.stderr.splitlines() if "L2Norm" in x]
    assert len(warned) == 1, proc.stderr
    assert warned[0].startswith("mini-infer: warning: DuplicatePluginWarning: plugin 'L2Norm'")
    assert ".py:" not in proc.stderr  # no source path of a warnings.warn


# -- issue 29, items 9 and 10: plugins --markdown and --creators -------------------------------

def test_markdown_names_the_command_that_made_it(capsys: pytest.CaptureFixture[str]) -> None:
    from mini_infer_core.cli.main import main

    assert main(["plugins", "--markdown"]) == 0
    text = capsys.readouterr().out
    assert "Generated from the plugin registry by `mini-infer plugins --markdown`" in text
    assert "no:l2norm" not in text and "com.example" in text
    assert main(["plugins", "--markdown", "-p", "no:l2norm"]) == 0
    assert "by `mini-infer plugins --markdown -p no:l2norm`" in capsys.readouterr().out
    env = {"MINI_INFER_BLOCK_PLUGINS": "l2norm"}
    assert "by `MINI_INFER_BLOCK_PLUGINS=l2norm mini-infer plugins --markdown`" in run_cli(
        "plugins", "--markdown", env=env).stdout
    line = _error_line(capsys, "plugins", "--markdown", "--json")
    assert "--markdown and --json" in line


_TIE_HOOKS = l2norm_hooks("com.tie")


def test_creators_table_lists_each_conflict_once_aligned_and_names_ties(
        tmp_path: Path) -> None:
    """A second L2Norm at the same priority under its own namespace (mi-test-l2tie sorts
    before mini-infer-example-l2norm, so it is chosen): a tie settled by distribution name,
    reported as such; every conflict once (one per opset range); the table's columns line
    up whatever the domain's length."""
    site = tmp_path / "site"
    install_plugin_module(site, "mi-test-l2tie", "0.0.1", "l2tie", _TIE_HOOKS)
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    text = run_cli("plugins", "--creators", env=env).stdout
    lines = text.splitlines()
    start = lines.index(next(x for x in lines if x.startswith("conflicts (")))
    conflicts = lines[start + 1:]
    assert len(conflicts) == len(set(conflicts)), "a conflict line printed twice"
    data = json.loads(run_cli("plugins", "--json", env=env).stdout)
    assert len(conflicts) == len(data["conflicts"])
    (tie,) = [x for x in conflicts if "L2Norm" in x]
    assert "chose com.tie (mi-test-l2tie, prio 0) over com.example " \
           "(mini-infer-example-l2norm, prio 0) (same priority: settled by distribution " \
           "name)" in tie
    ties = [c for c in data["conflicts"] if c["settled_by"] == "distribution name"]
    assert [c["op_type"] for c in ties] == ["L2Norm"]
    assert f"{len(conflicts) - 1} resolved by priority, 1 tie settled by distribution " \
           "name" in text
    rows = [x for x in lines[:start] if x.startswith("  ") and " opsets " in x]
    assert any(x.lstrip().startswith("com.example::L2Norm") for x in rows)
    assert len({x.index(" opsets ") for x in rows}) == 1, "columns do not line up"
    assert len({x.index(" prio ") for x in rows}) == 1, "columns do not line up"


def test_bench_runs_onnxruntime_on_the_thread_count_it_runs_on(
        cnn_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bench --threads 1 --compare onnxruntime``: onnxruntime gets one intra-op thread too
    (its default, every core, made the ratio 2.59 where like for like it was 1.37)."""
    ort = pytest.importorskip("onnxruntime")
    from mini_infer_core.cli import bench as bench_cli

    seen: list[int] = []
    real = ort.InferenceSession

    def session(path: str, options: object, **kw: object) -> object:
        seen.append(options.intra_op_num_threads)  # type: ignore[attr-defined]
        return real(path, options, **kw)

    monkeypatch.setattr(ort, "InferenceSession", session)
    runner = bench_cli._anchor("onnxruntime", str(cnn_file), 1)
    assert callable(runner) and seen == [1]
