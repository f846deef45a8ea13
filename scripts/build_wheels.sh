#!/usr/bin/env bash
# Build the wheels of every distribution into dist/ (a folder pip installs from, see
# docs/install.md): the core, the NumPy, compiled, ai.onnx.ml and CUDA plugins and the example
# third-party plugin. The compiled plugin's wheel is repaired by auditwheel into a manylinux wheel
# when auditwheel is installed (it is in .venv after scripts/setup.sh); needs a C compiler.
# Usage: bash scripts/build_wheels.sh [OUT_DIR]   (default: dist)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-dist}"
PY=.venv/bin/python
[ -x "$PY" ] || PY="${PYTHON:-python3}"
mkdir -p "$OUT"
raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
for src in . plugin_packages/cpu_basic plugin_packages/cpu_native plugin_packages/ml_basic \
        plugin_packages/cuda_basic examples/plugins/l2norm; do
    "$PY" -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
        -w "$raw" "$src"
done
bin="$(dirname "$PY")"
for whl in "$raw"/*.whl; do
    case "$whl" in
        *-linux_*.whl)
            if [ -x "$bin/auditwheel" ]; then
                log="$(PATH="$bin:$PATH" "$bin/auditwheel" repair -w "$OUT" "$whl" 2>&1)" \
                    || { echo "$log" >&2; exit 1; }
            else
                echo "build_wheels.sh: auditwheel missing: $(basename "$whl") stays linux_*" >&2
                cp "$whl" "$OUT"/
            fi ;;
        *) cp "$whl" "$OUT"/ ;;
    esac
done
ls -1 "$OUT"/*.whl
