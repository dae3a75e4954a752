#!/bin/sh
# PyTorch oracle: compares tcompile's eager ops with torch (tests/oracle_torch.py).
#     sh tests/oracle.sh [BUILD_DIR]
# Needs a python3 that can import torch; without one the test is skipped,
# not failed.  The last line is "N passed, N failed, N skipped"; the exit
# status is the script's (nonzero on any failure).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

py=""
for cand in /usr/bin/python3 python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c "import torch" >/dev/null 2>&1; then
        py=$cand
        break
    fi
done
if [ -z "$py" ]; then
    echo "SKIP oracle: python3-torch not installed (apt-get install python3-torch)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi

# The binaries go to the directory given as $1 (kept), else to a temp dir.
if [ $# -ge 1 ] && [ -n "$1" ]; then
    tmp=$1
    mkdir -p "$tmp" || exit 1
else
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/tc_oracle_build.XXXXXX") || exit 1
    trap 'rm -rf "$tmp"' EXIT
    trap 'exit 130' INT TERM
fi

# Two builds: the default, and one whose kernels go parallel at any size, so
# that the small cases exercise the threaded paths as well.
# ORACLE_SANITIZE=1 builds both with AddressSanitizer + UBSan (a report makes
# the case it happened in fail).
extra="-O2"
if [ "${ORACLE_SANITIZE:-0}" = 1 ]; then
    extra="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined"
fi
for variant in "oracle_dump" "oracle_dump_min_work_2 -DTC_PARALLEL_MIN_WORK=2"; do
    set -- $variant
    exe=$1
    shift
    # $extra is deliberately unquoted: it holds several flags
    if ! ${CC:-gcc} -std=c99 $extra -Wall -Wextra -Werror -pedantic "$@" -I. \
            tests/oracle_dump.c -o "$tmp/$exe" -lm -lpthread; then
        echo "FAIL oracle: tests/oracle_dump.c does not build ($*)"
        echo "0 passed, 1 failed, 0 skipped"
        exit 1
    fi
done

"$py" tests/oracle_torch.py "$tmp/oracle_dump" "$tmp/oracle_dump_min_work_2"
