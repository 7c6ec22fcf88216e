#!/usr/bin/env bash
# The analyser's H200 predictions of every JIT variant this run timed (but
# `direct`) on ResNet-50's and YOLO11n's fwd and bwddata convs (bf16,
# channels-last, batch 32; one sampled block a kernel), to set beside the
# measured times (calibration.py).  About 30 s a variant and run here.
#   bench/results/2026-12-04-h200/predict.sh [OUT]   (from the repository root, after a
#   build; OUT: the folder to write, by default predictions/ here)
set -euo pipefail
here=$(dirname "$0")
out_dir=${1:-$here/predictions}
: "${CONVJIT_NVDISASM:?set it to nvdisasm (tools/setup --python installs one)}"
for run in resnet50-fwd resnet50-bwddata yolo11n-fwd yolo11n-bwddata; do
  model=${run%-*} direction=${run#*-}
  for variant in pixels tc128x128 tc128x64 tc64x64 tc128x32 wgmma128x128 wgmma128x128b2 \
    wgmma128x64 wgmma256x128 wgmma256x64 wgmma128x128p wgmma128x64p wgmma128x128pc wgmma128x256; do
    out=$out_dir/$run-$variant.json.gz
    [ -s "$out" ] && continue
    build/convjit analyze --model "$model" --batch 32 --layout nhwc --dtype bf16 \
      --direction "$direction" --variant "$variant" --arch sm_90 --sample-blocks 1 --json \
      2>/dev/null | gzip -9 >"$out.part" && mv "$out.part" "$out"
  done
done
