# The steps of one GPU call, each cut to what is left of the call's time so
# that the call ends inside the device tool's limit.  Sourced by a call's
# script (bench/results/*/gpu-next.sh), from the repository root:
#   source tools/gpu_call_steps.sh SECONDS   the call's budget from now: the deadline
#   step NAME SECONDS COMMAND...             at most SECONDS and never past the deadline
#                                            (not run with under 20 s left); its output
#                                            in extra/NAME.out and .err, its exit status
#                                            and time appended to extra/steps.txt
# shellcheck shell=bash
gpu_call_deadline=$(($(date +%s) + ${1:?give the call budget in seconds}))
mkdir -p extra

step() {
  local name=$1 want=$2 left start
  shift 2
  left=$((gpu_call_deadline - $(date +%s)))
  if [ "$left" -lt 20 ]; then echo "$name: not run, ${left} s left" | tee -a extra/steps.txt; return; fi
  [ "$want" -le "$left" ] || want=$left
  start=$(date +%s)
  timeout "$want" "$@" >"extra/$name.out" 2>"extra/$name.err"
  echo "$name: rc=$? in $(($(date +%s) - start)) s (at most $want)" | tee -a extra/steps.txt
}
