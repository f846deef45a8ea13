"""The command line's declarations: every command and option of ``mini-infer``.

Kept apart from the commands so that parsing (``--help``, ``mini-infer plugins``) imports
neither NumPy nor the modules behind the commands.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .._version import __version__

__all__ = ["command_of", "flags", "parser"]

#: each command's one-line help, in ``--help``'s order
HELP = {
    "plugins": "list discovered plugins and devices",
    "build": "build an engine file from ONNX",
    "run": "run an ONNX model or an engine file",
    "bench": "time a model or engine (trtexec-style)",
    "inspect": "show nodes, plugins, memory plan",
    "batch": "batch inference over a dataset on Ray Data (mini-infer-core[ray])",
    "compare": "run a model on two backends and compare the outputs (polygraphy run --compare)",
    "debug": "debug reduce: shrink a failing model to a small subgraph that still fails",
    "report": "write an HTML report of an engine: graph, latency, memory plan, build facts",
}


def _columns() -> int:
    """The terminal's width as :func:`shutil.get_terminal_size` tells it (``COLUMNS``, then
    stdout's terminal, else 80), without importing shutil (and its compression modules),
    which argparse does for every option declared."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, its width found without shutil."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser (its subcommands too) formatting with :class:`_Formatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


def flags(parser: argparse.ArgumentParser, **helps: str) -> None:
    """A ``--name`` switch (``store_true``) for each keyword: ``cuda_graph="..."`` declares
    ``--cuda-graph`` with that help."""
    for name, text in helps.items():
        parser.add_argument(f"--{name.replace('_', '-')}", action="store_true", help=text)


def _shared(parser: argparse.ArgumentParser, dest: str = "") -> None:
    """``-p``, ``-v`` and ``--json``: on every command, and before it under ``pre_*`` names
    (``dest``), merged with those given after it (pytest's ``pytest -p no:NAME ...``)."""
    plugin = "as the command's -p (block or load a plugin distribution)" if dest else (
        "-p no:NAME blocks a plugin distribution before it is imported; -p NAME loads it even "
        "when autoload is off (entry-point or distribution name); repeatable")
    verbose = "as the command's -v" if dest else (
        "log build steps and each plugin's lifecycle (construct, configure, initialize, "
        "enqueue, terminate, destroy)")
    parser.add_argument("-p", dest=f"{dest}plugin_opts", action="append", default=[],
                        metavar="[no:]NAME", help=plugin)
    parser.add_argument("-v", "--verbose", dest=f"{dest}verbose", action="count", default=0,
                        help=verbose)
    parser.add_argument("--json", dest=f"{dest}json", action="store_true",
                        help="as the command's --json" if dest else "machine-readable output")


def _shape(parser: argparse.ArgumentParser, text: str) -> None:
    parser.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,..",
                        help=text)


def _model_command(sub: Any, name: str, parents: list[argparse.ArgumentParser],
                   device: bool = True) -> argparse.ArgumentParser:
    """A command on one model (an ONNX file or an engine file), on ``--device`` (cpu) unless
    ``device`` is False (the caller declares it, later)."""
    cmd: argparse.ArgumentParser = sub.add_parser(name, parents=parents, help=HELP[name])
    cmd.add_argument("model")
    if device:
        cmd.add_argument("--device", default="cpu", action=_Given,
                         help="device to build an ONNX model for (default: cpu); an engine "
                              "file runs on the device it was built for")
    return cmd


class _Given(argparse.Action):
    """Stores the option's value and notes that it was given: ``args.device_given`` (an
    engine file runs on its own device: a ``--device`` given for it is checked, the default
    is not)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def _parents() -> tuple[argparse.ArgumentParser, ...]:
    """The options the commands share: every command's, the inputs of a run (run, bench,
    compare), the build's tactics (build, bench, compare)."""
    common = _Parser(add_help=False)
    _shared(common)
    flags(common, allow_plugin_substitutes="load engines whose plugins are now provided by "
          "another distribution than the one that built them (with a warning)")
    feeds = _Parser(add_help=False)
    feeds.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    _shape(feeds, "concrete shape for a dynamic input when inputs are random")
    feeds.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    tactics = _Parser(add_help=False)
    flags(tactics, no_tactic_timing="keep each plugin's default tactic instead of timing them "
          "(faster build)")
    return common, feeds, tactics


def _plugins(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    pl = sub.add_parser("plugins", parents=parents, help=HELP["plugins"])
    flags(pl, markdown="print the operator table (docs/operators.md)",
          creators="also list every creator and conflict (the full table)")
    pl.add_argument("action", nargs="?", choices=["new"],
                    help="new NAME: scaffold a plugin distribution in --dir (default: .)")
    pl.add_argument("name", nargs="?")
    pl.add_argument("--dir", default=".", help="where `plugins new` creates the package")
    flags(pl, check="import every kernel module of the loaded distributions and report each "
          "failure (exit status 1 on any)")


def _build(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    b = _model_command(sub, "build", parents, device=False)
    b.add_argument("-o", "--output", required=True, help="engine file to write")
    b.add_argument("--device", default="cpu")
    b.add_argument("--pin", action="append", default=[], metavar="OP=PROVIDER",
                   help="use this namespace or distribution for operator OP")
    flags(b, strict_device="fail instead of falling back to the CPU for nodes the device lacks",
          fp16="run nodes in half precision where the device's plugins accept it",
          linear_only="keep every tensor LINEAR (NCHW): no format negotiation, no reformat "
          "steps")
    _shape(b, "fix a dynamic input's shape in the engine (settles control flow on shapes; "
           "needed by models whose branches differ in rank)")
    b.add_argument("--timing-cache", metavar="FILE",
                   help="read tactic timings from FILE and add new ones to it (created if "
                        "missing); builds with the same cache give identical engine files")
    q = b.add_argument_group("INT8 (quantize the float model at build time)")
    q.add_argument("--int8", action="store_true",
                   help="run Conv/MatMul/Gemm on the integer plugins where they take INT8, "
                        "with ranges from --calibration or --calibration-cache")
    q.add_argument("--calibration", metavar="DATA",
                   help="a .npz file (arrays named by input, leading batch axis) or a folder "
                        "of .npz/.npy files (one batch each)")
    q.add_argument("--calibration-cache", metavar="FILE",
                   help="read the ranges from FILE instead of calibrating where it exists; "
                        "written after calibrating otherwise")
    q.add_argument("--calibrator", choices=["minmax", "entropy"], default="minmax",
                   help="how ranges are found: minmax (default; the ranges seen) or entropy "
                        "(TensorRT's IInt8EntropyCalibrator2: KL thresholds clip outliers)")
    q.add_argument("--calibration-batch", type=int, default=32, metavar="N",
                   help="rows per calibration batch from one .npz file (default: 32)")
    q.add_argument("--int8-min-work", type=float, default=128, metavar="N",
                   help="quantize a node only where it does at least N multiply-adds per "
                        "input value, or its input is quantized already (default: 128)")
    q.add_argument("--save-qdq", metavar="FILE.onnx",
                   help="also write the quantized model (QuantizeLinear/DequantizeLinear) as "
                        "ONNX, which onnxruntime runs as it is")


def _bench(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    bn = _model_command(sub, "bench", parents)
    bn.add_argument("--compare", action="append", default=[], metavar="TARGET",
                    help="also time onnxruntime or reference (onnx ReferenceEvaluator); "
                         "repeatable")
    bn.add_argument("--warmup", type=int, default=3)
    bn.add_argument("--iterations", type=int, default=20)
    bn.add_argument("--threads", type=int, default=None,
                    help="BLAS/native threads, at most the CPU budget (default: the budget: "
                         "affinity and cgroup CPU quota)")
    flags(bn, profile="also time every node (per operator and the slowest nodes)",
          cuda_graph="replay the run as a device graph after the first run (trtexec's "
          "--useCudaGraph); says why where the engine or device cannot")
    bn.add_argument("--trace", metavar="FILE.json",
                    help="write a Chrome/Perfetto trace (Trace Event Format) of one run: one "
                         "slice per node with its operator, plugin, device and shapes")


def _batch(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    """``batch`` (:mod:`.batch`)."""
    bt = sub.add_parser("batch", parents=parents, help=HELP["batch"])
    bt.add_argument("model", help="an ONNX model (built once here) or an engine file")
    bt.add_argument("--input", required=True,
                    help="a Parquet file or folder, or a folder of .npy files; on a cluster, "
                         "on storage every node reads (shared folder, s3://...)")
    bt.add_argument("--output", required=True,
                    help="folder (or URI) to write the Parquet files to")
    bt.add_argument("--workers", type=int, default=1, help="actors running the engine")
    bt.add_argument("--batch-size", type=int, default=64, help="rows per engine run")
    bt.add_argument("--address", default=None,
                    help="Ray cluster to join (e.g. HEAD_IP:6379, or auto); default: start a "
                         "local Ray instance for this run")
    bt.add_argument("--device", default=None, choices=["cpu", "cuda"],
                    help="cuda: build for and give each worker one GPU (default: cpu)")
    bt.add_argument("--cpus-per-worker", type=float, default=1.0,
                    help="CPUs Ray reserves per actor; its kernel threads follow (default 1)")
    bt.add_argument("--column", action="append", default=[], metavar="INPUT=COLUMN",
                    help="feed engine input INPUT from COLUMN (default: the column of the same "
                         "name; a .npy folder's column is 'data')")
    flags(bt, keep_inputs="also write the columns fed to the engine (default: only the other "
          "columns, e.g. ids, and the outputs)",
          unordered="let rows come out in any order (faster; default: input order)")


def _compare(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    """``compare`` (:mod:`.compare`)."""
    c = sub.add_parser("compare", parents=parents, help=HELP["compare"])
    c.add_argument("model", help="an ONNX model")
    c.add_argument("--a", default="cpu", metavar="DEVICE",
                   help="the first side: a mini-infer device (default: cpu)")
    c.add_argument("--b", default="onnxruntime", metavar="TARGET",
                   help="the second side: a mini-infer device (cuda, ...), onnxruntime or "
                        "reference (onnx's ReferenceEvaluator); default: onnxruntime")
    c.add_argument("--rtol", type=float, default=1e-3,
                   help="relative tolerance, >= 0 (default 1e-3): |a-b| <= atol + rtol*|b|")
    c.add_argument("--atol", type=float, default=1e-4,
                   help="absolute tolerance, >= 0 (default 1e-4)")
    flags(c, per_node="compare every node's outputs and name the first that diverges")


def _debug(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    """``debug reduce`` (:mod:`.debug`)."""
    d = sub.add_parser("debug", help=HELP["debug"])
    tools = d.add_subparsers(dest="tool", required=True)
    r = tools.add_parser("reduce", parents=parents, help=(
        "shrink MODEL to a small subgraph that still fails a check (polygraphy debug reduce)"))
    r.add_argument("model", help="the failing ONNX model")
    r.add_argument("-o", "--output", required=True,
                   help="the reduced model to write (its inputs go to OUTPUT_inputs/)")
    r.add_argument("--check", metavar="COMMAND",
                   help="fails when COMMAND exits non-zero; {model} in it is the candidate "
                        "model's path (else appended), {inputs} a .npz of its inputs")
    r.add_argument("--mode", choices=["compare"],
                   help="compare: fails when mini-infer on --device differs from --b")
    r.add_argument("--device", default="cpu", help="mini-infer's device for --mode compare")
    r.add_argument("--b", default="onnxruntime", choices=["onnxruntime", "reference"],
                   help="the oracle: onnxruntime (default) or reference; it also computes "
                        "the values fed where the model is cut")
    r.add_argument("--rtol", type=float, default=1e-3, help="relative tolerance (1e-3)")
    r.add_argument("--atol", type=float, default=1e-4, help="absolute tolerance (1e-4)")
    r.add_argument("--check-timeout", type=float, default=300.0,
                   help="seconds before a --check command counts as failing (hung)")


def _report(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    """``report`` (:mod:`.report`)."""
    r = _model_command(sub, "report", parents)
    r.add_argument("-o", "--output", required=True, help="the HTML file to write")
    flags(r, no_profile="leave the latency view out (no run)")
    r.add_argument("--runs", type=int, default=10, help="profiled runs (median; default 10)")
    r.add_argument("--compare", choices=["onnxruntime"],
                   help="also profile the .onnx with onnxruntime and chart both")
    r.add_argument("--diff", metavar="OTHER", help="another engine (or .onnx) to diff against")
    r.add_argument("--timing-cache", metavar="FILE",
                   help="count the nodes whose tactic timings FILE holds")


def _run(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    r = _model_command(sub, "run", parents)
    r.add_argument("--output-dir", help="write each output to DIR/NAME.npy")


def command_of(argv: list[str]) -> str | None:
    """The command ``argv`` names (its first word that is one, ``-p``'s value skipped), or
    None (none: ``--help``, ``--version``, a mistake)."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "-p":
            skip = True
        elif word in HELP:
            return word
        elif not word.startswith("-"):
            return None  # not a command: the full parser says so
    return None


def parser(command: str | None = None) -> argparse.ArgumentParser:
    """``mini-infer``'s parser; with ``command``, only that command's options are declared
    (the others by name and help: what ``--help`` lists), which keeps start-up short."""
    p = _Parser(prog="mini-infer", description=(
        "Build and run ONNX models with plugin kernels discovered from installed wheels."))
    p.add_argument("--version", action="version", version=f"mini-infer-core {__version__}")
    _shared(p, "pre_")
    common, feeds, tactics = _parents()
    sub = p.add_subparsers(dest="command", required=True)
    declare: dict[str, tuple[Any, list[argparse.ArgumentParser]]] = {
        "plugins": (_plugins, [common]), "build": (_build, [common, tactics]),
        "run": (_run, [common, feeds]), "bench": (_bench, [common, feeds, tactics]),
        "inspect": (lambda s, ps: _model_command(s, "inspect", ps), [common]),
        "batch": (_batch, [common]), "compare": (_compare, [common, feeds, tactics]),
        "debug": (_debug, [common, feeds]), "report": (_report, [common, feeds, tactics])}
    for name, (fn, parents) in declare.items():
        if command is None or command == name:
            fn(sub, parents)
        else:
            sub.add_parser(name, help=HELP[name])
    return p
