#!/bin/sh
# The example models against PyTorch (tests/models_oracle.py).
#     sh tests/models_oracle.sh [BUILD_DIR]
# Needs a python3 that can import torch; without one the comparison is
# skipped, not failed (under CI=true it fails), but the examples are built
# either way.  ORACLE_SANITIZE=1 builds them with ASan + UBSan.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
. tests/oracle_lib.sh
oracle_dirs tc_models "${1:-}"
for ex in resnet gpt2 vit; do
    # $extra is deliberately unquoted: it holds several flags
    if ! ${CC:-gcc} -std=c99 $extra -Wall -Wextra -Werror -pedantic -I. "examples/$ex.c" -o "$tmp/$ex" -lm -lpthread; then
        echo "FAIL models oracle: examples/$ex.c does not build"
        echo "0 passed, 1 failed, 0 skipped"
        exit 1
    fi
done
echo "ok models oracle: examples resnet, gpt2 and vit build"
oracle_python "models oracle" "torch, numpy" 1
"$py" tests/models_oracle.py "$tmp"
