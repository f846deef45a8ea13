"""The plugin packages' C sources under AddressSanitizer + UBSan and ThreadSanitizer (issue 29,
item 22): every source (found by glob) built with gcc's sanitizers into a standalone driver
(``plugin_packages/*/tests/sanitize``: no Python, so no libasan preloaded into the
interpreter) that exercises every kernel family and the thread pool, one round each; a
sanitizer report or a wrong result fails. The harness is ``tests/sanitizers.py`` (by hand:
more rounds, and valgrind)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sanitizers

TOOLS = ["asan", "tsan"]


def _skip_without(tool: str) -> None:
    reason = sanitizers.missing_tools(tool)
    if reason:
        pytest.skip(f"cannot build for {tool}: {reason}")


def test_every_package_with_c_sources_has_a_driver_that_calls_every_kernel() -> None:
    """A package gaining C sources needs a driver, and a driver every kernel of its library
    (the exported ``mi_*_f32`` / ``mi_*_f64`` functions): otherwise a new family would be
    compiled under the sanitizers but never run."""
    found = {p.name: p for p in sanitizers.packages()}
    assert {"cpu_native", "ml_basic"} <= set(found)
    kernel = re.compile(r"\b(mi_\w+_f(?:32|64))\s*\(")
    for name, package in found.items():
        drivers = sanitizers.drivers(package)
        assert drivers, f"{name} has C sources and no driver in tests/sanitize"
        called = "\n".join(d.read_text() for d in drivers)
        library = [p for p in (package / "src").rglob("*") if p.suffix in (".c", ".h")]
        kernels = {m for p in library for m in kernel.findall(p.read_text())}
        if name == "ml_basic":  # defined by a macro: mi_forest_##SUFFIX
            kernels |= {"mi_forest_f32", "mi_forest_f64"}
        # called, or named to a macro that calls it (forest_check.c's CHECK_FOREST); the
        # library's declarations are in its headers, not in the drivers' text
        missing = sorted(k for k in kernels if not re.search(rf"\b{k}\b", called))
        assert not missing, f"{name}: no driver calls {missing}"
        assert set(sanitizers.sources(package)) >= set((package / "src").rglob("*.c"))


@pytest.mark.parametrize("tool", TOOLS)
def test_the_harness_fails_on_a_report(tool: str, tmp_path: Path) -> None:
    """The harness catches what it is for: a read past the end of an allocation (asan) and
    a data race (tsan) in a package made up here fail the run, and say so."""
    _skip_without(tool)
    package = tmp_path / "bad"
    (package / "src").mkdir(parents=True)
    (package / "tests" / "sanitize").mkdir(parents=True)
    (package / "src" / "lib.c").write_text(
        "#include <pthread.h>\n#include <stdlib.h>\nint shared;\nvolatile int end = 4;\n"
        "static void *bump(void *arg) { (void)arg; shared++; return NULL; }\n"
        "int run(void) {\n"
        "  pthread_t t; pthread_create(&t, NULL, bump, NULL); shared++;\n"
        "  pthread_join(t, NULL);\n"
        "  int *a = calloc(4, sizeof(int)), past = a[end];\n"
        "  free(a);\n"
        "  return shared + past;\n}\n")
    (package / "tests" / "sanitize" / "main.c").write_text(
        "int run(void);\nint main(void) { return run() != 2; }\n")
    passed, output = sanitizers.run(sanitizers.build(package, tool, tmp_path / "out"), tool,
                                    rounds=1)
    assert not passed
    # asan: UBSan's object-size check or ASan's heap-buffer-overflow, at the read's line
    assert ("lib.c:9" if tool == "asan" else "ThreadSanitizer: data race") in output


@pytest.mark.parametrize("tool", TOOLS)
def test_no_sanitizer_report_in_any_package(tool: str, tmp_path: Path) -> None:
    """One round of every driver: the thread pool (two calling threads that then exit, workers
    that cannot start, scratch that cannot be allocated) and every kernel family at each ISA
    level the CPU has, each checked against plain loops."""
    _skip_without(tool)
    for package in sanitizers.packages():
        passed, output = sanitizers.run(sanitizers.build(package, tool, tmp_path), tool,
                                        rounds=1)
        assert passed, f"{package.name} under {tool}:\n{output[-20000:]}"
