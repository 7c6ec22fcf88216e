#!/usr/bin/env bash
# This session's one GPU call (15 minutes of device time in all, a start
# included): the GPU check without its benches (the tests of the
# configurations added since the last GPU run, 2026-11-28: the ping-pong
# tiles, the clusters of two, the split reductions, the stem fold, the
# 128 x 256 tile, and the pixels kernel), then every JIT variant of
# YOLO11n's convs against cuDNN in each direction (bf16, channels-last,
# batch 32), with NVRTC's time per Hopper conv kernel measured on one core
# beside the benches; then ResNet-50's fwd convs if time is left.  Every
# variant is compiled first, in parallel.  Each step is cut to what is left
# of RUN_SECONDS, so that the call ends inside its limit.
#   bench/results/2026-12-04-h200/gpu-run.sh   (from the repository root)
set -u
deadline=$(($(date +%s) + ${RUN_SECONDS:-560}))
mkdir -p extra
tools/gpu-check --bundle gpu-bundle --out "$OUT/gpu-check" --budget 240 --no-bench 2>&1 |
  tee extra/gpu-check-console.txt

step() { # name seconds command...: at most the seconds, and no later than the deadline
  local name=$1 want=$2 left start
  shift 2
  left=$((deadline - $(date +%s)))
  if [ "$left" -lt 20 ]; then echo "$name: not run, ${left} s left" | tee -a extra/steps.txt; return; fi
  [ "$want" -le "$left" ] || want=$left
  start=$(date +%s)
  timeout "$want" "$@" >"extra/$name.out" 2>"extra/$name.err"
  echo "$name: rc=$? in $(($(date +%s) - start)) s (at most $want)" | tee -a extra/steps.txt
}
cli=gpu-bundle/convjit
compile=(--arch sm_90 --every-variant --jobs "$(nproc)" --json)
yolo=(--model yolo11n --batch 32 --dtype bf16 --layout nhwc)
step preload-yolo11n 130 $cli preload "${yolo[@]}" "${compile[@]}"
# One core, beside the benches (which time the GPU with events).
step nvrtc-hopper-resnet50 100 gpu-bundle/convjit_bench \
  --benchmark_filter=NvrtcColdCompileHopperConvResnet50 --benchmark_format=json &
for direction in bwddata fwd bwdfilt; do
  step "bench-yolo11n-$direction" 65 $cli bench "${yolo[@]}" --reps 10 --direction $direction \
    --time-limit 50 --json-out "extra/bench-yolo11n-$direction.json"
done
wait
resnet=(--model resnet50 --batch 32 --dtype bf16 --layout nhwc)
step preload-resnet50 60 $cli preload "${resnet[@]}" "${compile[@]}"
step bench-resnet50-fwd 60 $cli bench "${resnet[@]}" --reps 10 --direction fwd --time-limit 45 \
  --json-out extra/bench-resnet50-fwd.json
tar -czf "$OUT/extra.tar.gz" extra
