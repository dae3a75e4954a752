#!/bin/sh
# The whole test suite (`make test`).  Every step prints its own result; the
# last line adds them up as "N passed, N failed, N skipped" and the exit code
# is nonzero on any failure.
#   CC / CXX / CLANG / CLANGXX override the compilers; a missing clang is a
#   skipped step with the reason printed, never a silent pass.
set -u
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build/test}
mkdir -p "$B"
# max-autotune's on-disk cache: a fresh one for this run, never the user's
case "$B" in /*) TC_CACHE_DIR="$B/tune-cache" ;; *) TC_CACHE_DIR="$(pwd)/$B/tune-cache" ;; esac
export TC_CACHE_DIR
rm -rf "$TC_CACHE_DIR"

CC=${CC:-gcc}
CXX=${CXX:-g++}
CLANG=${CLANG:-clang}
CLANGXX=${CLANGXX:-clang++}
WARN="-Wall -Wextra -Werror -pedantic"
OPT=${OPT:--O2}
LIBS="-lm -lpthread"
passed=0 failed=0 skipped=0

pass() { passed=$((passed + 1)); echo "ok    $1"; }
fail() { failed=$((failed + 1)); echo "FAIL  $1"; }
skip() { skipped=$((skipped + 1)); echo "SKIP  $1"; }

# Runs a test program and adds the counts from its "N passed, N failed" line.
run_counted() { # name, command...
    name=$1; shift
    out="$B/$(echo "$name" | tr ' /' '__').log"
    "$@" > "$out" 2>&1
    rc=$?
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
    if [ -z "$line" ]; then
        fail "$name (no summary line, exit $rc)"; tail -n 20 "$out"; return
    fi
    p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
    s=$(echo "$line" | sed -nE 's/.*, ([0-9]+) skipped.*/\1/p')
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + ${s:-0}))
    if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then
        [ "$f" -eq 0 ] && failed=$((failed + 1))
        echo "FAIL  $name: $line (exit $rc)"; grep -E 'FAIL|check failed|:[0-9]+: ' "$out" | head -n 40
    else
        echo "ok    $name: $line"
        grep -E '^SKIP' "$out" | head -n 5
    fi
}

have() { command -v "$1" > /dev/null 2>&1; }

# 1. the amalgamation is in sync with src/
if tools/amalgamate.sh --check > "$B/amalgamate.log" 2>&1; then pass "amalgamation: tcompile.h matches src/"
else fail "amalgamation: tcompile.h differs from src/"; head -n 20 "$B/amalgamate.log"; fi

# 2. the header as C99 and C++ with both compilers, -Werror, in every variant
for variant in "" "-DTCOMPILE_STATIC" "-DTC_NO_THREADS" "-O1" "-O3"; do
    for cc in "$CC -std=c99 -x c" "$CXX -std=c++11 -x c++" "$CLANG -std=c99 -x c" "$CLANGXX -std=c++11 -x c++"; do
        set -- $cc
        if ! have "$1"; then skip "compile $cc $variant: $1 not installed"; continue; fi
        objs="$B/impl.o"
        case "$variant" in *STATIC*) ;; *) objs="$objs $B/use.o" ;; esac
        if $cc $OPT $WARN $variant -c tests/header_impl.c -o "$B/impl.o" 2> "$B/compile.log" &&
           { [ "$objs" = "$B/impl.o" ] || $cc $OPT $WARN $variant -c tests/header_use.c -o "$B/use.o" 2>> "$B/compile.log"; } &&
           $1 $objs -o "$B/link" $LIBS 2>> "$B/compile.log" && "$B/link" > /dev/null; then
            pass "compile+link $cc $WARN $variant"
        else
            fail "compile+link $cc $WARN $variant"; head -n 20 "$B/compile.log"
        fi
    done
done

# 2a. Windows: cross-compile with MinGW when it is installed (nothing runs it)
MINGW=${MINGW:-x86_64-w64-mingw32-gcc}
if have "$MINGW"; then
    for variant in "" "-DTC_NO_THREADS"; do
        if $MINGW -std=c99 $OPT $WARN $variant -c tests/header_impl.c -o "$B/w_impl.o" 2> "$B/mingw.log" &&
           $MINGW -std=c99 $OPT $WARN $variant -c tests/header_use.c -o "$B/w_use.o" 2>> "$B/mingw.log" &&
           $MINGW "$B/w_impl.o" "$B/w_use.o" -o "$B/w_link.exe" 2>> "$B/mingw.log"; then
            pass "cross-compile+link for Windows ($MINGW $variant)"
        else fail "cross-compile for Windows ($MINGW $variant)"; head -n 20 "$B/mingw.log"; fi
    done
else
    skip "Windows cross-compile: $MINGW not installed (apt-get install gcc-mingw-w64-x86-64)"
fi

# 2b. AArch64 (the NEON level of the executor) under qemu-user when the
#     cross compiler and emulator are installed
ARMCC=${ARMCC:-aarch64-linux-gnu-gcc}
if have "$ARMCC" && have qemu-aarch64 && [ -d /usr/aarch64-linux-gnu ]; then
    for t in test_vexec test_gemm test_attention test_conv test_safetensors fuzz_fusion test_compile; do
        if $ARMCC -std=c99 $OPT $WARN -I. "tests/$t.c" -o "$B/$t.arm64" $LIBS 2> "$B/$t.arm64.log"; then
            run_counted "$t (AArch64 NEON, qemu)" qemu-aarch64 -L /usr/aarch64-linux-gnu "$B/$t.arm64"
        else fail "cross-compile $t for AArch64"; head -n 20 "$B/$t.arm64.log"; fi
    done
else
    skip "AArch64/NEON under emulation: $ARMCC or qemu-aarch64 not installed (apt-get install gcc-aarch64-linux-gnu qemu-user)"
fi

# 2c. allocation hooks are all-or-none: a partial set must not compile
printf '#define TC_MALLOC(n) malloc(n)\n#define TCOMPILE_IMPLEMENTATION\n#include "tcompile.h"\n' > "$B/partial_hooks.c"
if $CC -std=c99 -I. -c "$B/partial_hooks.c" -o "$B/partial.o" 2> "$B/partial.log"; then
    fail "partial allocation hooks compiled (must be an #error)"
elif grep -q "TC_MALLOC, TC_REALLOC and TC_FREE" "$B/partial.log"; then pass "partial allocation hooks are rejected with #error"
else fail "partial allocation hooks failed for another reason"; head -n 5 "$B/partial.log"; fi

# 3. unit tests (optimised, as users build), then the oracle
TESTS="test_ops test_errors test_hooks test_compile test_vexec test_gemm test_attention test_conv test_safetensors fuzz_fusion"
for t in $TESTS; do
    if $CC -std=c99 -O2 -g $WARN -I. "tests/$t.c" -o "$B/$t" $LIBS 2> "$B/$t.build.log"; then
        run_counted "$t" "$B/$t"
    else fail "build $t"; head -n 30 "$B/$t.build.log"; fi
done
for t in $TESTS; do
    if have "$CLANGXX" && $CLANGXX -std=c++11 -x c++ -O1 $WARN -I. "tests/$t.c" -o "$B/$t.cxx" $LIBS 2> "$B/$t.cxx.log"; then
        run_counted "$t (C++, clang++)" "$B/$t.cxx"
    elif have "$CLANGXX"; then fail "build $t as C++"; head -n 30 "$B/$t.cxx.log"
    else skip "$t as C++: $CLANGXX not installed"; fi
done
for t in $TESTS; do
    if $CC -std=c99 -O1 -DTC_NO_THREADS $WARN -I. "tests/$t.c" -o "$B/$t.nothreads" $LIBS 2> "$B/$t.nt.log"; then
        run_counted "$t (TC_NO_THREADS)" "$B/$t.nothreads"
    else fail "build $t with TC_NO_THREADS"; head -n 30 "$B/$t.nt.log"; fi
done

run_counted "oracle vs PyTorch" sh tests/oracle.sh "$B"
run_counted "example models vs PyTorch" sh tests/models_oracle.sh "$B/models"

# 4. everything again under ASan + UBSan
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
for t in $TESTS; do
    if $CC -std=c99 -O1 -g $SAN $WARN -I. "tests/$t.c" -o "$B/$t.asan" $LIBS 2> "$B/$t.asan.log"; then
        ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run_counted "$t (ASan+UBSan)" "$B/$t.asan"
    else fail "build $t with sanitizers"; head -n 30 "$B/$t.asan.log"; fi
done

ORACLE_SANITIZE=1 run_counted "oracle vs PyTorch (ASan+UBSan)" sh tests/oracle.sh "$B/oracle_asan"
ORACLE_SANITIZE=1 run_counted "example models vs PyTorch (ASan+UBSan)" sh tests/models_oracle.sh "$B/models_asan"

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
