#!/usr/bin/env bash
# The next lent GPU's call, as this session (no GPU) would have made it:
# the GPU check without its benches (the tests of what no GPU has run: the
# pixel clusters `wgmma128x64pa`/`wgmma128x128pa`, a warp's release, the
# skipped bottom rows), then every JIT variant of ResNet-50's fwd convs
# against cuDNN (bf16, channels-last, K R S C filters, batch 32): the pixel
# clusters against `wgmma128x64p` and `wgmma128x128p` on layer3 and
# layer4, `wgmma128x128pc` again; then the same with the threads' store
# (CONVJIT_WGMMA_TMA_STORE=0) for the TMA store's worth; then YOLO11n's fwd
# convs at batch 32 and 31, whose ping-pong grids hold 400 tiles of
# 128 x 64 (a fourth round of 4 tiles on 132 SMs) and 388 (three rounds):
# the model now puts the L2-bound ones 0.97x apart (the grid's bytes), where
# it counted the busiest block's for every block before (0.75x; README.md
# here); ResNet-50's bwddata (../2026-12-07-phases-without-taps) and
# bwdfilt with and without its clusters' sums
# (../2026-12-07-bwdfilt-cluster-sums); last,
# K C R S filters with and without the promise that they are unchanged
# (../2026-12-07-filters-unchanged).  Each step
# is cut to what is left of RUN_SECONDS, so that the call ends inside its
# limit (tools/gpu_call_steps.sh).  Every variant is compiled first, in
# parallel.
#   bench/results/2026-12-07-persistent-grid-scale/gpu-next.sh   (from the repository
#   root, with the bundle in gpu-bundle/: tools/gpu-bundle, carried)
set -u
source tools/gpu_call_steps.sh "${RUN_SECONDS:-540}"
tools/gpu-check --bundle gpu-bundle --out "$OUT/gpu-check" --budget 200 --no-bench 2>&1 |
  tee extra/gpu-check-console.txt
cli=gpu-bundle/convjit
compile=(--arch sm_90 --every-variant --jobs "$(nproc)" --json)
resnet=(--model resnet50 --batch 32 --dtype bf16 --layout nhwc --filter-layout krsc)
step preload-resnet50 60 $cli preload "${resnet[@]}" "${compile[@]}"
step bench-resnet50-fwd 60 $cli bench "${resnet[@]}" --direction fwd --reps 10 --time-limit 50 \
  --json-out extra/bench-resnet50-fwd.json
export CONVJIT_WGMMA_TMA_STORE=0
step preload-resnet50-threads-store 45 $cli preload "${resnet[@]}" "${compile[@]}"
step bench-resnet50-fwd-threads-store 50 $cli bench "${resnet[@]}" --direction fwd --reps 10 \
  --time-limit 40 \
  --json-out extra/bench-resnet50-fwd-threads-store.json
unset CONVJIT_WGMMA_TMA_STORE
for batch in 32 31; do
  yolo=(--model yolo11n --batch "$batch" --dtype bf16 --layout nhwc)
  step "preload-yolo11n-$batch" 45 $cli preload "${yolo[@]}" "${compile[@]}"
  step "bench-yolo11n-fwd-$batch" 50 $cli bench "${yolo[@]}" --direction fwd --reps 10 --time-limit 40 \
    --json-out "extra/bench-yolo11n-fwd-$batch.json"
done
# ResNet-50's bwddata (its kernels compiled by the first preload): the
# downsampling shortcuts' phases without taps, now written by the first
# pass (../2026-12-07-phases-without-taps), among the rest.
step bench-resnet50-bwddata 50 $cli bench "${resnet[@]}" --direction bwddata --reps 10 \
  --time-limit 40 --json-out extra/bench-resnet50-bwddata.json
# ResNet-50's bwdfilt, its slices added in clusters (the default) and by
# the second pass over every slice (CONVJIT_WGMMA_CLUSTER_SUMS=0): the
# clusters' worth, predicted 0.82x the step (../2026-12-07-bwdfilt-cluster-sums).
step bench-resnet50-bwdfilt 50 $cli bench "${resnet[@]}" --direction bwdfilt --reps 10 \
  --time-limit 40 --json-out extra/bench-resnet50-bwdfilt.json
export CONVJIT_WGMMA_CLUSTER_SUMS=0
step preload-resnet50-second-pass 45 $cli preload "${resnet[@]}" "${compile[@]}"
step bench-resnet50-bwdfilt-second-pass 50 $cli bench "${resnet[@]}" --direction bwdfilt \
  --reps 10 --time-limit 40 --json-out extra/bench-resnet50-bwdfilt-second-pass.json
unset CONVJIT_WGMMA_CLUSTER_SUMS
# Last, where time is left: ResNet-50's fwd with K C R S filters (LBANN's), every call promising
# them unchanged (convjit_exec_t.w_version) against not: the copy's worth
# (../2026-12-07-filters-unchanged).
kcrs=(--model resnet50 --batch 32 --dtype bf16 --layout nhwc)
step preload-resnet50-kcrs 45 $cli preload "${kcrs[@]}" "${compile[@]}"
for promise in "" --w-unchanged; do
  step "bench-resnet50-fwd-kcrs$promise" 45 $cli bench "${kcrs[@]}" --direction fwd $promise \
    --reps 10 --time-limit 35 --json-out "extra/bench-resnet50-fwd-kcrs$promise.json"
done
# ResNet-50's bwdfilt into K C R S dw, against the K R S C run above: the
# H200 timed layer4's unsliced 3 x 3 bwdfilt at 49-50 us (K C R S), twice
# the prediction, whose epilogue stored 2 bytes a lane 9 weights apart,
# 32 sectors a warp's store (../2026-12-07-bwdfilt-cluster-sums).  Its
# tiles now store an f32 partial sum that the second pass lays out along
# the taps: predicted 23.7-29.3 us on the H200 (../2026-12-08-kcrs-dw).
step bench-resnet50-bwdfilt-kcrs 45 $cli bench "${kcrs[@]}" --direction bwdfilt --reps 10 \
  --time-limit 35 --json-out extra/bench-resnet50-bwdfilt-kcrs.json
tar -czf "$OUT/extra.tar.gz" extra
