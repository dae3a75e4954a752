#!/bin/sh
# Builds libtcemu.so into OUTDIR:  sh tests/cuda_emu/build.sh OUTDIR
#   CXX (default g++), CXXFLAGS (added; -DTCEMU_UCONTEXT selects the portable
#   fiber switch), CUDA_HOME (default /usr/local/cuda: the real cuda.h and
#   nvrtc.h, against which every exported signature is compiled).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR}
cuda=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$out"
${CXX:-g++} -std=c++17 -O1 -g -fPIC -shared -Wall -Wextra -Werror \
    -fvisibility=hidden -Wl,--version-script="$here/exports.map" -I"$cuda/include" -DTCEMU_HEADER_PATH="\"$here/emu_cuda.h\"" \
    "$here/driver.cpp" "$here/simt.cpp" "$here/nvrtc.cpp" -o "$out/libtcemu.so" ${CXXFLAGS:-} -ldl -lpthread
