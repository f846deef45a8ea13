"""A plan's run as one generated Python function: the small-model path.

A model of a few tiny nodes (a scikit-learn pipeline scoring one row) spends more time in the
run's own bookkeeping than in its kernels: looking its inputs' dtypes and shapes up again,
copying them in through the device's methods, a loop over the steps, NumPy's ``errstate``
(~3 us on its own), the results' dict. Where a plan can run that way -- one device whose
arrays are host NumPy arrays (``Device.host_arrays``), every engine input copied into a
buffer of the plan and every output read from one or handed back as a value
(``Plan.staged_results``) -- :func:`direct_run` writes its run as straight-line code with
every buffer and bound call a constant of the function::

    def run(feeds):
        if len(feeds) != 1: return None
        try:
            x0 = feeds['X']
            if x0.dtype is not d0 or x0.shape != s0: return None
        except (KeyError, AttributeError, TypeError):
            return None
        b0[...] = x0
        token = quiet_on()
        try:
            c0()
            c1()
        except Exception as exc:
            failed(exc)
        finally:
            quiet_off(token)
        return [o0.copy(), values(v['label'], k0)]

It returns None, before running anything, for inputs unlike the plan's (another name, dtype
or shape, or no array): the context then takes its checked path, which raises the same
errors as ever or plans the new shapes. A step that raises is named by the line it was on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import ExecutionError, node_errors
from ..plugin import Device, Stream
from ..plugin._kinds import map_tensors

__all__ = ["DirectRun", "direct_run", "quiet_fp_state"]

#: a plan's run: the outputs in engine order, or None where the inputs are not the plan's
DirectRun = Callable[[Mapping[str, Any]], "list[Any] | None"]


def _errstate_enter() -> Any:
    ctx = np.errstate(all="ignore")
    ctx.__enter__()
    return ctx


def _errstate_leave(ctx: Any) -> None:
    ctx.__exit__(None, None, None)


def quiet_fp_state() -> tuple[Callable[[], Any], Callable[[Any], None]]:
    """(enter, leave): NumPy's floating-point warnings off and back, as
    ``np.errstate(all="ignore")`` does, at a fraction of its cost where NumPy keeps that
    state in a context variable (NumPy 2): the quiet state is made from the caller's (its
    buffer size and error callback kept, as errstate keeps them) once per caller's state,
    not once per run."""
    try:
        from numpy._core._ufunc_config import (  # type: ignore[attr-defined]
            _extobj_contextvar,
            _make_extobj,
        )

        _make_extobj(all="ignore")
    except (ImportError, AttributeError, TypeError):  # NumPy 1.x: its own context manager
        return _errstate_enter, _errstate_leave
    var = _extobj_contextvar
    #: (the caller's state, the quiet one made from it): one tuple, read and replaced whole,
    #: so that threads with states of their own at worst make theirs again
    made: list[tuple[Any, Any]] = [(None, None)]

    def enter() -> Any:
        caller = var.get()
        pair = made[0]
        if pair[0] is not caller:
            pair = made[0] = (caller, _make_extobj(all="ignore"))
        return var.set(pair[1])

    return enter, var.reset


_QUIET = quiet_fp_state()


def _host_only(devices: Mapping[str, Device], streams: Sequence[Stream]) -> bool:
    return all(getattr(d, "host_arrays", False) for d in devices.values()) and all(
        type(s).synchronize is Stream.synchronize for s in streams)


def direct_run(plan: Any, engine: Any, devices: Mapping[str, Device],
               streams: Sequence[Stream], describe: Callable[[int], str]
               ) -> DirectRun | None:
    """``plan``'s run as one generated function (see the module), or None where the plan
    cannot run that way. ``describe(step)`` names a failing step's node."""
    results = plan.staged_results
    if results is None or len(devices) != 1 or not _host_only(devices, streams) or \
            plan.patches or plan.fresh:
        return None
    names = list(engine.input_names)
    staged = dict(plan.staged_in)
    if len(staged) != len(names) or any(n not in staged for n in names):
        return None
    consts: dict[str, Any] = {"quiet_on": _QUIET[0], "quiet_off": _QUIET[1],
                              "values": map_tensors, "host": np.asarray,
                              "vals": plan.values}
    lines = ["def run(feeds):",
             f"    if len(feeds) != {len(names)}:",
             "        return None",
             "    try:",
             "        pass"]  # an engine of no inputs (random generators) has nothing to look up
    for k, name in enumerate(names):
        buf = staged[name]
        consts[f"n{k}"], consts[f"d{k}"], consts[f"s{k}"] = name, buf.dtype, tuple(buf.shape)
        consts[f"b{k}"] = buf
        lines.append(f"        x{k} = feeds[n{k}]")
        lines.append(f"        if x{k}.dtype is not d{k} or x{k}.shape != s{k}:")
        lines.append("            return None")
    lines += ["    except (KeyError, AttributeError, TypeError):",
              "        return None"]
    lines += [f"    b{k}[...] = x{k}" for k in range(len(names))]
    if plan.quiet:
        lines.append("    token = quiet_on()")
    lines.append("    try:")
    steps: dict[int, int] = {}
    for k, (step, call) in enumerate(plan.calls):
        consts[f"c{k}"] = call
        steps[len(lines) + 1] = step  # the line numbers of the generated code count from 1
        lines.append(f"        c{k}()")
    if not plan.calls:
        lines.append("        pass")
    lines += ["    except Exception as exc:",
              "        failed(exc)"]
    if plan.quiet:
        lines += ["    finally:",
                  "        quiet_off(token)"]
    outs = []
    for k, (name, buf) in enumerate(results):
        if buf is None:  # a value the plan's steps made (ZipMap's dicts)
            consts[f"v{k}"], consts[f"k{k}"] = name, engine.tensors[name].value_kind
            outs.append(f"values(host, vals[v{k}], k{k})")
        else:  # the caller's own array, not the plan's buffer
            consts[f"o{k}"] = buf
            outs.append(f"o{k}.copy()")
    lines.append(f"    return [{', '.join(outs)}]")

    def failed(exc: Exception) -> None:
        tb = exc.__traceback__
        step = steps.get(tb.tb_lineno, 0) if tb is not None else 0
        with node_errors(describe(step), ExecutionError, "the plugin failed while running"):
            raise exc

    consts["failed"] = failed
    source = "\n".join(lines) + "\n"
    code = compile(source, f"<mini-infer plan of {engine.name!r}>", "exec")
    exec(code, consts)  # noqa: S102 - our own code, made above from the plan
    run: DirectRun = consts["run"]
    run.source = source  # type: ignore[attr-defined]  # what tests and debugging read
    return run
