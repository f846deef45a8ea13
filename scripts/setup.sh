#!/usr/bin/env bash
# Create .venv (if needed) and install the core, the CPU plugins (NumPy and compiled), the
# ai.onnx.ml plugins, the CUDA plugins, the example plugin, Ray Data (the [ray] extra) and the
# test tools (with scikit-learn and skl2onnx, which the ai.onnx.ml tests convert models with) and
# the documentation tools (the [docs] extra: mkdocs, mkdocstrings).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check \
    -e ".[test,ray,docs]" -e "plugin_packages/cpu_basic[image]" -e plugin_packages/cpu_native \
    -e "plugin_packages/ml_basic[test]" -e plugin_packages/cuda_basic \
    -e examples/plugins/l2norm
# Silero VAD's ONNX exports (tests/test_keyed_branch_steps.py, benchmarks/small_models.py): a pure
# wheel of ONNX files whose declared torch dependency the ONNX models do not need, so not in
# the [test] extra (it would pull torch); without it those tests skip and say why
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "silero-vad>=5" \
    || echo "setup.sh: silero-vad did not install; its tests will skip" >&2
# the coverage-guided driver of benchmarks/fuzz.py (optional: without it Hypothesis drives it)
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[fuzz]" \
    || echo "setup.sh: atheris did not install; benchmarks/fuzz.py will use Hypothesis" >&2
# the engine report's browser test (tests/test_report.py) drives Debian's chromium through
# Playwright; installed here when this runs as root on Debian (CI), else the test says why it skips
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 \
        && [ "$(id -u)" = 0 ]; then
    { apt-get install -y -q chromium >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }; } \
        || echo "setup.sh: chromium did not install; tests/test_report.py will skip" >&2
fi
