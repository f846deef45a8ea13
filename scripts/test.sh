#!/usr/bin/env bash
# Set up, then run every test (core, cpu_basic, wheels in a fresh venv, the nine light models).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
