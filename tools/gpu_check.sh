#!/bin/sh
# The CUDA backend on a real GPU, in one run (issue 33's device check):
# builds the CUDA tests against the machine's driver and NVRTC, runs them on
# the device (no emulator), and runs the bench's GPU rows.  Everything it
# writes goes to OUT (default build/gpu): tests.log, bench.csv, bench.log,
# device.txt.  Exit status: 0 all passed, 1 a test failed, 3 no usable GPU.
#   sh tools/gpu_check.sh [OUT]        (CC, CUDA_HOME as elsewhere)
set -u
cd "$(dirname "$0")/.."
out=${1:-${OUT:-build/gpu}}
cc=${CC:-gcc}
cuda=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$out"
{ nvidia-smi 2> /dev/null || echo "nvidia-smi: not found"; uname -a; } > "$out/device.txt" 2>&1
# the toolkit's NVRTC when the loader's path has none (tcompile looks there too)
[ -d "$cuda/lib64" ] && LD_LIBRARY_PATH="$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && export LD_LIBRARY_PATH
unset TC_CUDA_LIB TC_NVRTC_LIB TCEMU_LIB
TC_CACHE_DIR="$out/cache"; export TC_CACHE_DIR
rc=0
for t in test_cuda test_cuda_nvrtc; do
    if ! $cc -std=c99 -O2 -g -Wall -Wextra -Werror -pedantic -I. "tests/$t.c" -o "$out/$t" -lm -lpthread -ldl \
            > "$out/$t.build.log" 2>&1; then
        echo "FAIL build $t"; cat "$out/$t.build.log"; rc=1; continue
    fi
    echo "== $t" >> "$out/tests.log"
    "$out/$t" >> "$out/tests.log" 2>&1 || rc=1
    tail -n 1 "$out/tests.log" | sed "s/^/$t: /"
done
# the tests skip their device part without a GPU: that is a failure here
if grep -q "no device: the SIMT emulator is not built" "$out/tests.log"; then
    echo "no usable GPU: $(grep -m1 'no device' "$out/tests.log")"; exit 3
fi
if $cc -std=c99 -O2 -Wall -Wextra -Werror -pedantic -I. bench/bench.c -o "$out/bench" -lm -lpthread -ldl > "$out/bench.build.log" 2>&1; then
    "$out/bench" --device cuda -o "$out/bench.csv" ew softmax_ln gemm_1024 gemm_64x4096x1024 gemv_4096 \
        sdpa_causal attention_by_hand > "$out/bench.log" 2>&1
    brc=$?
    [ "$brc" -eq 3 ] && { cat "$out/bench.log"; exit 3; }
    [ "$brc" -ne 0 ] && rc=1
    grep -E '^[a-z_0-9]+ +[0-9]+ cuda:' "$out/bench.log"
else
    echo "FAIL build bench"; cat "$out/bench.build.log"; rc=1
fi
exit $rc
