#!/usr/bin/env bash
# This session's third GPU call: ResNet-50's whole training step (every
# direction), bf16, channels-last, batch 32, every JIT variant and cuDNN.
set -u
mkdir -p extra
s=$(date +%s)
timeout 40 gpu-bundle/convjit preload --model resnet50 --batch 32 --dtype bf16 --layout nhwc \
  --arch sm_90 --every-variant --jobs 16 --json >extra/preload-resnet50.json 2>extra/preload-resnet50.err
echo "preload rc=$? $(($(date +%s) - s)) s"
s=$(date +%s)
timeout 110 gpu-bundle/convjit bench --model resnet50 --batch 32 --dtype bf16 --layout nhwc \
  --reps 10 --time-limit 95 --json-out extra/step-resnet50.json \
  >extra/step-resnet50.txt 2>extra/step-resnet50.err
echo "bench rc=$? $(($(date +%s) - s)) s"
tail -n 12 extra/step-resnet50.txt
tar -czf "$OUT/step.tar.gz" extra
