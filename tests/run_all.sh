#!/bin/sh
# The whole test suite (`make test`).  Every step prints its own result; the
# last line adds them up as "N passed, N failed, N skipped" and the exit code
# is nonzero on any failure.  Independent steps run as parallel jobs (JOBS,
# default the number of CPUs), each in its own scratch directory and tuning
# cache; their output is printed in a fixed order at the end.
#   CC / CXX / CLANG / CLANGXX override the compilers; a missing clang is a
#   skipped step with the reason printed, never a silent pass.
#   RUN_ALL_ONLY=REGEX runs only the jobs whose command matches (grep -E),
#   e.g. RUN_ALL_ONLY='unit_test opt test_safetensors'.
#   A job that dies (killed, crashed) or reports no result is a failure.
#   Under CI (CI=true) a missing oracle (python3-torch, numpy) fails: .ci/run
#   installs it.
set -u
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build/test}
mkdir -p "$B"

CC=${CC:-gcc}
CXX=${CXX:-g++}
CLANG=${CLANG:-clang}
CLANGXX=${CLANGXX:-clang++}
WARN="-Wall -Wextra -Werror -pedantic"
OPT=${OPT:--O2}
LIBS="-lm -lpthread"

# A job's counts are "@@ passed failed skipped" lines in its output.
pass() { echo "@@ 1 0 0"; echo "ok    $1"; }
fail() { echo "@@ 0 1 0"; echo "FAIL  $1"; }
skip() { echo "@@ 0 0 1"; echo "SKIP  $1"; }

# Runs a test program and adds the counts from its "N passed, N failed" line.
run_counted() { # name, command...
    name=$1; shift
    out="$B/$(echo "$name" | tr ' /()+' '_____').log"
    "$@" > "$out" 2>&1
    rc=$?
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
    if [ -z "$line" ]; then
        fail "$name (no summary line, exit $rc)"; tail -n 20 "$out"; return
    fi
    p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
    s=$(echo "$line" | sed -nE 's/.*, ([0-9]+) skipped.*/\1/p')
    echo "@@ $p $f ${s:-0}"
    if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then
        [ "$f" -eq 0 ] && echo "@@ 0 1 0"
        echo "FAIL  $name: $line (exit $rc)"; grep -E 'FAIL|check failed|:[0-9]+: ' "$out" | head -n 40
    else
        echo "ok    $name: $line"
        grep -E '^SKIP' "$out" | head -n 5
    fi
}

have() { command -v "$1" > /dev/null 2>&1; }

# The job pool: a FIFO holding one token per free slot.
JOBS=${JOBS:-$(getconf _NPROCESSORS_ONLN 2> /dev/null || echo 1)}
# (absolute: a job's max-autotune cache must not move if a test changes directory)
case "$B" in /*) J="$B/jobs" ;; *) J="$(pwd)/$B/jobs" ;; esac
rm -rf "$J"; mkdir -p "$J"
mkfifo "$J/pool" || { echo "cannot make a FIFO in $J"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
exec 3<> "$J/pool"
i=0; while [ "$i" -lt "$JOBS" ]; do echo >&3; i=$((i + 1)); done
njob=0
ONLY=${RUN_ALL_ONLY:-}
# job CMD...: runs CMD in the background once a slot is free, with W its
# own scratch directory, which also holds its max-autotune cache: a fresh
# one per job, never the user's.  CMD runs in a subshell of its own that
# writes $n.end (its exit status) when it returns: a job killed or crashed
# has none, and its slot is freed all the same.
job() {
    if [ -n "$ONLY" ] && ! echo "$*" | grep -qE -- "$ONLY"; then return; fi
    njob=$((njob + 1))
    n=$(printf %03d "$njob")
    echo "$*" > "$J/$n.cmd"
    read -r _ <&3
    (
        (
            W="$J/$n.d"; mkdir -p "$W"
            TC_CACHE_DIR="$W/tune-cache"; export TC_CACHE_DIR
            "$@" > "$J/$n.out" 2>&1
            echo $? > "$J/$n.end"
        )
        echo >&3
    ) &
}

# The runner's own checks: a planted job that dies, one that reports
# nothing, a test that skips (counted as a skip, not a pass) and a missing
# oracle under CI must each show as such.
planted_killed() { sh -c 'kill -9 $PPID'; pass "planted: still alive"; }
planted_silent() { :; }
runner_selfcheck() {
    for p in killed silent; do
        out=$(RUN_ALL_ONLY="^planted_$p\$" RUN_ALL_PLANT=$p BUILD_DIR="$W/$p" JOBS=1 sh tests/run_all.sh 2>&1)
        rc=$?
        case "$rc:$out" in
        0:*) fail "runner: a planted $p job passed"; return ;;
        *"planted_$p"*"0 passed, 1 failed, 0 skipped") ;;
        *) fail "runner: a planted $p job was not one failure"; echo "$out" | tail -n 5; return ;;
        esac
    done
    printf '#include "tests/tc_test.h"\nTC_TEST(a) { TC_CHECK(1); }\nTC_TEST(b) { TC_SKIP("planted"); }\n'"int main(void) { TC_RUN(a); TC_RUN(b); return TC_TEST_SUMMARY(); }\n" > "$W/skip.c"
    if ! $CC -std=c99 $WARN -I. "$W/skip.c" -o "$W/skip" -lm 2> "$W/skip.log"; then fail "runner: build the planted skip"; return; fi
    case "$(run_counted "planted skip" "$W/skip" | head -n 1)" in
    "@@ 1 0 1") ;;
    *) fail "runner: a skipped test was not counted as a skip"; return ;;
    esac
    for ci in true false; do
        out=$(CI=$ci ORACLE_PYTHONS=/nonexistent/python3 sh -c '. tests/oracle_lib.sh; oracle_python planted torch' 2>&1)
        rc=$?
        case "$ci:$rc:$out" in
        true:1:*"0 passed, 1 failed, 0 skipped"|false:0:*"0 passed, 0 failed, 1 skipped") ;;
        *) fail "runner: a missing oracle with CI=$ci gave exit $rc: $out"; return ;;
        esac
    done
    pass "runner: a killed or silent job fails the run, a skip counts as a skip, a missing oracle fails under CI"
}

# 1. the amalgamation is in sync with src/
amalgamation() {
    if tools/amalgamate.sh --check > "$W/amalgamate.log" 2>&1; then pass "amalgamation: tcompile.h matches src/"
    else fail "amalgamation: tcompile.h differs from src/"; head -n 20 "$W/amalgamate.log"; fi
}

# 1b. errors point at src/: a line planted in a src/ file is reported there
# (the amalgamation's #line directives), and at the header's own line under
# TC_HEADER_LINES
line_directives() {
    d="$W/lines"; mkdir -p "$d"; cp -r src tools "$d/"
    f=src/compiler/fuse.c; ln=$(($(wc -l < "$d/$f") + 1)) # not n: the job runner's own
    echo '#error tc_planted_line' >> "$d/$f"
    (cd "$d" && sh tools/amalgamate.sh) || { fail "line directives: amalgamate"; return; }
    printf '#define TCOMPILE_IMPLEMENTATION\n#include "tcompile.h"\n' > "$d/u.c"
    h=$(grep -n '^#error tc_planted_line' "$d/tcompile.h" | cut -d: -f1)
    a=$(cd "$d" && $CC -c u.c -o u.o 2>&1 | grep -o '[^ ]*:[0-9]*:[0-9]*: error: #error tc_planted_line')
    b=$(cd "$d" && $CC -DTC_HEADER_LINES -c u.c -o u.o 2>&1 | grep -o '[^ ]*:[0-9]*:[0-9]*: error: #error tc_planted_line')
    case "$a|$b" in
    "$f:$ln:"*"|tcompile.h:$h:"*) pass "line directives: errors name $f:$ln (tcompile.h:$h under TC_HEADER_LINES)" ;;
    *) fail "line directives: expected $f:$ln and tcompile.h:$h, got '$a' and '$b'" ;;
    esac
}

# 1c. the stages depend one way, in the manifest's order (tools/layers.py)
layers() {
    if ! have python3; then skip "layers: python3 not installed"; return; fi
    if python3 tools/layers.py > "$W/layers.log" 2>&1; then pass "$(tail -n 1 "$W/layers.log")"
    else fail "layers: a stage depends on a later one or declares another's internals"; head -n 20 "$W/layers.log"; fi
}

# 2. the header as C99 and C++ with both compilers, -Werror, in every variant
compile_variant() { # variant, compiler command
    variant=$1; cc=$2
    set -- $cc
    if ! have "$1"; then skip "compile $cc $variant: $1 not installed"; return; fi
    objs="$W/impl.o"
    case "$variant" in *STATIC*) ;; *) objs="$objs $W/use.o" ;; esac
    if $cc $OPT $WARN $variant -c tests/header_impl.c -o "$W/impl.o" 2> "$W/compile.log" &&
       { [ "$objs" = "$W/impl.o" ] || $cc $OPT $WARN $variant -c tests/header_use.c -o "$W/use.o" 2>> "$W/compile.log"; } &&
       $1 $objs -o "$W/link" $LIBS 2>> "$W/compile.log" && "$W/link" > /dev/null; then
        pass "compile+link $cc $WARN $variant"
    else
        fail "compile+link $cc $WARN $variant"; head -n 20 "$W/compile.log"
    fi
}

# 2d. TC_ISA_MAX compiles out the levels above it: test_vexec built with
#     the V128 level as the widest (its test_isa_max_clamps asks for more),
#     and no instance of a wider level in the program
isa_max() {
    exe="$W/test_vexec.isa_max"
    if $CC -std=c99 -O1 $WARN -DTC_ISA_MAX=TC_ISA_V128 -I. tests/test_vexec.c -o "$exe" $LIBS 2> "$W/isa_max.log"; then
        if nm "$exe" 2> /dev/null | grep -q 'tc__vm_tile_avx'; then fail "TC_ISA_MAX=TC_ISA_V128: AVX instances compiled"
        else run_counted "test_vexec (TC_ISA_MAX=TC_ISA_V128)" "$exe"; fi
    else fail "build test_vexec with TC_ISA_MAX=TC_ISA_V128"; head -n 20 "$W/isa_max.log"; fi
}

# 2a. Windows: cross-compile with MinGW when it is installed (nothing runs it)
MINGW=${MINGW:-x86_64-w64-mingw32-gcc}
mingw_variant() { # variant
    if $MINGW -std=c99 $OPT $WARN $1 -c tests/header_impl.c -o "$W/w_impl.o" 2> "$W/mingw.log" &&
       $MINGW -std=c99 $OPT $WARN $1 -c tests/header_use.c -o "$W/w_use.o" 2>> "$W/mingw.log" &&
       $MINGW "$W/w_impl.o" "$W/w_use.o" -o "$W/w_link.exe" 2>> "$W/mingw.log"; then
        pass "cross-compile+link for Windows ($MINGW $1)"
    else fail "cross-compile for Windows ($MINGW $1)"; head -n 20 "$W/mingw.log"; fi
}

# 2b. AArch64 (the NEON level of the executor) under qemu-user when the
#     cross compiler and emulator are installed
ARMCC=${ARMCC:-aarch64-linux-gnu-gcc}
arm_test() { # test
    if $ARMCC -std=c99 $OPT $WARN -I. "tests/$1.c" -o "$B/$1.arm64" $LIBS 2> "$B/$1.arm64.log"; then
        run_counted "$1 (AArch64 NEON, qemu)" qemu-aarch64 -L /usr/aarch64-linux-gnu "$B/$1.arm64"
    else fail "cross-compile $1 for AArch64"; head -n 20 "$B/$1.arm64.log"; fi
}

# 2c. allocation hooks are all-or-none: a partial set must not compile
partial_hooks() {
    printf '#define TC_MALLOC(n) malloc(n)\n#define TCOMPILE_IMPLEMENTATION\n#include "tcompile.h"\n' > "$W/partial_hooks.c"
    if $CC -std=c99 -I. -c "$W/partial_hooks.c" -o "$W/partial.o" 2> "$W/partial.log"; then
        fail "partial allocation hooks compiled (must be an #error)"
    elif grep -q "TC_MALLOC, TC_REALLOC and TC_FREE" "$W/partial.log"; then pass "partial allocation hooks are rejected with #error"
    else fail "partial allocation hooks failed for another reason"; head -n 5 "$W/partial.log"; fi
}

# 2f. the bench drops (never times) a compiled mode whose calls fail or
#     whose result is wrong: --plant makes every compiled mode so, and
#     the CSV must keep eager's rows and none of theirs, each with a reason
bench_guards() {
    exe="$W/bench_prog" # (not bench: the bench writes bench/out/ where it runs)
    if ! $CC -std=c99 -O1 $WARN -I. bench/bench.c -o "$exe" $LIBS -ldl 2> "$W/bench.log"; then
        fail "bench guards: build bench/bench.c"; head -n 20 "$W/bench.log"; return
    fi
    for p in fail wrong; do
        (cd "$W" && "$exe" -t 1 --plant "$p" -o "$W/$p/results.csv" mlp_small > "$W/$p.out" 2> "$W/$p.err")
        rc=$?
        eager=$(grep -c '^mlp_small,[0-9]*,.*,eager,' "$W/$p/results.csv" 2> /dev/null)
        timed=$(grep -cE ',(default|reduce-overhead|max-autotune|default-unfused),' "$W/$p/results.csv" 2> /dev/null)
        why=$(grep -c "dropped: " "$W/$p.err")
        if [ "$rc" -ne 0 ] || [ "${eager:-0}" -ne 3 ] || [ "${timed:-1}" -ne 0 ] || [ "$why" -ne 12 ]; then
            fail "bench guards ($p): exit $rc, $eager eager rows (3), $timed compiled rows (0), $why reasons (12)"
            head -n 5 "$W/$p.err"; return
        fi
    done
    pass "bench guards: failing or wrong compiled modes are dropped with a reason, eager kept"
}

# 2e. a user build carries no test switch: tcompile.h without
#     TCOMPILE_TESTING (as tests/header_impl.c includes it) must define none
#     of them.  Built at -O0 -g so that static variables stay in nm's list.
TEST_SWITCHES="vplan_off|vpair_off|vpair_parts|tune_measure_hook|sft_name_cmps|cu_plant_frag|cu_test_sm|conv_path|conv_direct_runs|pool_worker_hook"
no_test_switches() {
    if ! have nm; then skip "no test switch in a user build: nm not installed"; return; fi
    if ! $CC -std=c99 -O0 -g $WARN -c tests/header_impl.c -o "$W/user.o" 2> "$W/user.log"; then
        fail "no test switch in a user build: compile tests/header_impl.c"; head -n 20 "$W/user.log"; return
    fi
    found=$(nm "$W/user.o" | grep -oE "[A-Za-z0-9_.]*($TEST_SWITCHES)[A-Za-z0-9_.]*" | sort -u | tr '\n' ' ')
    if [ -z "$found" ]; then pass "no test switch in a user build (nm: none of $TEST_SWITCHES)"
    else fail "test switches in a user build (guard them with #ifdef TCOMPILE_TESTING): $found"; fi
}

# 3. unit tests: optimised (as users build), as C++, without threads, and
# 4. under ASan + UBSan, at -O0: the implementation is one 20,000-line unit
# per test, which gcc took 60 s to build with -O1 and the sanitisers (10 s
# at -O0), while the tests then run in seconds either way; the optimised
# builds are the gcc -O2, clang++ -O1 and TC_NO_THREADS -O1 flavours and
# the compile matrix (-O1, -O2, -O3).
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
unit_test() { # flavour, test
    t=$2
    case $1 in
    opt) label="$t"; exe="$B/$t"; set -- $CC -std=c99 -O2 -g $WARN ;;
    cxx) label="$t (C++, clang++)"; exe="$B/$t.cxx"
         if ! have "$CLANGXX"; then skip "$t as C++: $CLANGXX not installed"; return; fi
         set -- $CLANGXX -std=c++11 -x c++ -O1 $WARN ;;
    nothreads) label="$t (TC_NO_THREADS)"; exe="$B/$t.nothreads"; set -- $CC -std=c99 -O1 -DTC_NO_THREADS $WARN ;;
    asan) label="$t (ASan+UBSan)"; exe="$B/$t.asan"; set -- $CC -std=c99 -O0 -g $SAN $WARN ;;
    esac
    if "$@" -I. "tests/$t.c" -o "$exe" $LIBS 2> "$exe.build.log"; then
        ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run_counted "$label" "$exe"
    else fail "build $label"; head -n 30 "$exe.build.log"; fi
}

# 4b. the allocation-failure sweep, bounded: every 13th failure point of
#     each scenario (`make check-faults` sweeps them all), under ASan + UBSan
#     + LeakSanitizer
check_faults() {
    exe="$W/check_faults"
    if $CC -std=c99 -O0 -g $SAN $WARN -I. tests/check_faults.c -o "$exe" $LIBS 2> "$W/check_faults.log"; then
        ASAN_OPTIONS=detect_leaks=1 run_counted "allocation-failure sweep (every 13th point, ASan+UBSan+LSan)" "$exe" --every 13
    else fail "build tests/check_faults.c"; head -n 30 "$W/check_faults.log"; fi
}

# 4c. ThreadSanitizer (clang): tests whose kernels run on the thread pool,
#     test_gemm (the GEMM's threads, max-autotune's cache written from 4
#     threads) and test_compile with kernels split from 64 elements on (its
#     fused kernels are small), a data race fails the step.  No suppressions:
#     no report has been a false positive.
tsan_test() { # test, extra flags, label
    if ! have "$CLANG"; then skip "$1 under TSan: $CLANG not installed"; return; fi
    printf '#include <pthread.h>\nstatic void *f(void *a) { return a; }\nint main(void) { pthread_t t; return pthread_create(&t, 0, f, 0) || pthread_join(t, 0); }\n' > "$W/probe.c"
    if ! $CLANG -fsanitize=thread "$W/probe.c" -o "$W/probe" -lpthread > "$W/probe.log" 2>&1 || ! "$W/probe" >> "$W/probe.log" 2>&1; then
        skip "$1 under TSan: $CLANG -fsanitize=thread does not build or run here: $(head -n 1 "$W/probe.log")"; return
    fi
    exe="$W/$1.tsan"
    if $CLANG -std=c99 -O1 -g -fsanitize=thread $2 $WARN -I. "tests/$1.c" -o "$exe" $LIBS 2> "$exe.log"; then
        name="$1 (TSan$3)"
        TSAN_OPTIONS="halt_on_error=0 exitcode=66" run_counted "$name" "$exe"
        grep -m 2 -A 14 'WARNING: ThreadSanitizer' "$B/$(echo "$name" | tr ' /()+' '_____').log"
    else fail "build $1 with -fsanitize=thread"; head -n 30 "$exe.log"; fi
}

# 4d. libFuzzer (clang's runtime; Debian: libclang-rt-14-dev): the
#     safetensors parser, the op API on fuzzed shapes and arguments, and
#     compiled vs eager on fuzzed graphs (tests/fuzz/), 10 s each from their
#     committed corpora (seeds and former crashers) at -O0 (`make fuzz-lib`
#     runs them long).  Without the runtime the fuzzing is a skip, and a gcc
#     ASan build replays the corpora instead.
fuzz_lib() {
    out=$(sh tests/fuzz/run.sh "$W/fuzz" 10 -O0 2>&1)
    rc=$?
    if [ "$rc" -eq 3 ]; then
        skip "libFuzzer targets: $out"
        fuzz_replay
        return
    fi
    echo "$out" | while IFS= read -r line; do
        case "$line" in
        *": "[0-9]*" runs in "*) pass "libFuzzer $line (ASan+UBSan)" ;;
        *": crashed"*|*": build failed"*|"build "*) fail "libFuzzer $line" ;;
        *) echo "      $line" ;;
        esac
    done
    [ "$rc" -eq 0 ] || [ -n "$(echo "$out" | grep -E ': (crashed|build failed)|^build ')" ] || fail "libFuzzer: exit $rc"
}
fuzz_replay() {
    if ! $CC -std=c99 -O0 -g $SAN $WARN -c tests/fuzz/fuzz_impl.c -o "$W/fuzz_impl.o" 2> "$W/fuzz_impl.log"; then
        fail "build tests/fuzz/fuzz_impl.c"; head -n 20 "$W/fuzz_impl.log"; return
    fi
    for t in safetensors ops compile; do
        if $CC -std=c99 -O0 -g $SAN $WARN "tests/fuzz/$t.c" tests/fuzz/replay.c "$W/fuzz_impl.o" -o "$W/replay_$t" $LIBS 2> "$W/replay_$t.log"; then
            ASAN_OPTIONS=detect_leaks=1 run_counted "fuzz corpus $t replayed (ASan+UBSan)" "$W/replay_$t" "tests/fuzz/corpus/$t"
        else fail "build the $t replayer"; head -n 20 "$W/replay_$t.log"; fi
    done
}

oracles() { # "" or "asan"
    if [ "$1" = asan ]; then
        ORACLE_SANITIZE=1 run_counted "oracle vs PyTorch (ASan+UBSan)" sh tests/oracle.sh "$B/oracle_asan"
        ORACLE_SANITIZE=1 run_counted "example models vs PyTorch (ASan+UBSan)" sh tests/models_oracle.sh "$B/models_asan"
    else
        run_counted "oracle vs PyTorch" sh tests/oracle.sh "$B/oracle"
        run_counted "example models vs PyTorch" sh tests/models_oracle.sh "$B/models"
    fi
}

# 5. the CUDA backend without a GPU: the mirrored driver/NVRTC ABI against
#    the toolkit's headers, every generated kernel through the real NVRTC,
#    and the backend's results through the SIMT emulator (tests/cuda_emu/).
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
cuda_abi() {
    if [ ! -f "$CUDA_INC/cuda.h" ] || [ ! -f "$CUDA_INC/nvrtc.h" ]; then
        skip "CUDA ABI mirror: the toolkit's cuda.h and nvrtc.h are not in $CUDA_INC (set CUDA_INC)"; return
    fi
    if $CXX -std=c++11 $WARN -I. -I"$CUDA_INC" tests/test_cuda_abi.cpp -o "$W/abi" $LIBS 2> "$W/abi.log" &&
       "$W/abi" > "$W/abi.out" 2>&1; then pass "CUDA ABI mirror: $(sed 's/^ok *//' "$W/abi.out")"
    else fail "CUDA ABI mirror differs from $CUDA_INC/cuda.h or nvrtc.h"; grep -E 'error|assert' "$W/abi.log" | head -n 20; fi
}
# The emulator's library, built into the job's directory (its path in
# TCEMU_LIB): where it cannot be built, test_cuda skips those tests and says so.
cuda_test() { # flavour
    TCEMU_LIB=""
    if [ -f tests/cuda_emu/build.sh ] && sh tests/cuda_emu/build.sh "$W/emu" > "$W/emu.log" 2>&1; then
        TCEMU_LIB=$(ls "$W"/emu/libtcemu.so 2> /dev/null)
    else echo "SKIP  the SIMT emulator did not build: $(tail -n 3 "$W/emu.log" 2> /dev/null)"; fi
    export TCEMU_LIB
    unit_test "$1" test_cuda
}

TESTS="test_ops_tensor test_ops_shape test_ops_pointwise test_ops_reduce test_ops_linalg test_errors test_hooks test_compile test_scale test_vexec test_gemm test_attention test_conv test_safetensors fuzz_fusion"

# The longest jobs first, so the pool does not end on one of them.
job oracles asan
if have "$ARMCC" && have qemu-aarch64 && [ -d /usr/aarch64-linux-gnu ]; then
    for t in fuzz_fusion test_compile test_vexec test_gemm test_attention test_conv test_safetensors; do job arm_test "$t"; done
else
    job skip "AArch64/NEON under emulation: $ARMCC or qemu-aarch64 not installed (apt-get install gcc-aarch64-linux-gnu qemu-user)"
fi
for t in $TESTS; do job unit_test asan "$t"; done
job fuzz_lib
job check_faults
job tsan_test test_gemm "" ""
job tsan_test test_compile -DTC_PARALLEL_MIN_WORK=64 ", kernels split from 64 elements"
job oracles ""
for flavour in opt cxx nothreads; do
    for t in $TESTS; do job unit_test "$flavour" "$t"; done
done
job cuda_abi
job run_counted "tcemu, the SIMT emulator" sh tests/cuda_emu/run.sh "$B/cuda_emu"
for flavour in opt cxx; do job unit_test "$flavour" test_cuda_nvrtc; done
for flavour in opt cxx nothreads asan; do job cuda_test "$flavour"; done
job amalgamation
job line_directives
job layers
for variant in "" "-DTCOMPILE_STATIC" "-DTC_NO_THREADS" "-DTC_NO_CUDA" "-O1" "-O3"; do
    for cc in "$CC -std=c99 -x c" "$CXX -std=c++11 -x c++" "$CLANG -std=c99 -x c" "$CLANGXX -std=c++11 -x c++"; do
        job compile_variant "$variant" "$cc"
    done
done
if have "$MINGW"; then
    for variant in "" "-DTC_NO_THREADS"; do job mingw_variant "$variant"; done
else
    job skip "Windows cross-compile: $MINGW not installed (apt-get install gcc-mingw-w64-x86-64)"
fi
case "${RUN_ALL_PLANT:-}" in killed|silent) job "planted_$RUN_ALL_PLANT" ;; esac
job runner_selfcheck
job partial_hooks
job bench_guards
job no_test_switches
job isa_max
wait
exec 3>&-

passed=0 failed=0 skipped=0
i=1
while [ "$i" -le "$njob" ]; do
    n=$(printf %03d "$i")
    [ -f "$J/$n.out" ] && grep -v '^@@ ' "$J/$n.out"
    set -- $(cat "$J/$n.out" 2> /dev/null | awk '/^@@ / { c++; p += $2; f += $3; s += $4 } END { print c + 0, p + 0, f + 0, s + 0 }')
    passed=$((passed + $2)) failed=$((failed + $3)) skipped=$((skipped + $4))
    if [ ! -f "$J/$n.end" ]; then
        echo "FAIL  job $n ($(cat "$J/$n.cmd")) died before it ended (killed or crashed)"; failed=$((failed + 1))
    elif [ "$1" -eq 0 ]; then
        echo "FAIL  job $n ($(cat "$J/$n.cmd")) reported no result (exit $(cat "$J/$n.end"))"; failed=$((failed + 1))
    fi
    i=$((i + 1))
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
