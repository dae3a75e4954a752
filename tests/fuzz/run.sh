#!/bin/sh
# The libFuzzer targets (tests/fuzz/*.c but fuzz_impl.c and replay.c):
# builds them with clang -fsanitize=fuzzer,address,undefined and runs each
# from its committed seeds (tests/fuzz/corpus/<target>, every input there
# replayed first) for SECONDS.
#   sh tests/fuzz/run.sh OUT SECONDS [OPT] [TARGET...]
# OUT holds the programs, the corpus each run grows (OUT/corpus/<target>)
# and the crashers (OUT/<target>-crash-*, to add to the committed corpus
# once fixed); OPT defaults to -O1 (make test uses -O0: a 12 s build of the
# implementation instead of 90).  Prints "TARGET: N runs in S s" per target.
# Exit 0 clean, 1 a crash or a failed build, 3 clang or its fuzzer runtime
# (Debian: libclang-rt-14-dev) missing.
set -u
cd "$(dirname "$0")/../.."
OUT=$1 SECS=$2 OPT=${3:--O1}
shift 2; [ $# -gt 0 ] && shift
TARGETS=${*:-safetensors ops compile}
CLANG=${CLANG:-clang}
SAN="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
mkdir -p "$OUT"
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' > "$OUT/probe.c"
if ! $CLANG $SAN "$OUT/probe.c" -o "$OUT/probe" > "$OUT/probe.log" 2>&1; then
    echo "no libFuzzer: $CLANG -fsanitize=fuzzer does not link ($(head -n 1 "$OUT/probe.log"))"; exit 3
fi
if ! $CLANG -std=c99 $OPT -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
        -Wall -Wextra -Werror -pedantic -c tests/fuzz/fuzz_impl.c -o "$OUT/impl.o" 2> "$OUT/impl.log"; then
    echo "build tests/fuzz/fuzz_impl.c failed"; head -n 20 "$OUT/impl.log"; exit 1
fi
rc=0
for t in $TARGETS; do
    if ! $CLANG -std=c99 $OPT -g $SAN -Wall -Wextra -Werror -pedantic "tests/fuzz/$t.c" "$OUT/impl.o" \
            -o "$OUT/$t" -lm -lpthread 2> "$OUT/$t.build.log"; then
        echo "$t: build failed"; head -n 20 "$OUT/$t.build.log"; rc=1; continue
    fi
    mkdir -p "$OUT/corpus/$t"
    rm -f "$OUT/$t"-crash-* "$OUT/$t"-leak-* "$OUT/$t"-timeout-* "$OUT/$t"-oom-*
    # -timeout: one input may take 20 s (the slowest seen take 50 ms);
    # -rss_limit_mb: the targets refuse allocations over 64 MB themselves
    (cd "$OUT" && ASAN_OPTIONS=detect_leaks=1 "./$t" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$t-" "corpus/$t" "$OLDPWD/tests/fuzz/corpus/$t") > "$OUT/$t.log" 2>&1
    r=$?
    runs=$(sed -nE 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\1 runs in \2 s/p' "$OUT/$t.log")
    if [ "$r" -ne 0 ] || [ -z "$runs" ]; then
        echo "$t: crashed (exit $r); the input: $(ls "$OUT/$t"-crash-* "$OUT/$t"-leak-* "$OUT/$t"-timeout-* "$OUT/$t"-oom-* 2> /dev/null | head -n 1)"
        grep -E 'invariant failed|ERROR: |SUMMARY|^call |^element ' "$OUT/$t.log" | head -n 10; rc=1
    else echo "$t: $runs"; fi
done
exit $rc
