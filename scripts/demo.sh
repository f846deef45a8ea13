#!/usr/bin/env bash
# The main job: set up, list the discovered plugins, build a light model that ships with onnx
# into an engine file, then run that engine in a separate process.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
MODEL="$(.venv/bin/python -c 'from mini_infer_core.testing.light_models import light_model_path; print(light_model_path("resnet50"))')"
OUT="${DEMO_DIR:-$(mktemp -d)}"
echo "== mini-infer plugins"
.venv/bin/mini-infer plugins
echo "== mini-infer build $MODEL"
.venv/bin/mini-infer build "$MODEL" -o "$OUT/resnet50.engine"
echo "== mini-infer inspect (memory plan)"
.venv/bin/mini-infer inspect "$OUT/resnet50.engine" | tail -n 2
echo "== mini-infer run"
.venv/bin/mini-infer run "$OUT/resnet50.engine"
