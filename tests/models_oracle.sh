#!/bin/sh
# The example models against PyTorch (tests/models_oracle.py).
#     sh tests/models_oracle.sh [BUILD_DIR]
# Needs a python3 that can import torch; without one the test is skipped,
# not failed.  ORACLE_SANITIZE=1 builds the examples with ASan + UBSan.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
py=""
for cand in /usr/bin/python3 python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c "import torch, numpy" >/dev/null 2>&1; then
        py=$cand
        break
    fi
done
if [ -z "$py" ]; then
    echo "SKIP models oracle: python3-torch not installed (apt-get install python3-torch)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
if [ $# -ge 1 ] && [ -n "$1" ]; then
    tmp=$1
    mkdir -p "$tmp" || exit 1
else
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/tc_models.XXXXXX") || exit 1
    trap 'rm -rf "$tmp"' EXIT
fi
extra="-O2"
if [ "${ORACLE_SANITIZE:-0}" = 1 ]; then
    extra="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all"
fi
for ex in resnet gpt2 vit; do
    # $extra is deliberately unquoted: it holds several flags
    if ! ${CC:-gcc} -std=c99 $extra -Wall -Wextra -Werror -pedantic -I. "examples/$ex.c" -o "$tmp/$ex" -lm -lpthread; then
        echo "FAIL models oracle: examples/$ex.c does not build"
        echo "0 passed, 1 failed, 0 skipped"
        exit 1
    fi
done
"$py" tests/models_oracle.py "$tmp"
