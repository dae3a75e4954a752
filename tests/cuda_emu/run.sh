#!/bin/sh
# Builds libtcemu.so and tests/test_cuda_emu.c into BUILD_DIR and runs the
# test (its last line: "N passed, N failed, N skipped").
#   sh tests/cuda_emu/run.sh [BUILD_DIR]     CC, CXX, CUDA_HOME as in build.sh;
#   SANITIZE=1 builds the test with ASan + UBSan (libtcemu.so stays plain: its
#   fibers would need ASan's stack-switch annotations) and checks for leaks.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-build/cuda_emu}
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/cuda.h" ] || [ ! -f "$cuda/include/nvrtc.h" ]; then
    echo "SKIP tcemu: no cuda.h and nvrtc.h in $cuda/include (set CUDA_HOME to a CUDA toolkit)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
mkdir -p "$out"
san=
[ "${SANITIZE:-0}" = 1 ] && san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
if ! sh "$here/build.sh" "$out" > "$out/build.log" 2>&1 ||
   ! ${CC:-gcc} -std=c99 -O1 -g -Wall -Wextra -Werror -pedantic -isystem "$cuda/include" $san \
        "$here/../test_cuda_emu.c" -o "$out/test_cuda_emu" -ldl -lm >> "$out/build.log" 2>&1; then
    head -n 30 "$out/build.log"
    echo "FAIL build of libtcemu.so or test_cuda_emu (log: $out/build.log)"
    echo "0 passed, 1 failed"
    exit 1
fi
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export ASAN_OPTIONS
exec "$out/test_cuda_emu" "$out/libtcemu.so"
