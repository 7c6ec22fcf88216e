#!/usr/bin/env bash
# Runs the Python package's pytest suite in the environment `tools/setup
# --python` makes, or fails saying how to make it.
#
#   run_pytest.sh PYTHON TESTS_DIR [pytest options...]
set -euo pipefail
python=$1 tests=$2
shift 2
if [ ! -x "$python" ]; then
  echo "no Python test environment at $(dirname "$(dirname "$python")"); make it with" \
       "'tools/setup --python' (tools/test does)" >&2
  exit 1
fi
# Ultralytics must never reach for the network: its settings live in the
# environment's own directory, and its online checks are off.
export YOLO_CONFIG_DIR=${YOLO_CONFIG_DIR:-$(dirname "$(dirname "$python")")/ultralytics-settings}
export YOLO_OFFLINE=1
exec "$python" -m pytest -q -rs -p no:cacheprovider "$tests" "$@"
