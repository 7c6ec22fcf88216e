#!/usr/bin/env bash
# This session's second GPU call: the Hopper conv against the tiles and
# cuDNN on the fwd convs of ResNet-50 and YOLO11n (bf16, channels-last,
# batch 32), every variant compiled first in parallel.
set -u
mkdir -p extra
for m in resnet50 yolo11n; do
  s=$(date +%s)
  timeout 55 gpu-bundle/convjit preload --model $m --batch 32 --dtype bf16 --layout nhwc \
    --arch sm_90 --every-variant --jobs 16 --json >extra/preload-$m.json 2>extra/preload-$m.err
  echo "preload $m rc=$? $(($(date +%s) - s)) s"
  s=$(date +%s)
  timeout 105 gpu-bundle/convjit bench --model $m --batch 32 --dtype bf16 --layout nhwc \
    --direction fwd --reps 10 --time-limit 80 --json-out extra/wgmma-$m.json \
    >extra/wgmma-$m.txt 2>extra/wgmma-$m.err
  echo "bench $m rc=$? $(($(date +%s) - s)) s"
done
tar -czf "$OUT/extra.tar.gz" extra
