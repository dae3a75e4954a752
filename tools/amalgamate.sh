#!/bin/sh
# Builds tcompile.h from src/ in a fixed order.  Deterministic: no dates, no
# paths from the machine.  --check regenerates into a temp file and diffs.
#
# Each file's text is preceded by a #line directive naming it (src/ops/fuse.c),
# so compiler errors and debuggers point at src/ rather than into the header.
# The directive's operands are the macro TC__LINE_AT, which the header
# defines first: a user who defines TC_HEADER_LINES gets the header's own
# line numbers instead (the directives then name the header itself).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# The manifest: declarations first, then the implementation stages in
# pipeline order, folder by folder (runtime, ops, cpu kernels, io, compiler).
# Adding a file to src/ means adding it here.
HEADER="src/manual.h src/api.h"
IMPL="src/impl_prelude.h
src/runtime/platform.c src/runtime/util.c src/runtime/threads.c src/runtime/tensor.c
src/ops/optable.h src/internal.h src/ops/dispatch.c src/ops/pointwise.c src/ops/reduce.c
@cpu/gemm_isa src/cpu/gemm.c src/ops/linalg.c src/cpu/conv.c src/ops/shape.c
src/io/safetensors.c
src/compiler/graph.c src/compiler/passes.c src/compiler/kernel.c src/compiler/fuse.c
src/cpu/vstate.h @cpu/vmath_isa @cpu/vexec_isa src/cpu/vexec.c src/cpu/attention.c
src/compiler/plan.c src/cpu/backend.c src/compiler/tune.c
src/compiler/fn.h src/compiler/explain.c src/compiler/trace.c src/compiler/dynamic.c src/compiler/compile.c
src/license.h"

# src/cpu/vmath_isa.c, src/cpu/vexec_isa.c and src/cpu/gemm_isa.c (@name in
# the manifest) are written once over GNU C vector types and emitted once per
# ISA level (suffix, lanes, target attribute, the guard it needs).
ISAS="avx512|16|__attribute__((target(\"avx512f,avx2,fma\")))|defined(TC__HAVE_VEXEC_X86)
avx2|8|__attribute__((target(\"avx2,fma\")))|defined(TC__HAVE_VEXEC_X86)
v128|4||defined(TC__HAVE_VEXEC)
scalar|1||defined(TC__HAVE_VEXEC)"

# A marker that fix_lines replaces by a #line back to the header's own
# numbering (it needs the output's line number, known only once written).
HERE='#line TC__HEADER_HERE'

src_line() { # file: the #line that names the file's first line
    printf '#line TC__LINE_AT(1, "%s")\n' "$1"
}

instantiate() { # name
    echo "$ISAS" | while IFS='|' read -r sfx w attr guard; do
        printf '\n/* ===== src/%s.c for %s ===== */\n#if %s\n' "$1" "$sfx" "$guard"
        printf '#define TC__ISA_SFX %s\n#define TC__ISA_W %s\n#define TC__ISA_ATTR %s\n' "$sfx" "$w" "$attr"
        src_line "src/$1.c"
        cat "src/$1.c"
        echo "$HERE"
        printf '#undef TC__ISA_SFX\n#undef TC__ISA_W\n#undef TC__ISA_ATTR\n#endif\n'
    done
}

gen() {
    cat <<'EOF'
/* tcompile.h: generated from src/ by tools/amalgamate.sh; edit src/, not this file. */
#ifndef TC__LINE_AT /* #line operands: src/ names, or with TC_HEADER_LINES this header's own lines */
#ifdef TC_HEADER_LINES
#define TC__LINE_AT(src_line, src_file, header_line) header_line __FILE__
#else
#define TC__LINE_AT(src_line, src_file, header_line) src_line src_file
#endif
#endif
EOF
    for f in $HEADER; do
        src_line "$f"
        cat "$f"
        echo "$HERE"
    done
    printf '\n#ifdef TCOMPILE_IMPLEMENTATION\n#ifndef TCOMPILE_IMPLEMENTATION_DONE_\n#define TCOMPILE_IMPLEMENTATION_DONE_\n'
    for f in $IMPL; do
        case "$f" in @*) instantiate "${f#@}"; continue ;; esac
        printf '\n/* ===== %s ===== */\n' "$f"
        src_line "$f"
        cat "$f"
        echo "$HERE"
    done
    printf '\n#endif /* TCOMPILE_IMPLEMENTATION_DONE_ */\n#endif /* TCOMPILE_IMPLEMENTATION */\n'
}

# Fills in each marker's and each src_line's header line number (the line
# after the directive); a src/ name goes in as the header's name under
# TC_HEADER_LINES, where __FILE__ still is the header.
fix_lines() {
    awk -v here="$HERE" '
        $0 == here { printf "#line TC__LINE_AT(%d, \"tcompile.h\", %d)\n", NR + 1, NR + 1; next }
        /^#line TC__LINE_AT\(1, "src\// { sub(/\)$/, ", " NR + 1 ")"); print; next }
        { print }'
}

if [ "${1:-}" = "--check" ]; then
    tmp=$(mktemp)
    trap 'rm -f "$tmp"' EXIT
    gen | fix_lines > "$tmp"
    if cmp -s "$tmp" tcompile.h; then
        echo "amalgamate: tcompile.h is up to date"
    else
        echo "amalgamate: tcompile.h differs from src/ (run tools/amalgamate.sh):"
        diff -u tcompile.h "$tmp" | head -40 || true
        exit 1
    fi
else
    gen | fix_lines > tcompile.h.tmp
    mv tcompile.h.tmp tcompile.h
fi
