"""Batch inference on Ray Data: rows/s of mini-infer's ``EnginePredictor`` with 1 and 2
actors, against a plain loop in one process and against onnxruntime in the same Ray
pipeline, and the cost of start-up.

Model: onnx's light SqueezeNet (shipped with onnx; random, well-scaled weights from
``mini_infer_core.testing.light_models.randomize_weights``), its batch dimension made
symbolic. Data: ``--rows`` random 3x224x224 float32 images, put in Ray's object store once
as blocks of ``--batch-size`` rows (``ray.data.from_numpy``, materialized before timing).

Method:

1. ``ray.init(num_cpus=--cpus)`` (timed: Ray's own start-up);
2. in this process: the engine is built once (timed) and serialized; loading it back
   (``Runtime().deserialize_engine``, what each actor does) and making an onnxruntime
   session are timed too;
3. the plain loops, in this process: ``InferenceSession.run`` and onnxruntime's ``run`` over
   the same batches, on 1 thread (as one actor) and on ``--cpus`` threads (onnxruntime's
   idle threads do not spin);
4. the Ray pipelines: ``ds.map_batches(EnginePredictor, fn_constructor_kwargs={"engine":
   ObjectRef to the engine bytes}, compute=ActorPoolStrategy(size=N), batch_size=B)`` and the
   same with an onnxruntime predictor (the ONNX bytes through the object store, one
   intra-op thread per CPU the actor has), N = 1 and 2, each actor reserving 1 CPU (its
   kernels then run on 1 thread). The output batches are consumed with ``iter_batches``
   and time-stamped: *start-up* is the time to the first output batch (the actor pool
   starts, each actor loads its engine, runs one batch), *rows/s* the rate over the second
   half of the rows (steady state: every actor is running by then), *end to end* all rows
   over the whole run.

``--repeat`` rounds (default 3) each run every configuration once, the order rotating from
round to round, so that slow drifts of a shared machine hit them alike; the best run of each
is kept (rows/s; the shortest start-up). The outputs are compared with onnxruntime's on the
first batch.

    python benchmarks/ray_batch.py                      # 512 rows, batches of 16
    python benchmarks/ray_batch.py --rows 512 --batch-size 32 --json results.json  # + table
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np
import onnx

import mini_infer_core as mi
from mini_infer_core.testing.light_models import (
    load_light_model,
    randomize_weights,
    strip_initializer_inputs,
)
from mini_infer_core.threads import set_num_threads


def _model(seed: int) -> onnx.ModelProto:
    model = strip_initializer_inputs(randomize_weights(load_light_model("squeezenet"), seed))
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    return model


def _ort_session(model_bytes: bytes, threads: int | None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


class OrtPredictor:
    """onnxruntime in the same Ray pipeline: ONNX bytes in, one output column out."""

    def __init__(self, model: Any) -> None:
        import ray

        if isinstance(model, ray.ObjectRef):
            model = ray.get(model)
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 0)
        self.session = _ort_session(model, max(1, int(cpus)) if cpus else None)
        self.input = self.session.get_inputs()[0].name
        self.output = self.session.get_outputs()[0].name

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        batch = dict(batch)
        batch[self.output] = self.session.run(None, {self.input: batch[self.input]})[0]
        return batch


def _ort_run(session: Any, name: str, batch: np.ndarray) -> Any:
    return session.run(None, {name: batch})


def _timed_batches(batches: Iterator[dict[str, np.ndarray]]) -> dict[str, float]:
    """Time-stamp each output batch: the time to the first, the rate over the second half of
    the rows (every actor is running by then), and all rows over the whole run."""
    t0 = time.perf_counter()
    stamps: list[tuple[float, int]] = []
    done = 0
    for batch in batches:
        done += len(next(iter(batch.values())))
        stamps.append((time.perf_counter(), done))
    half = next(i for i, (_, n) in enumerate(stamps) if n >= done / 2)
    (t_half, n_half), t_last = stamps[half], stamps[-1][0]
    return {"startup_s": stamps[0][0] - t0, "rows": done,
            "rows_per_s": (done - n_half) / (t_last - t_half) if t_last > t_half
            else float("nan"), "end_to_end_rows_per_s": done / (t_last - t0)}


def _best(runs: list[dict[str, float]]) -> dict[str, float]:
    best = max(runs, key=lambda r: r["rows_per_s"])
    return {**best, "startup_s": min(r["startup_s"] for r in runs)}


def _loop(run: Callable[[np.ndarray], Any], data: np.ndarray, batch: int
          ) -> dict[str, float]:
    def batches() -> Iterator[dict[str, np.ndarray]]:
        for i in range(0, len(data), batch):
            yield {"y": run(data[i:i + batch])[0]}  # run returns the list of outputs

    return _timed_batches(batches())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=512)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--cpus", type=int, default=os.cpu_count() or 2,
                    help="CPUs of the local Ray instance (default: all cores)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the results as JSON to FILE (- for stdout)")
    args = ap.parse_args(argv)

    import ray
    import ray.data

    from mini_infer_core.ray import EnginePredictor

    model = _model(args.seed)
    model_bytes = model.SerializeToString()
    name = model.graph.input[0].name
    data = np.random.default_rng(args.seed).random((args.rows, 3, 224, 224), np.float32)
    res: dict[str, Any] = {"model": "squeezenet (light, random weights)", "rows": args.rows,
                           "batch_size": args.batch_size, "cpus": args.cpus, "startup": {},
                           "throughput": {}}
    t0 = time.perf_counter()
    ray.init(num_cpus=args.cpus, include_dashboard=False, logging_level="WARNING",
             log_to_driver=False)
    res["startup"]["ray.init"] = time.perf_counter() - t0
    ray.data.DataContext.get_current().enable_progress_bars = False

    t0 = time.perf_counter()
    engine = mi.InferenceSession(model).engine
    res["startup"]["engine build (once, driver)"] = time.perf_counter() - t0
    engine_bytes = engine.serialize()
    t0 = time.perf_counter()
    mi.Runtime().deserialize_engine(engine_bytes)
    res["startup"]["engine load from bytes (per actor)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ort_sess = _ort_session(model_bytes, None)
    res["startup"]["onnxruntime session (per actor)"] = time.perf_counter() - t0
    sess = mi.InferenceSession(engine_bytes)
    x0 = data[:args.batch_size]
    want = ort_sess.run(None, {name: x0})[0]
    err = float(np.abs(sess.run(None, {name: x0})[0] - want).max())
    res["max_abs_diff_vs_onnxruntime"] = err

    ort_loops = {t: _ort_session(model_bytes, t) for t in sorted({1, args.cpus})}

    def loop(threads: int, run: Callable[[np.ndarray], Any]) -> dict[str, float]:
        set_num_threads(threads)
        try:
            return _loop(run, data, args.batch_size)
        finally:
            set_num_threads(None)

    blocks = [data[i:i + args.batch_size] for i in range(0, args.rows, args.batch_size)]
    ds = ray.data.from_numpy(blocks).rename_columns({"data": name}).materialize()
    engine_ref, model_ref = ray.put(engine_bytes), ray.put(model_bytes)

    def pipeline(workers: int, fn: type, kwargs: dict[str, Any]) -> dict[str, float]:
        out = ds.map_batches(fn, fn_constructor_kwargs=kwargs, batch_size=args.batch_size,
                             compute=ray.data.ActorPoolStrategy(size=workers), num_cpus=1,
                             batch_format="numpy")
        return _timed_batches(out.iter_batches(batch_size=None, batch_format="numpy"))

    configs: dict[str, Callable[[], dict[str, float]]] = {}
    for t, ort_loop in ort_loops.items():
        where = f"plain loop, 1 process, {t} thread(s)"
        configs[f"{where}: mini-infer"] = partial(loop, t, lambda b: sess.run(None, {name: b}))
        configs[f"{where}: onnxruntime"] = partial(loop, t, partial(_ort_run, ort_loop, name))
    for workers in (1, 2):
        where = f"Ray Data, {workers} actor(s)"
        configs[f"{where}: mini-infer"] = partial(pipeline, workers, EnginePredictor,
                                                  {"engine": engine_ref})
        configs[f"{where}: onnxruntime"] = partial(pipeline, workers, OrtPredictor,
                                                   {"model": model_ref})
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in configs}
    keys = list(configs)
    for r in range(args.repeat):  # rounds, each running every configuration, order rotating
        for key in keys[r % len(keys):] + keys[:r % len(keys)]:
            runs[key].append(configs[key]())
    thr = res["throughput"]
    for key in keys:
        thr[key] = _best(runs[key])
    ray.shutdown()

    if args.json:
        text = json.dumps(res, indent=2)
        if args.json == "-":
            print(text)
            return 0
        with open(args.json, "w") as f:
            f.write(text)
    print(table(res))
    return 0


def table(res: dict[str, Any]) -> str:
    """The results as the printed table."""
    thr = res["throughput"]
    lines = [f"{res['model']}: {res['rows']} rows of 3x224x224 float32, batches of "
             f"{res['batch_size']}, {res['cpus']} CPUs; max |mini-infer - onnxruntime| = "
             f"{res['max_abs_diff_vs_onnxruntime']:.2e}", "",
             f"{'configuration':<50} {'rows/s':>8} {'end to end':>11} {'start-up s':>11} "
             f"{'mini/ort':>9}"]
    for key, r in thr.items():
        other = key.replace("mini-infer", "onnxruntime")
        ratio = (f"{r['rows_per_s'] / thr[other]['rows_per_s']:.2f}x"
                 if key.endswith("mini-infer") and other in thr else "")
        lines.append(f"{key:<50} {r['rows_per_s']:>8.1f} {r['end_to_end_rows_per_s']:>11.1f} "
                     f"{r['startup_s']:>11.2f} {ratio:>9}")
    lines += ["", f"{'start-up':<50} {'seconds':>8}"]
    lines += [f"{key:<50} {sec:>8.3f}" for key, sec in res["startup"].items()]
    lines += ["", "rows/s: over the second half of the rows (steady state); end to end: every "
              "row over the whole run;", "start-up: to the first output batch (Ray: actor pool "
              "start, engine load, one batch)."]
    return "\n".join(lines)

if __name__ == "__main__":
    sys.exit(main())
