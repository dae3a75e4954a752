#!/bin/sh
# PyTorch oracle: compares tcompile's eager ops with torch (tests/oracle_torch.py).
#     sh tests/oracle.sh [BUILD_DIR]
# Needs a python3 that can import torch; without one the comparison is
# skipped, not failed (under CI=true it fails), but the dump programs are
# built either way.  The last line is "N passed, N failed, N skipped"; the
# exit status is the script's (nonzero on any failure).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

. tests/oracle_lib.sh
# The binaries go to the directory given as $1 (kept), else to a temp dir.
oracle_dirs tc_oracle_build "${1:-}"

# Two builds: the default, and one whose kernels go parallel at any size, so
# that the small cases exercise the threaded paths as well.
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
echo "ok oracle: tests/oracle_dump.c builds (both variants)"
oracle_python oracle torch 1

"$py" tests/oracle_torch.py "$tmp/oracle_dump" "$tmp/oracle_dump_min_work_2"
