#!/usr/bin/env bash
# The whole GPU validation in one command, for a machine with an NVIDIA GPU, CuPy, onnx,
# onnxruntime and pytest but no package registry (the device machine of docs/performance.md).
# Run from the repository root; WHEELS (default .whl) holds the wheels built elsewhere:
#   pip wheel --no-deps --no-build-isolation -w .whl . plugin_packages/cpu_basic \
#       plugin_packages/cuda_basic          # plus importlib-metadata where it is missing
# Logs go to $OUT (default /tmp/gpu_out): pytest.log, gpu_check.log.
set -u
WHEELS=${WHEELS:-.whl}
OUT=${OUT:-/tmp/gpu_out}
SITE=${SITE:-/tmp/mini_infer_site}
PY=${PY:-python3}
mkdir -p "$OUT"
"$PY" -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" "$WHEELS"/*.whl || exit 1
export PYTHONPATH=$SITE PYTHONUNBUFFERED=1
# the compiled CPU kernels are built here from source (optional: the references run without)
"$PY" -m pip install -q --no-index --no-deps --no-build-isolation --upgrade --target "$SITE" \
    plugin_packages/cpu_native >"$OUT/cpu_native_build.log" 2>&1 \
    && echo "mini-infer-cpu-native built" || echo "mini-infer-cpu-native not built (see log)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
"$PY" -m mini_infer_core.cli.main plugins 2>&1 | head -20
timeout "${TEST_SECONDS:-200}" "$PY" -m pytest plugin_packages/cuda_basic -q \
    -p no:cacheprovider --no-header -rfE --tb=short >"$OUT/pytest.log" 2>&1
echo "pytest exit $?"
grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head -40
tail -3 "$OUT/pytest.log"
# the CLI on the GPU: an engine built for cuda, written, run by another process; a profile
MI="$PY -m mini_infer_core.cli.main"
M=$("$PY" -c 'from mini_infer_core.testing.light_models import light_model_path as p
print(p("resnet50"))')
$MI build "$M" --device cuda -o /tmp/r50.engine | tail -2 \
    && $MI run /tmp/r50.engine --seed 0 --output-dir /tmp/r50_cuda | tail -2 \
    && $MI run "$M" --device cpu --seed 0 --output-dir /tmp/r50_cpu | tail -1 \
    && "$PY" -c 'import glob, numpy as np
for f in glob.glob("/tmp/r50_cuda/*.npy"):
    a, b = np.load(f), np.load(f.replace("_cuda", "_cpu"))
    print(f, "cuda vs cpu max abs diff", float(abs(a - b).max()), "finite", np.isfinite(a).all())'
$MI bench "$M" --device cuda --profile >"$OUT/bench_profile.txt" 2>&1
echo "bench exit $?"; head -20 "$OUT/bench_profile.txt"
"$PY" benchmarks/gpu_check.py --skip-tests --budget "${MODEL_SECONDS:-170}" \
    --repeat 20 --cpu-repeat 3 "$@" >"$OUT/gpu_check.log" 2>&1
echo "gpu_check exit $?"
sed -n '/== summary/,$p' "$OUT/gpu_check.log"
