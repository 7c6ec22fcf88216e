#!/usr/bin/env bash
# The ctest of the GPU bundle: installs the build's gpu_bundle component
# (stripped) into a temporary folder, as tools/gpu-bundle does from its own
# Release build, checks it with check_bundle.sh, and, on a machine without a
# GPU, runs tools/gpu-check from it: exit 2 and a summary that says so.
#   bundle_from_build.sh BUILD_DIR GPU_CHECK
set -euo pipefail
build_dir=${1:?usage: bundle_from_build.sh BUILD_DIR GPU_CHECK}
gpu_check=${2:?usage: bundle_from_build.sh BUILD_DIR GPU_CHECK}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --component gpu_bundle --prefix "$work/bundle" --strip >/dev/null
"$(dirname "${BASH_SOURCE[0]}")/check_bundle.sh" "$work/bundle"

if nvidia-smi -L >/dev/null 2>&1; then
  echo "bundle_from_build: this machine has a GPU; run $gpu_check by hand"
  exit 0
fi
status=0
"$gpu_check" --bundle "$work/bundle" --out "$work/out" >"$work/gpu-check.log" 2>&1 || status=$?
cat "$work/gpu-check.log"
[ $status -eq 2 ] || { echo "gpu-check exited $status, not 2 (no GPU)" >&2; exit 1; }
grep -q "no GPU here" "$work/gpu-check.log"
grep -q "No GPU here: nvidia-smi finds none" "$work/out/summary.md"
echo "bundle_from_build: gpu-check from the bundle exits 2 without a GPU: ok"
