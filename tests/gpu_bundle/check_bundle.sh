#!/usr/bin/env bash
# Checks a GPU bundle (cmake/gpu_bundle.cmake) as a bare GPU machine would
# meet it:
#   - it holds the CLI, the library, the GPU tests and the benchmarks;
#   - it is at most 48 MiB, so it travels within a GPU machine's 64 MiB;
#   - ldd resolves every library inside it, or to the C/C++ runtime;
#   - its programs run under `env -i` (no LD_LIBRARY_PATH, no HOME).
#   check_bundle.sh BUNDLE_DIR
set -euo pipefail
bundle=$(cd "${1:?usage: check_bundle.sh BUNDLE_DIR}" && pwd)
limit_bytes=$((48 * 1024 * 1024))
runtime='^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1)$'
fail() { echo "check_bundle: $*" >&2; exit 1; }

for program in convjit libconvjit.so convjit_gpu_tests convjit_bench libbench_noop_kernel.so \
               libgomp.so.1 dace_harness libconvjit_dace_cuda.so libconvjit_dace_host.so; do
  [ -e "$bundle/$program" ] || fail "$program is missing from $bundle"
done

bytes=$(du -sbL "$bundle" | cut -f1)
echo "check_bundle: $bundle holds $(du -shL "$bundle" | cut -f1) ($bytes bytes; limit $limit_bytes)"
[ "$bytes" -le "$limit_bytes" ] || fail "the bundle is over 48 MiB"

# Every dependency of every ELF file: inside the bundle, or the C/C++ runtime.
# The DaCe shims are templates whose copies `convjit export` gives a RUNPATH;
# the export itself is run below.
for file in "$bundle"/*; do
  [ -f "$file" ] && [ ! -L "$file" ] && head -c 4 "$file" | grep -q ELF || continue
  case "$(basename "$file")" in libconvjit_dace_*.so) continue ;; esac
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [ "$path" != "not" ] || fail "$(basename "$file") needs $name, which ldd cannot find"
    case "$path" in "$bundle"/*) continue ;; esac
    [[ $name =~ $runtime ]] || fail "$(basename "$file") takes $name from $path, outside the bundle"
  done < <(env -i ldd "$file")
done
echo "check_bundle: ldd resolves everything inside the bundle or to the C/C++ runtime"

# The programs with an empty environment; their output only when they fail.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run() {
  echo "check_bundle: env -i $*"
  env -i "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "$(basename "$1") failed under env -i"; }
}
run "$bundle/convjit" --version
run "$bundle/convjit" doctor
run "$bundle/convjit" run --model resnet50 --imgsz 16 --reps 0 --verify
run "$bundle/convjit_gpu_tests" --gtest_brief=1
# LBANN's libraries from the bundle's shims, run by the DiHydrogen harness.
dace=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$dace"' EXIT
run "$bundle/convjit" export --device host --dace "$dace/kernels" --model cosmoflow --imgsz 32
run "$bundle/dace_harness" "$dace"/kernels/*.so
run "$bundle/convjit_bench" --benchmark_filter=ResolvedCallNoopTunedKernel --benchmark_min_time=0.01
echo "check_bundle: ok"
