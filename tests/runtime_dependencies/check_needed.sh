#!/usr/bin/env bash
# Fails unless every file given needs, at load time, nothing but glibc, the
# C++ runtime (libstdc++, libgcc_s) and libgomp: the promise that lets
# libconvjit.so and the CLI load on a GPU machine with none of our Debian
# build dependencies.  NVRTC, cuDNN and the driver are loaded with dlopen.
#   check_needed.sh FILE...
set -euo pipefail
allowed='^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libgomp\.so\.1)$'
status=0
for file in "$@"; do
  needed=$(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  [ -n "$needed" ] || { echo "$file: readelf found no NEEDED entries" >&2; status=1; continue; }
  while read -r library; do
    if ! [[ $library =~ $allowed ]]; then
      echo "$file needs $library at load time; link it statically or load it with dlopen" >&2
      status=1
    fi
  done <<<"$needed"
  echo "$file: $(echo $needed)"
done
exit $status
