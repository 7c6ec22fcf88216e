#!/usr/bin/env bash
# The collective preload's figures on this machine (issue 22):
#   1. compiles and wall time of `convjit preload --mpi` for 1, 2 and 4
#      ranks, each rank a node of its own, from a cold cache;
#   2. filesystem operations per rank (stat-like and open-like system calls,
#      counted by strace) with a warm shared tier and cold local tiers: the
#      protocol against today's per-process lookups (4 processes each
#      running the plain preload, as 4 trainer ranks each looking up every
#      kernel in the shared tier).
#
#   bench/mpi_preload.sh [build-dir] [model] [imgsz]
set -euo pipefail
build=${1:-build}; model=${2:-yolo11n}; imgsz=${3:-64}
cli=$(cd "$build" && pwd)/convjit
work=$(mktemp -d /tmp/convjit-mpi-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
args="preload --model $model --imgsz $imgsz --arch sm_90 --jobs 2"

echo "## compiles and wall time, cold cache ($model at $imgsz, $(nproc) cores)"
echo "| ranks | nodes | distinct | compiles | wall s |"
echo "|---|---|---|---|---|"
for ranks in 1 2 4; do
  rm -rf "$work"/*
  start=$(date +%s.%N)
  mpirun -np "$ranks" --oversubscribe sh -c "r=\$OMPI_COMM_WORLD_RANK;
    CONVJIT_CACHE_PATH=$work/shared CONVJIT_LOCAL_CACHE_PATH=$work/node\$r \
    exec $cli $args --mpi --ranks-per-node 1 > $work/log.\$r 2>&1"
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  compiles=$(cat "$work"/log.* | grep -c '^rank [0-9]*: compiled \|^compiled ' || true)
  distinct=$(grep -o '[0-9]* descriptors' "$work/log.0" | cut -d' ' -f1)
  printf '| %s | %s | %s | %s | %.1f |\n' "$ranks" "$ranks" "$distinct" "$compiles" "$wall"
done

count() {  # stat-like and open-like calls under $2 in strace log $1
  local stats opens
  stats=$(grep -E '^[0-9]+ +(stat|lstat|newfstatat|statx|access|faccessat2?)\(' "$1" | grep -c "$2" || true)
  opens=$(grep -E '^[0-9]+ +(open|openat)\(' "$1" | grep -c "$2" || true)
  echo "$stats $opens"
}
trace="strace -f -qq -e trace=stat,lstat,newfstatat,statx,access,faccessat,faccessat2,open,openat"

echo
echo "## filesystem operations on the shared tier per rank, warm shared tier, cold local tiers"
echo "| run | rank | shared stats | shared opens | local stats | local opens |"
echo "|---|---|---|---|---|---|"
rm -rf "$work"/*
CONVJIT_CACHE_PATH=$work/shared CONVJIT_LOCAL_CACHE_PATH=none $cli $args > /dev/null  # warm it
for r in 0 1 2 3; do
  CONVJIT_CACHE_PATH=$work/shared CONVJIT_LOCAL_CACHE_PATH=none \
    $trace -o "$work/today.$r" $cli $args > /dev/null &
done
wait
for r in 0 1 2 3; do
  read -r s o < <(count "$work/today.$r" "$work/shared")
  echo "| today: 4 processes, plain preload, no local tier | $r | $s | $o | - | - |"
done
mpirun -np 4 --oversubscribe sh -c "r=\$OMPI_COMM_WORLD_RANK;
  CONVJIT_CACHE_PATH=$work/shared CONVJIT_LOCAL_CACHE_PATH=$work/node\$((r / 2)) \
  exec $trace -o $work/mpi.\$r $cli $args --mpi --ranks-per-node 2 > /dev/null"
for r in 0 1 2 3; do
  read -r s o < <(count "$work/mpi.$r" "$work/shared")
  read -r ls lo < <(count "$work/mpi.$r" "$work/node")
  echo "| --mpi: 4 ranks on 2 nodes | $r | $s | $o | $ls | $lo |"
done
