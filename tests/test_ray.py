"""Batch inference on Ray Data (mini_infer_core.ray, ``mini-infer batch``) on a real local Ray
instance that this module starts once (2 CPUs, no dashboard) and stops at the end.

The oracles: ``InferenceSession`` on the same rows in the same batches, in this process
(the Ray layer must not change a bit), and onnxruntime (independent, to a tolerance).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from helpers import l2norm_hooks, ort_run
from onnx import TensorProto, helper

import mini_infer_core as mi

pytest.importorskip(
    "ray.data", reason="Ray Data is not installed (pip install 'mini-infer-core[ray]'; "
    "scripts/setup.sh installs it)")
import ray  # noqa: E402  (after the skip check above)

L2NORM_DIST = "mini-infer-example-l2norm"
ROWS, BATCH = 40, 8


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """One local Ray instance for the module; its address, for the CLI to join."""
    if ray.is_initialized():  # pragma: no cover - another module left one running
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING",
             log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _l2norm_model() -> onnx.ModelProto:
    """Relu then the example third-party plugin's com.example::L2Norm."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("L2Norm", ["r"], ["y"], domain="com.example", epsilon=1e-4,
                              axis=1, name="l2")]
    return helper.make_model(helper.make_graph(nodes, "l2net", [x], [y]), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])


def _images(rows: int = ROWS, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, 3, 8, 8)).astype(np.float32)


def _dataset(column: str, data: np.ndarray) -> Any:
    """Rows {id, column}; blocks of BATCH rows, so that every batch is one block whatever
    the bundling, and the oracle can run the same batches."""
    items = [{"id": i, column: data[i]} for i in range(len(data))]
    ds = ray.data.from_items(items, override_num_blocks=len(data) // BATCH)
    ds.context.execution_options.preserve_order = True
    return ds


def _batched(sess: mi.InferenceSession, data: np.ndarray, name: str = "x") -> np.ndarray:
    """The oracle: the same rows in the same batches, in this process."""
    return np.concatenate([sess.run(None, {name: data[i:i + BATCH]})[0]
                           for i in range(0, len(data), BATCH)])


@pytest.mark.slow
def test_engine_bytes_in_the_object_store_bit_identical_and_in_order(
        ray_address: str, small_cnn: onnx.ModelProto) -> None:
    from mini_infer_core.ray import EnginePredictor

    engine = mi.InferenceSession(small_cnn).engine
    data = _images()
    ref = ray.put(engine.serialize())  # the driver ships the bytes once
    out = _dataset("x", data).map_batches(
        EnginePredictor, fn_constructor_kwargs={"engine": ref},
        compute=ray.data.ActorPoolStrategy(size=2), batch_size=BATCH, batch_format="numpy")
    rows = out.take_all()
    assert [r["id"] for r in rows] == list(range(ROWS))  # preserve_order holds
    got = np.stack([r["y"] for r in rows])
    assert got.dtype == np.float32 and got.shape == (ROWS, 10)
    np.testing.assert_array_equal(got, _batched(mi.InferenceSession(engine.serialize()), data))
    np.testing.assert_allclose(got, ort_run(small_cnn, {"x": data})[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.stack([r["x"] for r in rows]), data)  # inputs kept


@pytest.mark.slow
def test_infer_one_liner_engine_file_with_renamed_columns(
        ray_address: str, small_cnn: onnx.ModelProto, tmp_path: Path) -> None:
    from mini_infer_core.ray import infer

    path = tmp_path / "cnn.engine"
    mi.InferenceSession(small_cnn).save_engine(path)
    data = _images(seed=1)
    out = infer(_dataset("image", data), path, workers=1, batch_size=BATCH,
                input_columns={"x": "image"}, output_columns={"y": "probs"},
                drop_inputs=True, preserve_order=True)
    batch = out.take_batch(ROWS, batch_format="numpy")
    assert sorted(batch) == ["id", "probs"]
    np.testing.assert_array_equal(batch["id"], np.arange(ROWS))
    np.testing.assert_array_equal(batch["probs"], _batched(mi.InferenceSession(path), data))


@pytest.mark.slow
def test_onnx_built_once_per_actor_with_a_third_party_plugin(ray_address: str,
                                                             tmp_path: Path) -> None:
    from mini_infer_core.ray import EnginePredictor

    model = _l2norm_model()
    onnx.save(model, str(tmp_path / "l2.onnx"))
    data = np.random.default_rng(2).standard_normal((ROWS, 8)).astype(np.float32)
    out = _dataset("x", data).map_batches(
        EnginePredictor, fn_constructor_kwargs={"engine": str(tmp_path / "l2.onnx")},
        compute=ray.data.ActorPoolStrategy(size=1), batch_size=BATCH, batch_format="numpy")
    got = out.take_batch(ROWS, batch_format="numpy")["y"]
    np.testing.assert_array_equal(got, _batched(mi.InferenceSession(model), data))
    r = np.maximum(data, 0)  # independent: the formula
    np.testing.assert_allclose(got, r / np.sqrt((r * r).sum(axis=1, keepdims=True) + 1e-4),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_worker_without_the_plugin_distribution_fails_at_start_with_the_pip_line(
        ray_address: str) -> None:
    from mini_infer_core.ray import infer

    engine_bytes = mi.InferenceSession(_l2norm_model()).engine.serialize()
    # what Runtime.load_engine says where the distribution is blocked (installed here, so
    # the hint is to unblock it, not to install it)
    without = mi.discover(block=[L2NORM_DIST])
    with pytest.raises(mi.PluginNotFoundError) as local:
        mi.Runtime(without).deserialize_engine(engine_bytes)
    assert f"{L2NORM_DIST} 0.1.0 is installed but blocked" in str(local.value)
    data = np.ones((BATCH, 8), np.float32)
    out = infer(_dataset("x", data), engine_bytes, workers=1, batch_size=BATCH,
                runtime_env={"env_vars": {"MINI_INFER_BLOCK_PLUGINS": L2NORM_DIST}})
    with pytest.raises(ray.exceptions.RayError) as remote:
        out.take_all()
    message = str(remote.value)
    assert "__init__" in message  # the actor's construction, before any batch
    assert "PluginNotFoundError: Ray worker " in message
    assert str(local.value) in message  # the same message and pip line
    assert "runtime_env={'pip'" in message


@pytest.mark.slow
def test_cli_batch_end_to_end_on_parquet(ray_address: str, small_cnn: onnx.ModelProto,
                                         tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    onnx.save(small_cnn, str(tmp_path / "cnn.onnx"))
    engine = tmp_path / "cnn.engine"
    mi.InferenceSession(small_cnn).save_engine(engine)
    data = _images(seed=3)
    # plain Parquet as pandas or pyarrow write it: the image as a flat list of floats
    flat = pa.FixedSizeListArray.from_arrays(pa.array(data.reshape(-1)), 3 * 8 * 8)
    pq.write_table(pa.table({"id": np.arange(ROWS), "x": flat}), tmp_path / "in.parquet",
                   row_group_size=BATCH)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mini_infer_core.cli.main", "batch", str(engine),
         "--input", str(tmp_path / "in.parquet"), "--output", str(tmp_path / "out"),
         "--workers", "2", "--batch-size", str(BATCH), "--address", ray_address, "--json"],
        capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "each worker reserves 0.5 CPU" in proc.stderr  # one of 2 CPUs left for the I/O
    report = json.loads(proc.stdout)
    assert report["rows"] == ROWS and report["workers"] == 2
    table = pq.read_table(tmp_path / "out")
    assert sorted(table.column_names) == ["id", "y"]  # the fed column is not written again
    ids = np.asarray(table.column("id").to_pylist())
    got = np.asarray(table.column("y").to_pylist(), np.float32)
    assert sorted(ids.tolist()) == list(range(ROWS))
    want = _batched(mi.InferenceSession(engine), data)
    np.testing.assert_array_equal(got, want[ids])


def test_ray_stays_out_of_the_base_import_and_its_absence_says_how_to_install() -> None:
    code = """
import sys

class NoRay:  # as if Ray were not installed
    def find_spec(self, name, path=None, target=None):
        if name == "ray" or name.startswith("ray."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, NoRay())
import mini_infer_core, mini_infer_core.cli.main
from mini_infer_core.cli.main import main
assert main(["batch", "m.onnx", "--input", "in", "--output", "out"]) == 2
try:
    import mini_infer_core.ray
except mini_infer_core.MiniInferError as exc:
    assert isinstance(exc, ImportError)
    print(type(exc).__name__, exc)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.splitlines()[-1]
    assert last == ("RayNotInstalledError mini_infer_core.ray needs Ray Data, which is not "
                    "installed in this environment (ModuleNotFoundError: No module named "
                    "'ray'); install the extra: pip install 'mini-infer-core[ray]'")
    assert "RayNotInstalledError" in proc.stderr and "mini-infer-core[ray]" in proc.stderr
    plain = subprocess.run(
        [sys.executable, "-c", "import sys, mini_infer_core, mini_infer_core.cli.main; "
         "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))"],
        capture_output=True, text=True, timeout=300, check=True)
    assert plain.stdout.strip() == "[]"


def test_predictor_called_directly_column_rules(small_cnn: onnx.ModelProto) -> None:
    """The column rules on a real engine, the predictor called in this process (no actor):
    flat lists reshaped, a batch-1 engine run row by row, lossless casts only, clear errors."""
    from mini_infer_core.ray import EnginePredictor

    fixed = onnx.ModelProto()
    fixed.CopyFrom(small_cnn)
    for value in (*fixed.graph.input, *fixed.graph.output):
        value.type.tensor_type.shape.dim[0].dim_value = 1  # batch fixed at 1
    data = _images(rows=4, seed=4)
    want = ort_run(small_cnn, {"x": data})[0]
    pred = EnginePredictor(fixed, output_columns=["y"])
    out = pred({"x": data.reshape(4, -1), "id": np.arange(4)})
    assert sorted(out) == ["id", "x", "y"]
    np.testing.assert_allclose(out["y"], want, rtol=1e-5, atol=1e-6)
    objects = np.empty(4, object)
    objects[:] = list(data)  # how Ray hands over a column of arrays
    np.testing.assert_array_equal(pred({"x": objects})["y"], out["y"])
    half = data.astype(np.float16)  # float16 -> float32 loses nothing: cast
    np.testing.assert_array_equal(pred({"x": half})["y"],
                                  pred({"x": half.astype(np.float32)})["y"])
    with pytest.raises(mi.InputError, match=r"reads column 'x', which the batch lacks"):
        pred({"image": data})
    with pytest.raises(mi.InputError, match="holds float64.*takes float32"):
        pred({"x": data.astype(np.float64)})
    with pytest.raises(mi.InputError, match="would replace column 'y'"):
        pred({"x": data, "y": np.zeros(4)})
    with pytest.raises(mi.InputError, match=r"not outputs of the engine; its outputs are \['y'\]"):
        EnginePredictor(fixed, output_columns={"probs": "p"})


@pytest.mark.slow
def test_cli_batch_on_a_folder_of_npy_files_with_an_onnx_model(
        ray_address: str, small_cnn: onnx.ModelProto, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """In this process (the CLI joins the running instance and leaves it running): the ONNX
    model is built once here, each .npy file's rows feed the engine's only input."""
    import pyarrow.parquet as pq

    from mini_infer_core.cli.main import main

    onnx.save(small_cnn, str(tmp_path / "cnn.onnx"))
    data = _images(rows=2 * BATCH, seed=5)
    (tmp_path / "npy").mkdir()
    for k in range(2):
        np.save(tmp_path / "npy" / f"part{k}.npy", data[k * BATCH:(k + 1) * BATCH])
    assert main(["batch", str(tmp_path / "cnn.onnx"), "--input", str(tmp_path / "npy"),
                 "--output", str(tmp_path / "out"), "--batch-size", str(BATCH),
                 "--keep-inputs"]) == 0
    assert "wrote 16 rows" in capsys.readouterr().out
    assert ray.is_initialized()
    table = pq.read_table(tmp_path / "out")
    assert sorted(table.column_names) == ["data", "y"]
    fed = np.asarray(table.column("data").to_pylist(), np.float32)
    got = np.asarray(table.column("y").to_pylist(), np.float32)
    order = [int(np.flatnonzero((data == row).all(axis=(1, 2, 3)))[0]) for row in fed]
    assert sorted(order) == list(range(2 * BATCH))
    np.testing.assert_allclose(got, ort_run(small_cnn, {"x": data})[0][order], rtol=1e-5,
                               atol=1e-6)


# -- issue 29, items 2 and 6: what `mini-infer batch` checks before Ray starts -----------------

@pytest.fixture
def no_ray_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI must fail before it starts (or joins) Ray: starting it fails the test."""
    from mini_infer_core.cli import batch

    def refuse(address: str | None) -> bool:
        raise AssertionError("Ray was started before the mistake was found")

    monkeypatch.setattr(batch, "_start_ray", refuse)


def _batch_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """``mini-infer batch ...`` in this process: exit 2, stderr one error (the loader's
    message about missing plugins spans a few lines, as in `run`), no tracebacks of Ray
    workers, no colour codes; the error, its lines joined."""
    from mini_infer_core.cli.main import main

    assert main(["batch", *argv]) == 2
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert lines[0].startswith("mini-infer: error: ") and len(lines) <= 4, err
    assert "Traceback" not in err and "\x1b[" not in err and "mini-infer: error:" not in \
        "".join(lines[1:]), err
    return " ".join(lines)


def _parquet(path: Path, column: str, rows: int = BATCH) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    flat = pa.FixedSizeListArray.from_arrays(pa.array(_images(rows).reshape(-1)), 3 * 8 * 8)
    pq.write_table(pa.table({"id": np.arange(rows), column: flat}), path)
    return path


def test_cli_batch_blocking_a_plugin_is_one_error_line_before_ray_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], no_ray_start: None) -> None:
    """``-p no:DIST``: the engine is loaded here with the command's plugins first, so the
    blocked plugin is the one error line with the hint (unblock it), not a failure of every
    worker (issue 29, item 6)."""
    engine = tmp_path / "l2.engine"
    mi.InferenceSession(_l2norm_model()).save_engine(engine)
    (tmp_path / "npy").mkdir()
    np.save(tmp_path / "npy" / "rows.npy", np.ones((BATCH, 8), np.float32))
    line = _batch_error(capsys, str(engine), "--input", str(tmp_path / "npy"), "--output",
                        str(tmp_path / "out"), "-p", f"no:{L2NORM_DIST}")
    assert "PluginNotFoundError: " in line
    assert f"{L2NORM_DIST} 0.1.0 is installed but blocked" in line
    assert not (tmp_path / "out").exists()


def test_cli_batch_missing_column_is_found_before_ray_with_the_cli_hint(
        small_cnn: onnx.ModelProto, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        no_ray_start: None) -> None:
    onnx.save(small_cnn, str(tmp_path / "cnn.onnx"))
    data = _parquet(tmp_path / "in.parquet", "image")
    line = _batch_error(capsys, str(tmp_path / "cnn.onnx"), "--input", str(data),
                        "--output", str(tmp_path / "out"))
    assert "InputError: --input " in line
    assert "engine input 'x' reads column 'x', which the data lacks (its columns: id, " \
           "image); choose the column with --column x=COLUMN" in line
    assert "input_columns" not in line  # the Python API's spelling is no use here
    line = _batch_error(capsys, str(tmp_path / "cnn.onnx"), "--input", str(data),
                        "--output", str(tmp_path / "out"), "--column", "x=picture")
    assert "reads column 'picture', which the data lacks" in line
    line = _batch_error(capsys, str(tmp_path / "cnn.onnx"), "--input", str(data),
                        "--output", str(tmp_path / "out"), "--column", "q=image")
    assert "--column 'q=image': 'q' is not an input of the engine; its inputs are 'x'" in line


def test_cli_batch_output_that_cannot_be_written_is_found_before_ray(
        small_cnn: onnx.ModelProto, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        no_ray_start: None) -> None:
    onnx.save(small_cnn, str(tmp_path / "cnn.onnx"))
    data = _parquet(tmp_path / "in.parquet", "x")
    afile = tmp_path / "afile"
    afile.write_text("")
    line = _batch_error(capsys, str(tmp_path / "cnn.onnx"), "--input", str(data),
                        "--output", str(afile))
    assert f"InputError: --output {afile}: is a file, not a folder" in line
    # /proc takes no new files, whoever runs the tests (root included)
    line = _batch_error(capsys, str(tmp_path / "cnn.onnx"), "--input", str(data),
                        "--output", "/proc/scores")
    assert "InputError: --output /proc/scores: cannot write the Parquet files there: folder " \
           "/proc is not writable" in line


def test_cli_batch_on_cuda_without_a_gpu_fails_at_once(
        small_cnn: onnx.ModelProto, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        no_ray_start: None) -> None:
    """Ray would wait forever for a GPU ("pending: 1 CPU, 1 GPU"); the CLI says what `run`
    says instead (issue 29, item 2)."""
    from mini_infer_core.registry import discover

    cuda = discover().get_device("cuda")
    if cuda is not None and cuda.availability()[0]:
        pytest.skip("this machine has a usable GPU: the cuda device is available")
    onnx.save(small_cnn, str(tmp_path / "cnn.onnx"))
    data = _parquet(tmp_path / "in.parquet", "x")
    line = _batch_error(capsys, str(tmp_path / "cnn.onnx"), "--input", str(data),
                        "--output", str(tmp_path / "out"), "--device", "cuda")
    assert "DeviceError: --device cuda: device 'cuda', which is unavailable here: " in line


# -- issue 29, item 1: infer() leaves a CPU for the dataset's reads and writes ----------------

@pytest.mark.slow
def test_resources_are_fitted_to_the_cluster(ray_address: str) -> None:
    """On the module's 2-CPU instance: two actors of one CPU would leave none for reading
    and writing (each then gets 0.5); one actor fits; GPUs it lacks are an error at once."""
    from mini_infer_core.ray._infer import fit_resources

    cpus, note = fit_resources(2, 1.0, None)
    assert cpus == 0.5 and note is not None and "each worker reserves 0.5 CPU" in note
    assert fit_resources(1, 1.0, None) == (1.0, None)
    with pytest.raises(mi.DeviceError, match=r"device 'cuda', which is unavailable here: 1 "
                       r"worker\(s\) x 1 GPU need 1 GPU\(s\), the Ray cluster has 0"):
        fit_resources(1, 1.0, 1.0)


_DOC_EXAMPLE = """
import sys
import ray
import pyarrow.parquet as pq
from mini_infer_core.ray import infer

address, source, model, output = sys.argv[1:]
ray.init(address=address, log_to_driver=False)
ray.data.DataContext.get_current().enable_progress_bars = False
ds = ray.data.read_parquet(source)
out = infer(ds, model, workers=2, batch_size=8)   # docs/distributed.md, no num_cpus
out.write_parquet(output)
print(pq.read_table(output).num_rows)
"""


@pytest.mark.slow
def test_infer_with_two_workers_on_two_cpus_reads_and_writes(
        ray_address: str, small_cnn: onnx.ModelProto, tmp_path: Path) -> None:
    """docs/distributed.md's example, read_parquet -> infer(workers=2) -> write_parquet, on
    2 CPUs: it used to wait forever (the two actors held both CPUs the read and write tasks
    need). In another process, so that a hang is a timeout, not a stuck test run."""
    onnx.save(small_cnn, str(tmp_path / "cnn.onnx"))
    source = _parquet(tmp_path / "in.parquet", "x", rows=2 * BATCH)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _DOC_EXAMPLE, ray_address, str(source),
             str(tmp_path / "cnn.onnx"), str(tmp_path / "out")],
            capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("infer(workers=2) on 2 CPUs did not finish in 240 s (the pool holds "
                    "every CPU: the read and write tasks wait forever)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-1] == str(2 * BATCH)


@pytest.mark.slow
def test_actor_threads_follow_the_cpus_ray_gives_it(ray_address: str,
                                                    small_cnn: onnx.ModelProto) -> None:
    from mini_infer_core.ray import EnginePredictor

    def threads(predictor: EnginePredictor) -> tuple[int | None, list[int]]:
        import numpy  # runs in the actor: nothing of this module is there

        from mini_infer_core.threads import blas_info

        predictor({"x": numpy.zeros((2, 3, 8, 8), numpy.float32)})  # pools register on use
        return predictor.num_threads, [int(p["num_threads"]) for p in blas_info()]

    ref = ray.put(mi.InferenceSession(small_cnn).engine.serialize())
    actor = ray.remote(num_cpus=1)(EnginePredictor).remote(engine=ref)
    num_threads, pools = ray.get(actor.__ray_call__.remote(threads))
    assert num_threads == 1 and pools and set(pools) == {1}  # 2 cores, 1 given
    ray.kill(actor)


_TWIN_HOOKS = l2norm_hooks("com.example")


@pytest.mark.slow
def test_cli_batch_worker_failure_is_the_error_without_ray_tracebacks(
        ray_address: str, tmp_path: Path) -> None:
    """A plugin the driver has and the workers lack (a distribution on the driver's
    PYTHONPATH only, the example's own blocked by -p): the actors fail at start; stderr has
    the command's error with the pip line, not Ray Data's stack traces (issue 29, item 6)."""
    from helpers import install_plugin_module

    site = tmp_path / "site"
    install_plugin_module(site, "mi-test-l2twin", "0.0.7", "l2twin", _TWIN_HOOKS)
    onnx.save(_l2norm_model(), str(tmp_path / "l2.onnx"))
    (tmp_path / "npy").mkdir()
    np.save(tmp_path / "npy" / "rows.npy", np.ones((BATCH, 8), np.float32))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(site), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "mini_infer_core.cli.main", "batch", str(tmp_path / "l2.onnx"),
         "--input", str(tmp_path / "npy"), "--output", str(tmp_path / "out"), "--address",
         ray_address, "-p", f"no:{L2NORM_DIST}"],
        capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "Full stack trace" not in proc.stderr, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("mini-infer: error:")]
    assert "the run on Ray failed (ActorDiedError): PluginNotFoundError: Ray worker" in line
    assert "pip install mi-test-l2twin==0.0.7" in proc.stderr
