#!/usr/bin/env bash
# Runs the parallel preload (worker threads compiling with NVRTC) several
# times from empty caches; every run must succeed.  Its point is the
# sanitizer build: LeakSanitizer's exit scan once crashed on a dynamic-TLS
# block of NVRTC's ("Tracer caught signal 11") in some runs and not others,
# by where that block happened to land (see tools/test).
#
#   run_preload_repeatedly.sh CONVJIT_CLI RUNS
set -euo pipefail
cli=$1 runs=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || {
  echo "skipped: no CUDA toolkit (NVRTC) to compile with"; exit 0; }
for run in $(seq 1 "$runs"); do
  if ! CONVJIT_CACHE_PATH="$work/cache-$run" CONVJIT_LOCAL_CACHE_PATH=none \
      "$cli" preload --model cosmoflow --imgsz 32 --arch sm_80 >"$work/out" 2>&1; then
    echo "run $run of $runs failed:"; cat "$work/out"; exit 1
  fi
  grep -q " 0 failed" "$work/out" || { echo "run $run compiled with failures:"; cat "$work/out"; exit 1; }
done
echo "$runs of $runs preloads succeeded"
