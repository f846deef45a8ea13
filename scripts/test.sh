#!/usr/bin/env bash
# Set up, lint, type-check, check the core's layers (import-linter), then run every test (core,
# plugins, the example, wheels in fresh virtual environments, the nine light models). Extra
# arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy src plugin_packages/cpu_basic/src plugin_packages/cpu_native/src \
    plugin_packages/ml_basic/src plugin_packages/cuda_basic/src \
    examples/plugins/l2norm/src
.venv/bin/lint-imports --no-cache
exec .venv/bin/python -m pytest "$@"
