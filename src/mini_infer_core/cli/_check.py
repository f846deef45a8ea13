"""``mini-infer plugins --check``: import every kernel module the loaded distributions name.

Listing plugins imports only each distribution's hooks: its kernels are lazy
(:class:`~mini_infer_core.plugin.LazyPluginCreator`), so a distribution whose kernel module
cannot be imported is still listed as ``loaded`` and fails only when a model needs it. The
check imports every such module, resolves every lazy creator against its class, and reports
each failure with its distribution and module, as well as the distributions that failed to
load or target another plugin API.
"""

from __future__ import annotations

import importlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ..plugin import LazyPluginCreator
from ..registry import CreatorRecord, PluginRegistry

__all__ = ["CheckFailure", "check_plugins", "check_text", "run_check"]


@dataclass(frozen=True)
class CheckFailure:
    distribution: str
    #: the kernel module (or the distribution's entry point where it did not load)
    module: str
    error: str
    #: the creators the failure leaves unusable
    creators: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"distribution": self.distribution, "module": self.module, "error": self.error,
                "creators": list(self.creators)}


def _summary(exc: BaseException) -> str:
    while isinstance(exc.__cause__, BaseException) and "cannot import" in str(exc):
        exc = exc.__cause__  # the import error itself, not the lazy creator's wrapper
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


def _ident(rec: CreatorRecord) -> str:
    c = rec.creator
    return f"{c.plugin_namespace}::{c.name} v{c.plugin_version}"


def check_plugins(reg: PluginRegistry) -> dict[str, Any]:
    """Import and resolve everything; ``{"ok", "checked", "failures"}`` (JSON-ready)."""
    failures: list[CheckFailure] = []
    for d in reg.distributions:
        if d.status in ("failed", "incompatible"):
            failures.append(CheckFailure(d.name, d.entry_point, f"{d.status}: {d.error}"))
    by_module: dict[tuple[str, str], list[CreatorRecord]] = defaultdict(list)
    for rec in reg.creators:
        if isinstance(rec.creator, LazyPluginCreator):
            module = rec.creator.target.partition(":")[0]
            by_module[(rec.provider, module)].append(rec)
    modules = 0
    for (dist, module), recs in sorted(by_module.items()):
        modules += 1
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - every failure is reported, none raised
            failures.append(CheckFailure(dist, module, _summary(exc),
                                         tuple(_ident(r) for r in recs)))
            continue
        for rec in recs:
            creator = rec.creator
            assert isinstance(creator, LazyPluginCreator)
            try:
                creator.resolve()
            except Exception as exc:  # noqa: BLE001
                failures.append(CheckFailure(dist, creator.target, _summary(exc),
                                             (_ident(rec),)))
    lazy = sum(len(v) for v in by_module.values())
    return {"ok": not failures,
            "checked": {"distributions": len(reg.distributions), "modules": modules,
                        "lazy_creators": lazy},
            "failures": [f.to_json() for f in failures]}


def check_text(result: dict[str, Any]) -> str:
    c = result["checked"]
    head = (f"checked {c['distributions']} distribution(s): imported {c['modules']} kernel "
            f"module(s) for {c['lazy_creators']} lazy creator(s)")
    if result["ok"]:
        return f"{head}: all OK"
    lines = [f"{head}: {len(result['failures'])} failure(s)"]
    for f in result["failures"]:
        n = len(f["creators"])
        used = f" ({n} creator{'s' if n != 1 else ''}: {', '.join(f['creators'][:3])}" \
               f"{', ...' if n > 3 else ''})" if n else ""
        lines.append(f"  {f['distribution']}: {f['module']}: {f['error']}{used}")
    lines.append("reinstall or upgrade the distributions named, or block them "
                 "(-p no:NAME, MINI_INFER_BLOCK_PLUGINS)")
    return "\n".join(lines)


def run_check(reg: PluginRegistry, as_json: bool) -> int:
    """Print the check (text or JSON); the exit status: 1 on any failure, else 0."""
    import json

    result = check_plugins(reg)
    print(json.dumps(result, indent=2) if as_json else check_text(result))
    return 0 if result["ok"] else 1
