"""``mini-infer batch``: score a Parquet dataset or a folder of .npy files on Ray Data, write
Parquet. Ray is imported only when the command runs (it is the optional extra ``[ray]``)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import MiniInferError
from ..registry import PluginRegistry

__all__ = ["command"]

_PLUGIN_ENV = ("MINI_INFER_DISABLE_PLUGIN_AUTOLOAD", "MINI_INFER_STRICT_PLUGINS",
               "MINI_INFER_BLOCK_PLUGINS", "MINI_INFER_PLUGINS")


def _worker_env(args: argparse.Namespace) -> dict[str, str]:
    """The plugin switches of this process (environment and -p) for the workers, which on a
    cluster do not inherit the driver's environment."""
    env = {k: os.environ[k] for k in _PLUGIN_ENV if os.environ.get(k)}
    for opt in args.plugin_opts:
        key = "MINI_INFER_BLOCK_PLUGINS" if opt.startswith("no:") else "MINI_INFER_PLUGINS"
        env[key] = ",".join(n for n in (env.get(key, ""), opt.removeprefix("no:")) if n)
    return env


def _read(where: str) -> Any:
    """The dataset (its local path checked before Ray started): Parquet, or .npy files whose
    arrays land in the column ``data``. A URI (s3://, gs://, ...) is read as Parquet by the
    workers."""
    import ray.data

    if "://" in where:
        return ray.data.read_parquet(where)
    path = Path(where)
    if path.is_file():
        return ray.data.read_numpy(str(path)) if path.suffix == ".npy" else \
            ray.data.read_parquet(str(path))
    if not any(path.rglob("*.parquet")):
        return ray.data.read_numpy(str(path), file_extensions=["npy"])
    return ray.data.read_parquet(str(path))


def _start_ray(address: str | None) -> bool:
    """Join the cluster at ``address``, or start a local instance; False where this process
    is already connected (the caller's instance is left running)."""
    import ray

    if ray.is_initialized():
        return False
    # the workers' output is not streamed here: a worker's failure comes back as the error
    # of the run (one line below), not as pages of its tracebacks (they stay in Ray's logs,
    # /tmp/ray/session_latest/logs)
    ray.init(address=address or "local", include_dashboard=False, log_to_driver=False)
    return True


class _NoErrors(logging.Filter):
    """Drops error records: the command reports the run's failure itself, as one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


@contextlib.contextmanager
def _no_ray_error_traces() -> Iterator[None]:
    """While the pipeline runs, Ray's console handlers show no errors: a worker's failure
    would otherwise print Ray Data's stack traces (a hundred lines) before the command's own
    line (Ray's log files keep them; its progress lines still show)."""
    consoles = [h for name, lg in list(logging.root.manager.loggerDict.items())
                if name.split(".")[0] == "ray" and isinstance(lg, logging.Logger)
                for h in lg.handlers
                if getattr(getattr(h, "stream", None), "name", "") in ("<stderr>", "<stdout>")]
    quiet = _NoErrors()
    for h in consoles:
        h.addFilter(quiet)
    try:
        yield
    finally:
        for h in consoles:
            h.removeFilter(quiet)


def _stop_ray() -> None:
    import ray

    ray.shutdown()


def _ray_failure(exc: BaseException) -> MiniInferError | None:
    """A Ray error (an actor that failed to start, a task that raised) as one CLI error line:
    the worker's own mini-infer error where there is one (its message and pip line)."""
    import ray.exceptions

    if not isinstance(exc, ray.exceptions.RayError):
        return None
    text = str(exc)
    at = text.rfind("mini_infer_core.errors.")
    detail = text[at + len("mini_infer_core.errors."):] if at >= 0 else \
        ([line for line in text.splitlines() if line.strip()] or [type(exc).__name__])[-1]
    return MiniInferError(f"the run on Ray failed ({type(exc).__name__}): {detail.strip()}")


def _rows_written(output: str) -> tuple[int, int]:
    """Rows and files written, from the Parquet footers (a local folder or a URI)."""
    import pyarrow.dataset

    written = pyarrow.dataset.dataset(output, format="parquet")
    return written.count_rows(), len(written.files)


def command(args: argparse.Namespace, reg: PluginRegistry) -> dict[str, Any]:
    """Run ``mini-infer batch``; the result's ``text`` is what the CLI prints."""
    from ..ray import infer  # says how to install Ray where it is missing
    from ..ray._infer import fit_resources
    from ._batch_checks import check_before_ray

    checked = check_before_ray(args, reg)
    output = args.output
    t0 = time.perf_counter()
    started = _start_ray(args.address)
    try:
        t1 = time.perf_counter()
        dataset = _read(args.input)
        # blocks of one batch, so that every worker gets some: a file read as one block
        # would go to one actor (streaming, no shuffle; Ray >= 2.4x, else as read)
        try:
            dataset = dataset.repartition(target_num_rows_per_block=args.batch_size)
        except TypeError:  # pragma: no cover - older Ray Data
            pass
        env = _worker_env(args)
        cpus, note = fit_resources(args.workers, args.cpus_per_worker,
                                   1.0 if args.device == "cuda" else None)
        if note is not None:
            print(f"note: {note}", file=sys.stderr)
        out = infer(dataset, checked.engine, workers=args.workers, batch_size=args.batch_size,
                    device=args.device, num_cpus=cpus, input_columns=checked.input_columns,
                    drop_inputs=not args.keep_inputs, preserve_order=not args.unordered,
                    registry=reg, runtime_env={"env_vars": env} if env else None)
        with _no_ray_error_traces():
            out.write_parquet(output)
        t2 = time.perf_counter()
    except Exception as exc:
        failure = _ray_failure(exc)
        if failure is None and isinstance(exc, OSError):  # pyarrow's, writing the output
            failure = MiniInferError(f"--output {output}: cannot write the Parquet files: "
                                     f"{type(exc).__name__}: {exc}")
        if failure is None:
            raise
        raise failure from exc
    finally:
        if started:
            _stop_ray()
    rows, files = _rows_written(output)
    seconds = t2 - t1
    return {"model": args.model, "input": args.input, "output": output, "rows": rows,
            "files": files, "workers": args.workers, "batch_size": args.batch_size,
            "ray_start_seconds": round(t1 - t0, 3), "run_seconds": round(seconds, 3),
            "rows_per_second": round(rows / seconds, 2) if seconds else None,
            "text": f"wrote {rows} rows to {output} ({files} Parquet files) in {seconds:.1f}s "
                    f"({rows / seconds if seconds else 0:.1f} rows/s on {args.workers} "
                    f"worker(s); Ray started in {t1 - t0:.1f}s)"}
