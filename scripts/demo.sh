#!/usr/bin/env bash
# The main job: set up, list the discovered plugins, build a model with trained weights that
# ships inside a wheel (Magika's file-type classifier, installed with the test tools) into an
# engine file, then run that engine in a separate process on files of this repository: each
# line names a file and the content type the model gives it (and Magika's own answer).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
MODEL="$(.venv/bin/python scripts/identify_files.py --model)"
if [ -n "${DEMO_DIR:-}" ]; then  # the engine file stays there
    OUT="$DEMO_DIR"
else  # a temporary folder, removed however the demo ends
    OUT="$(mktemp -d)"
    trap 'rm -rf "$OUT"' EXIT
fi
echo "== mini-infer plugins"
.venv/bin/mini-infer plugins
echo "== mini-infer build $MODEL"
.venv/bin/mini-infer build "$MODEL" -o "$OUT/magika.engine"
echo "== mini-infer inspect (memory plan)"
.venv/bin/mini-infer inspect "$OUT/magika.engine" | tail -n 2
echo "== the engine names the type of files of this repository"
.venv/bin/python scripts/identify_files.py "$OUT/magika.engine" README.md scripts/setup.sh \
    pyproject.toml src/mini_infer_core/cli/main.py \
    plugin_packages/cpu_native/src/mini_infer_cpu_native/_gemm.c
