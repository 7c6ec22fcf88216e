#!/usr/bin/env bash
# This session's one GPU call (15 minutes of device time in all): the GPU
# check without its benches, then the Hopper conv's three configurations
# (wgmma128x128, wgmma128x128b2, wgmma128x64) against the tiles and cuDNN in
# every direction: ResNet-50's whole step, YOLO11n's fwd and bwddata convs
# and its fused Conv+BN+SiLU blocks; bf16, channels-last, batch 32.  Every
# variant is compiled first, in parallel.  Each step is cut to what is left
# of RUN_SECONDS, so the call ends inside its limit.
#   bench/results/2026-11-28-h200/gpu-run.sh   (from the repository root)
set -u
deadline=$(($(date +%s) + ${RUN_SECONDS:-540}))
mkdir -p extra
tools/gpu-check --bundle gpu-bundle --out "$OUT/gpu-check" --budget 360 --no-bench 2>&1 |
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
run=(--batch 32 --dtype bf16 --layout nhwc)
compile=(--arch sm_90 --every-variant --jobs "$(nproc)" --json)
bench=(--reps 10)
step preload-resnet50 60 $cli preload --model resnet50 "${run[@]}" "${compile[@]}"
step bench-resnet50 100 $cli bench --model resnet50 "${run[@]}" "${bench[@]}" --time-limit 80 \
  --json-out extra/bench-resnet50.json
step preload-yolo11n 90 $cli preload --model yolo11n "${run[@]}" "${compile[@]}"
for direction in fwd bwddata; do
  step "bench-yolo11n-$direction" 55 $cli bench --model yolo11n "${run[@]}" "${bench[@]}" \
    --direction $direction --time-limit 40 --json-out "extra/bench-yolo11n-$direction.json"
done
step preload-yolo11n-fused 40 $cli preload --model yolo11n --fused "${run[@]}" "${compile[@]}"
step bench-yolo11n-fused 55 $cli bench --model yolo11n --fused "${run[@]}" "${bench[@]}" \
  --direction fwd --time-limit 40 --json-out extra/bench-yolo11n-fused.json
tar -czf "$OUT/extra.tar.gz" extra
