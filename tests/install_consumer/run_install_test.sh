#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then configures, builds
# and runs an outside project against it with find_package(convjit).
#   run_install_test.sh <build dir> <consumer source dir>
set -euo pipefail
build_dir=$1
consumer_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
test -x "$work/prefix/bin/convjit"
test -f "$work/prefix/include/convjit/convjit.h"
"$work/prefix/bin/convjit" --version

cmake -S "$consumer_dir" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/consumer_c"
"$work/consumer/consumer_cpp"
echo "install test: ok"
