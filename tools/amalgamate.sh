#!/bin/sh
# Builds tcompile.h from src/ in a fixed order.  Deterministic: no dates, no
# paths from the machine.  --check regenerates into a temp file and diffs.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# The manifest: declarations first, then the implementation stages in
# pipeline order.  Adding a file to src/ means adding it here.
HEADER="src/manual.h src/api.h"
IMPL="src/impl_prelude.h src/platform.c src/util.c src/threads.c src/tensor.c
src/optable.h src/dispatch.c src/pointwise.c src/reduce.c @gemm_isa src/gemm.c
src/linalg.c src/conv.c src/shape.c src/safetensors.c src/graph.c src/passes.c src/kernel.c src/fuse.c
@vexec_isa src/vexec.c src/attention.c src/tunecache.c src/plan.c src/compile.c src/license.h"

# src/vexec_isa.c and src/gemm_isa.c (@name in the manifest) are written
# once over GNU C vector types and emitted once per ISA level (suffix,
# lanes, target attribute, the guard it needs).
ISAS="avx512|16|__attribute__((target(\"avx512f,avx2,fma\")))|defined(TC__HAVE_VEXEC_X86)
avx2|8|__attribute__((target(\"avx2,fma\")))|defined(TC__HAVE_VEXEC_X86)
v128|4||defined(TC__HAVE_VEXEC)
scalar|1||defined(TC__HAVE_VEXEC)"

instantiate() { # name
    echo "$ISAS" | while IFS='|' read -r sfx w attr guard; do
        printf '\n/* ===== src/%s.c for %s ===== */\n#if %s\n' "$1" "$sfx" "$guard"
        printf '#define TC__ISA_SFX %s\n#define TC__ISA_W %s\n#define TC__ISA_ATTR %s\n' "$sfx" "$w" "$attr"
        cat "src/$1.c"
        printf '#undef TC__ISA_SFX\n#undef TC__ISA_W\n#undef TC__ISA_ATTR\n#endif\n'
    done
}

gen() {
    for f in $HEADER; do
        cat "$f"
    done
    printf '\n#ifdef TCOMPILE_IMPLEMENTATION\n#ifndef TCOMPILE_IMPLEMENTATION_DONE_\n#define TCOMPILE_IMPLEMENTATION_DONE_\n'
    for f in $IMPL; do
        case "$f" in @*) instantiate "${f#@}"; continue ;; esac
        printf '\n/* ===== %s ===== */\n' "$f"
        cat "$f"
    done
    printf '\n#endif /* TCOMPILE_IMPLEMENTATION_DONE_ */\n#endif /* TCOMPILE_IMPLEMENTATION */\n'
}

if [ "${1:-}" = "--check" ]; then
    tmp=$(mktemp)
    trap 'rm -f "$tmp"' EXIT
    gen > "$tmp"
    if cmp -s "$tmp" tcompile.h; then
        echo "amalgamate: tcompile.h is up to date"
    else
        echo "amalgamate: tcompile.h differs from src/ (run tools/amalgamate.sh):"
        diff -u tcompile.h "$tmp" | head -40 || true
        exit 1
    fi
else
    gen > tcompile.h.tmp
    mv tcompile.h.tmp tcompile.h
fi
