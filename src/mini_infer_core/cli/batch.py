"""``mini-infer batch``: score a Parquet dataset or a folder of .npy files on Ray Data, write
Parquet. Ray is imported only when the command runs (it is the optional extra ``[ray]``)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import InputError, MiniInferError
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


def _read(where: str) -> tuple[Any, str | None]:
    """The dataset, and the column a .npy folder's arrays land in (None for Parquet). A URI
    (s3://, gs://, ...) is read as Parquet by the workers; a local path is checked here."""
    import ray.data

    if "://" in where:
        return ray.data.read_parquet(where), None
    path = Path(where)
    if not path.exists():
        raise InputError(f"--input {path}: no such file or folder")
    if path.is_file():
        if path.suffix == ".npy":
            return ray.data.read_numpy(str(path)), "data"
        return ray.data.read_parquet(str(path)), None
    if not any(path.rglob("*.parquet")):
        if any(path.rglob("*.npy")):
            return ray.data.read_numpy(str(path), file_extensions=["npy"]), "data"
        raise InputError(f"--input {path}: the folder holds neither .parquet nor .npy files")
    return ray.data.read_parquet(str(path)), None


def _start_ray(address: str | None) -> bool:
    """Join the cluster at ``address``, or start a local instance; False where this process
    is already connected (the caller's instance is left running)."""
    import ray

    if ray.is_initialized():
        return False
    ray.init(address=address or "local", include_dashboard=False)
    return True


def _cpus_per_worker(workers: int, requested: float) -> float:
    """CPUs each actor reserves, leaving one of the cluster's for the Parquet listing, read and
    write tasks: the actor pool starts first and would otherwise hold every CPU while those
    tasks wait for one (a deadlock). The actors' kernel threads follow (at least one)."""
    import ray

    total = float(ray.cluster_resources().get("CPU", 0.0))  # type: ignore[no-untyped-call]
    if total <= 1 or workers * requested <= total - 1:
        return requested
    shared = (total - 1) / workers
    print(f"note: {workers} worker(s) x {requested:g} CPU would leave none of the cluster's "
          f"{total:g} for reading and writing; each worker reserves {shared:.3g} CPU",
          file=sys.stderr)
    return shared


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

    if args.workers < 1 or args.batch_size < 1:
        raise MiniInferError("--workers and --batch-size must be at least 1")
    columns: dict[str, str] = {}
    for item in args.column:
        name, _, column = item.partition("=")
        if not column:
            raise InputError(f"--column {item!r}: expected INPUT=COLUMN")
        columns[name] = column
    output = args.output
    if "://" not in output and Path(output).is_dir() and any(Path(output).iterdir()):
        raise InputError(f"--output {output}: the folder is not empty; choose a new one")
    t0 = time.perf_counter()
    started = _start_ray(args.address)
    try:
        t1 = time.perf_counter()
        dataset, npy_column = _read(args.input)
        # blocks of one batch, so that every worker gets some: a file read as one block
        # would go to one actor (streaming, no shuffle; Ray >= 2.4x, else as read)
        try:
            dataset = dataset.repartition(target_num_rows_per_block=args.batch_size)
        except TypeError:  # pragma: no cover - older Ray Data
            pass
        env = _worker_env(args)
        cpus = _cpus_per_worker(args.workers, args.cpus_per_worker)
        out = infer(dataset, args.model, workers=args.workers, batch_size=args.batch_size,
                    device=args.device, num_cpus=cpus,
                    input_columns=columns or npy_column, drop_inputs=not args.keep_inputs,
                    preserve_order=not args.unordered, registry=reg,
                    runtime_env={"env_vars": env} if env else None)
        out.write_parquet(output)
        t2 = time.perf_counter()
    except Exception as exc:
        failure = _ray_failure(exc)
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
