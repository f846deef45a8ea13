"""``mini-infer``: plugins, build, run, inspect. See docs/cli.md."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError, MiniInferError
from . import _report
from ._parser import command_of
from ._parser import parser as _parser

if TYPE_CHECKING:
    from ..registry import PluginRegistry

__all__ = ["main"]

# The modules behind the commands (the builder, onnx, NumPy) are imported by the commands that
# need them: `mini-infer plugins` and `--help` import neither onnx nor NumPy, and loading an
# engine file does not import onnx.


def _registry(args: argparse.Namespace) -> PluginRegistry:
    """The registry of this command (``-p``); a creator rejected as a duplicate is one
    ``mini-infer: warning:`` line (``plugins`` lists it under its distribution instead), not
    a Python warning with a source path."""
    import warnings

    from ..registry import DuplicatePluginWarning, discover, reset_plugin_registry

    blocked: list[str] = []
    load: list[str] = []
    for opt in args.plugin_opts:
        (blocked if opt.startswith("no:") else load).append(opt.removeprefix("no:"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DuplicatePluginWarning)
        reg = discover(block=blocked, load=load, cache=True)  # the discovery cache
    for w in caught:
        if not issubclass(w.category, DuplicatePluginWarning):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
        elif args.command != "plugins":
            print(f"mini-infer: warning: {w.category.__name__}: {w.message} (mini-infer "
                  "plugins lists it)", file=sys.stderr)
    reset_plugin_registry(reg)
    _warn_unknown_plugin_names(reg, args.plugin_opts)
    return reg


def _warn_unknown_plugin_names(reg: PluginRegistry, opts: list[str]) -> None:
    """A ``-p [no:]NAME`` that names no installed distribution or entry point changes
    nothing: one warning line says so (a misspelt block must not pass unnoticed)."""
    from ..registry._discovery import _normalize

    known = {_normalize(n) for d in reg.distributions
             for n in (d.name, d.entry_point.partition("=")[0].strip())}
    for opt in opts:
        name = opt.removeprefix("no:")
        if _normalize(name) not in known:
            print(f"mini-infer: warning: -p {opt}: no installed plugin distribution or entry "
                  f"point is named {name!r}, so it changes nothing; installed: "
                  f"{', '.join(sorted(d.name for d in reg.distributions)) or 'none'}",
                  file=sys.stderr)


def _shapes(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    """--shape NAME=D0,D1,.. options, and the shapes of --input arrays."""
    import numpy as np

    from . import _args

    shapes = _args.parse_shapes(getattr(args, "shape", []))
    for item in getattr(args, "input", []):
        name, _, path = item.partition("=")
        if path and name not in shapes:
            try:
                shapes[name] = tuple(np.load(path, mmap_mode="r", allow_pickle=False).shape)
            except (OSError, ValueError):
                _args.load_npy(item)  # raises the InputError that says what is wrong
    return shapes


def _load(args: argparse.Namespace, reg: PluginRegistry, *, one_off: bool = False) -> Any:
    """The engine file given, or the .onnx built (``one_off``: for one run, as
    ``InferenceSession`` builds it: no tactic timing, see session.one_off_config)."""
    from ..engine.format import is_engine_file

    if is_engine_file(args.model):
        from ..runtime import Runtime
        from ._args import check_engine_device

        engine = Runtime(reg).load_engine(args.model)
        check_engine_device(args.model, engine, _given_device(args))
        return engine
    from ..builder import BuilderConfig
    from ..session import one_off_config
    from .bench import build_for_shapes

    device = getattr(args, "device", "cpu")
    config = one_off_config(device) if one_off else BuilderConfig(device=device)
    return build_for_shapes(reg, args.model, config, _shapes(args))


def _given_device(args: argparse.Namespace) -> str | None:
    """``--device`` where the command line gives it, else None (the default, cpu, is for ONNX
    models; an engine file runs on its own device)."""
    return args.device if getattr(args, "device_given", False) else None


def _model_operators(network: Any) -> set[str]:
    """The operators of a network, with those inside control-flow bodies."""
    import onnx

    ops: set[str] = set()

    def graph_ops(g: onnx.GraphProto) -> None:
        for n in g.node:
            ops.add(f"{n.domain}::{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type)
            for a in n.attribute:
                for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    graph_ops(sub)

    for node in network.nodes:
        ops.add(node.qualified_op)
        for f in node.fields.fields:
            if f.type.name == "GRAPH":
                graph_ops(onnx.GraphProto.FromString(f.data.tobytes()))
    return ops


def _cmd_build(args: argparse.Namespace, reg: PluginRegistry) -> dict[str, Any]:
    from ..builder import Builder, BuilderConfig
    from ..importer import parse_onnx
    from . import _args

    pins = _args.parse_pins(args.pin)
    shapes = _shapes(args)
    _args.check_output_path(args.output)
    t0 = time.perf_counter()
    network = parse_onnx(args.model)
    _args.check_input_names("--shape", shapes, [t.name for t in network.inputs])
    _args.check_pins(pins, _model_operators(network))
    if not args.int8 and (args.calibration or args.calibration_cache or args.save_qdq):
        raise InputError("--calibration, --calibration-cache and --save-qdq belong to an INT8 "
                         "build: add --int8")
    if args.save_qdq:
        _args.check_output_path(args.save_qdq, "--save-qdq", "QDQ model")
    cached = bool(args.int8 and args.calibration_cache
                  and os.path.exists(args.calibration_cache))
    engine = Builder(reg).build_engine(network, BuilderConfig(
        device=args.device, pins=pins, strict_device=args.strict_device, fp16=args.fp16,
        time_tactics=not args.no_tactic_timing, input_shapes=shapes,
        timing_cache=args.timing_cache, negotiate_formats=not args.linear_only,
        int8=args.int8, calibration=args.calibration,
        calibration_cache=args.calibration_cache, calibrator=args.calibrator,
        calibration_batch_size=args.calibration_batch, save_qdq=args.save_qdq,
        int8_min_work=args.int8_min_work),
        release_network=True)
    t1 = time.perf_counter()
    try:
        engine.save(args.output)
    except OSError as exc:  # the temporary file beside it is removed by save
        raise MiniInferError(f"cannot write the engine to {args.output}: "
                             f"{exc.strerror or exc}") from None
    size = os.path.getsize(args.output)
    return {"engine": args.output, "bytes": size, "nodes": len(engine.nodes),
            "build_seconds": round(t1 - t0, 3), "write_seconds":
            round(time.perf_counter() - t1, 3), "memory_plan": engine.build_info["memory_plan"],
            "int8": engine.build_info.get("int8"),
            "text": f"wrote {args.output} ({_report.size_text(size)}, {len(engine.nodes)} "
                    f"nodes, built in {t1 - t0:.2f}s)"
                    + _report.int8_text(engine.build_info, cached)
                    + "".join(f"\n{line}" for line in _report.fallback_lines(engine.build_info))}


def _cmd_run(args: argparse.Namespace, reg: PluginRegistry) -> dict[str, Any]:
    import numpy as np

    from . import _args

    if args.output_dir:
        _args.check_output_dir(args.output_dir, "--output-dir", "outputs")
    t0 = time.perf_counter()
    engine = _load(args, reg, one_off=True)
    t1 = time.perf_counter()
    feeds = _args.feeds(args, engine)
    with engine.create_execution_context() as ctx:
        t2 = time.perf_counter()
        outs = ctx.execute(feeds)
        t3 = time.perf_counter()
    res: dict[str, Any] = {"model": args.model, "load_seconds": round(t1 - t0, 3),
                           "run_seconds": round(t3 - t2, 4), "outputs": {}}
    lines = [f"loaded {args.model} in {t1 - t0:.2f}s, ran in {(t3 - t2) * 1e3:.1f} ms"]
    for name, arr in outs.items():
        s = _report.summary(arr)
        res["outputs"][name] = s
        extra = " ".join(f"{k}={v:.4g}" for k, v in s.items() if isinstance(v, float))
        lines.append(f"  {name}: shape {tuple(arr.shape)} {arr.dtype} {extra}"
                     + (f" argmax={s['argmax']}" if "argmax" in s else ""))
        if args.output_dir:
            safe = name.replace("/", "_").replace(os.sep, "_")
            try:
                Path(args.output_dir).mkdir(parents=True, exist_ok=True)
                np.save(Path(args.output_dir) / f"{safe}.npy", arr)
            except OSError as exc:  # checked before the run; the folder changed since
                raise MiniInferError(f"--output-dir {args.output_dir}: cannot write output "
                                     f"{name!r}: {exc.strerror or exc}") from None
    res["text"] = "\n".join(lines)
    return res


def _cmd_inspect(args: argparse.Namespace, reg: PluginRegistry) -> dict[str, Any]:
    from ..engine.schedule import Schedule

    engine = _load(args, reg)
    static = all(t.dims.is_static() for t in engine.inputs) and \
        engine.build_info.get("memory_plan") is not None
    sched = Schedule(engine, {}) if static else None
    data = _report.engine_json(engine, sched)
    data["text"] = _report.engine_text(engine, sched)
    return data


def _cmd_bench(args: argparse.Namespace, reg: PluginRegistry) -> dict[str, Any]:
    from . import _args
    from .bench import bench, bench_text

    if args.trace:
        _args.check_output_path(args.trace, "--trace", "trace")
    result = bench(args.model, reg, lambda engine: _args.feeds(args, engine),
                   device=_given_device(args), warmup=args.warmup, iterations=args.iterations,
                   compare=args.compare,
                   threads=args.threads, time_tactics=not args.no_tactic_timing,
                   profile=args.profile, graphs=args.cuda_graph, input_shapes=_shapes(args),
                   trace=args.trace)
    result["text"] = bench_text(result)
    return result


def _cmd_batch(args: argparse.Namespace, reg: PluginRegistry) -> dict[str, Any]:
    from .batch import command

    return command(args, reg)


def _cmd_compare(args: argparse.Namespace, reg: PluginRegistry) -> dict[str, Any]:
    from .compare import command

    return command(args, reg)


def _cmd_debug(args: argparse.Namespace, reg: PluginRegistry) -> dict[str, Any]:
    from .debug import command

    return command(args, reg)


def _cmd_report(args: argparse.Namespace, reg: PluginRegistry) -> dict[str, Any]:
    from .report import command

    return command(args, reg)


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    args = _parser(command_of(words)).parse_args(words)
    args.plugin_opts = [*args.pre_plugin_opts, *args.plugin_opts]
    args.verbose += args.pre_verbose
    args.json = args.json or args.pre_json
    try:
        status = _verbose(args) if args.verbose else _main(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return status
    except BrokenPipeError:
        # `mini-infer plugins | head`: the reader is gone; as the Python docs recommend,
        # point stdout at devnull so that the flush at exit does not fail again
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a file (captured in process)
            pass
        return 1
    except KeyboardInterrupt:
        print("mini-infer: interrupted", file=sys.stderr)
        return 130


def _verbose(args: argparse.Namespace) -> int:
    import logging

    from .._debug import HANDLER_NAME

    logger = logging.getLogger("mini_infer")
    handler: logging.Handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
    old_level, old_debug = logger.level, os.environ.get("MINI_INFER_DEBUG")
    if any(h.get_name() == HANDLER_NAME for h in logger.handlers):
        handler = logging.NullHandler()  # MINI_INFER_DEBUG's handler prints them already
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    os.environ["MINI_INFER_DEBUG"] = "2"
    try:
        return _main(args)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        if old_debug is None:
            os.environ.pop("MINI_INFER_DEBUG", None)
        else:
            os.environ["MINI_INFER_DEBUG"] = old_debug


def _main(args: argparse.Namespace) -> int:
    from ..registry import _discovery, reset_plugin_registry

    previous = _discovery._default  # the CLI's registry is process-wide only while it runs
    env: str | None = None
    allow: str | None = None
    if args.allow_plugin_substitutes:  # every Runtime this command makes (run, bench, batch)
        from ..runtime._binding import ALLOW_ENV  # lazily (startup time)

        env = ALLOW_ENV
        allow = os.environ.get(env)
        os.environ[env] = "1"
    try:
        return _run(args)
    finally:
        reset_plugin_registry(previous)
        if env is not None:
            if allow is None:
                os.environ.pop(env, None)
            else:
                os.environ[env] = allow


def _plugins(args: argparse.Namespace, reg: PluginRegistry) -> int:
    if args.action == "new":
        from ._scaffold import scaffold

        if not args.name:
            raise MiniInferError("usage: mini-infer plugins new NAME [--dir DIR]")
        target = scaffold(args.name, Path(args.dir))
        print(f"created {target}: pip install -e '{target}[test]' && pytest {target}")
    elif args.check:
        from ._check import run_check

        return run_check(reg, args.json)
    elif args.markdown:
        from ._operators import operators_markdown

        if args.json:
            raise InputError("--markdown and --json each choose the output; give one "
                             "(--json lists the same creators: mini-infer plugins --json)")
        switches = ("MINI_INFER_DISABLE_PLUGIN_AUTOLOAD", "MINI_INFER_BLOCK_PLUGINS",
                    "MINI_INFER_PLUGINS")  # they change the table as -p does
        command = " ".join([*(f"{k}={os.environ[k]}" for k in switches if os.environ.get(k)),
                            "mini-infer plugins --markdown",
                            *(f"-p {opt}" for opt in args.plugin_opts)])
        print(operators_markdown(reg, command), end="")
    elif args.json:
        print(json.dumps(_report.plugins_json(reg), indent=2))
    else:
        print(_report.plugins_text(reg, creators=args.creators))
    return 0


def _run(args: argparse.Namespace) -> int:
    try:
        if args.command != "plugins":  # (that one imports no NumPy, which _args does)
            from . import _args

            _args.check_numbers(args)
        reg = _registry(args)
        if args.command == "plugins":
            return _plugins(args, reg)
        print(_report.header_line(reg), file=sys.stderr if args.json else sys.stdout)
        handler = {"build": _cmd_build, "run": _cmd_run, "inspect": _cmd_inspect,
                   "bench": _cmd_bench, "batch": _cmd_batch,
                   "compare": _cmd_compare, "debug": _cmd_debug,
                   "report": _cmd_report}[args.command]
        result = handler(args, reg)
        status = int(result.pop("exit_status", 0))
        if args.json:
            result.pop("text", None)
            print(json.dumps(result, indent=2, default=str))
        else:
            print(result["text"])
        return status
    except MiniInferError as exc:
        print(f"mini-infer: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, PermissionError, NotADirectoryError, IsADirectoryError,
            FileExistsError) as exc:  # a path of the environment, not a bug: one line too
        print(f"mini-infer: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
