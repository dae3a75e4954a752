# Shared by the PyTorch oracles (tests/oracle.sh, tests/models_oracle.sh),
# sourced with `.` from the repository root after `set -u`.

# oracle_python NAME MODULES [BUILT]: sets $py to a python3 that can import
# MODULES (comma-separated), else prints NAME's result and exits the
# caller: without torch an oracle is skipped, not failed (BUILT: the passes
# of what was built before, counted all the same) -- except under CI
# (CI=true), where .ci/run installs torch, and a missing one fails.
# ORACLE_PYTHONS lists the interpreters tried (default /usr/bin/python3
# python3).
oracle_python() {
    py=""
    for cand in ${ORACLE_PYTHONS:-/usr/bin/python3 python3}; do
        if command -v "$cand" >/dev/null 2>&1 && "$cand" -c "import $2" >/dev/null 2>&1; then
            py=$cand
            return 0
        fi
    done
    if [ "${CI:-}" = true ]; then
        echo "FAIL $1: python3 cannot import $2 under CI, where .ci/run installs it (apt-get install python3-torch python3-numpy)"
        echo "${3:-0} passed, 1 failed, 0 skipped"
        exit 1
    fi
    echo "SKIP $1: python3 cannot import $2 (apt-get install python3-torch python3-numpy)"
    echo "${3:-0} passed, 0 failed, 1 skipped"
    exit 0
}

# oracle_dirs PREFIX [DIR]: sets $tmp to DIR (created, kept) when given, else
# to a temporary directory removed on exit; sets $extra to the build flags
# (ORACLE_SANITIZE=1: AddressSanitizer + UBSan at -O0, a report fails its
# case; at -O1 the five sanitised builds took 5 minutes, at -O0 under one).
oracle_dirs() {
    if [ $# -ge 2 ] && [ -n "$2" ]; then
        tmp=$2
        mkdir -p "$tmp" || exit 1
    else
        tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
        trap 'rm -rf "$tmp"' EXIT
        trap 'exit 130' INT TERM
    fi
    extra="-O2"
    if [ "${ORACLE_SANITIZE:-0}" = 1 ]; then
        extra="-O0 -g -fsanitize=address,undefined -fno-sanitize-recover=all"
    fi
}
