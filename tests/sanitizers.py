"""Build the plugin packages' C sources under gcc's sanitizers and run their drivers.

Every package of ``plugin_packages/`` with C sources under ``src/`` (found by glob, so a new
source file is built without a change here) has a driver under ``tests/sanitize/`` (C files
with a ``main``: they call the sources' functions without Python and check the results
against plain loops). Each build is every source plus the driver, one of:

* ``asan``: AddressSanitizer with its leak check, and UBSan;
* ``tsan``: ThreadSanitizer;
* ``valgrind``: no sanitizer, run under valgrind's memcheck (by hand only: it is slow).

The Python-facing parts of the sources (the extension modules' functions and init) are
compiled too, then dropped at link time (``--gc-sections``: nothing calls them, and linking
them would need libpython); the drivers reach the kernels directly. ``MI_NO_CLONES`` builds
one copy of each kernel (the loader would run target_clones' resolvers before a sanitizer's
runtime is ready). A run fails on a non-zero exit or on any sanitizer report in its output.

By hand (from the repository root)::

    .venv/bin/python tests/sanitizers.py [asan] [tsan] [valgrind] [--rounds N]

tests/test_sanitizers.py runs ``asan`` and ``tsan`` with a round or two in the suite.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "plugin_packages"

COMMON = ["-std=c11", "-O1", "-g1", "-fno-omit-frame-pointer", "-pthread", "-DMI_NO_CLONES",
          "-Werror=implicit-function-declaration", "-ffunction-sections", "-fdata-sections"]
SANITIZE = {
    "asan": ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"],
    "tsan": ["-fsanitize=thread"],
    "valgrind": [],
}
PYTHON_FLAGS = {"asan": ["--param", "asan-globals=0"]}
ENV = {
    "asan": {"ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1",
             "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"},
    "tsan": {"TSAN_OPTIONS": "halt_on_error=1:second_deadlock_stack=1"},
    "valgrind": {},
}
#: lines that mean a sanitizer found something, whatever the exit status
REPORT = re.compile(r"ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:|"
                    r"ERROR: ThreadSanitizer|SUMMARY: \w+Sanitizer")


def packages() -> list[Path]:
    """The plugin packages with C sources."""
    return sorted(p for p in PACKAGES.iterdir() if any((p / "src").rglob("*.c")))


def sources(package: Path) -> list[Path]:
    """Every C source of ``package``: its library's and its driver's."""
    return sorted((package / "src").rglob("*.c")) + drivers(package)


def drivers(package: Path) -> list[Path]:
    return sorted((package / "tests" / "sanitize").glob("*.c"))


def missing_tools(tool: str) -> str | None:
    """Why ``tool``'s build cannot run here (None: it can): gcc, its sanitizer runtime,
    Python.h (the extension modules' sources include it), valgrind."""
    if shutil.which("gcc") is None:
        return "no gcc on PATH (the sanitizer builds use gcc and its sanitizer runtimes)"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return "no Python.h for this interpreter (install the Python development headers)"
    if tool == "valgrind" and shutil.which("valgrind") is None:
        return "no valgrind on PATH"
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.c"
        probe.write_text("int main(void) { return 0; }\n")
        proc = subprocess.run(["gcc", *SANITIZE[tool], str(probe), "-o", str(probe)[:-2]],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            return (f"gcc cannot link {' '.join(SANITIZE[tool]) or 'a program'} here (its "
                    f"sanitizer runtime, e.g. libasan/libubsan/libtsan, is missing): "
                    f"{proc.stderr.strip()[:300]}")
    return None


def build(package: Path, tool: str, out: Path) -> Path:
    """Compile every source of ``package`` (in parallel) and link the driver; its path."""
    flags = [*COMMON, *SANITIZE[tool], f"-I{sysconfig.get_paths()['include']}"]
    srcs = sources(package)
    out = out / f"{package.name}_{tool}"
    out.mkdir(parents=True, exist_ok=True)

    def compile_one(src: Path) -> Path:
        obj = out / f"{src.parent.name}_{src.stem}.o"
        # an extension module's tables are globals that AddressSanitizer would register (and
        # so keep, with the functions they name, through --gc-sections): not those
        extra = PYTHON_FLAGS.get(tool, []) if "<Python.h>" in src.read_text() else []
        proc = subprocess.run(["gcc", *flags, *extra, "-c", str(src), "-o", str(obj)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"compiling {src} for {tool} failed:\n"
                               f"{proc.stderr}")
        return obj

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        objects = list(pool.map(compile_one, srcs))
    exe = out / "driver"
    proc = subprocess.run(["gcc", *flags, "-Wl,--gc-sections", *map(str, objects), "-o",
                           str(exe), "-lm"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"linking {package.name}'s driver for {tool} failed:\n{proc.stderr}")
    return exe


def run(exe: Path, tool: str, rounds: int, timeout: float = 600) -> tuple[bool, str]:
    """Run a built driver: (passed, its output)."""
    command = [str(exe), str(rounds)]
    if tool == "valgrind":
        command = ["valgrind", "--tool=memcheck", "--leak-check=full",
                   "--show-leak-kinds=definite,indirect",
                   "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=1", *command]
    env = {**os.environ, **ENV[tool]}
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    output = proc.stdout + proc.stderr
    if tool == "tsan" and "unexpected memory mapping" in output and shutil.which("setarch"):
        # ThreadSanitizer's fixed memory layout does not fit the address-space randomisation
        # of some kernels (vm.mmap_rnd_bits above 28): again without randomisation
        command = ["setarch", os.uname().machine, "-R", *command]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env=env)
        output = proc.stdout + proc.stderr
    return proc.returncode == 0 and not REPORT.search(output), output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tools", nargs="*", metavar="TOOL",
                        help=f"any of {', '.join(SANITIZE)} (default: all)")
    parser.add_argument("--rounds", type=int, default=20, help="rounds per calling thread")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.tools) - set(SANITIZE))
    if unknown:
        parser.error(f"unknown tool {', '.join(unknown)}: pick from {', '.join(SANITIZE)}")
    status = 0
    for tool in args.tools or list(SANITIZE):
        reason = missing_tools(tool)
        if reason:
            print(f"== {tool}: skipped: {reason}")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            for package in packages():
                passed, output = run(build(package, tool, Path(tmp)), tool, args.rounds)
                print(f"== {tool}: {package.name}: {'ok' if passed else 'FAILED'}")
                if not passed:
                    print(output)
                    status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
