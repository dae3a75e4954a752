#!/usr/bin/env python3
"""Checks that src/'s stages depend one way, in the amalgamation's order.

The manifest in tools/amalgamate.sh lists the files in pipeline order
(runtime, ops, cpu kernels, io, compiler, backends).  Every function is
static in one translation unit, so a file can only call what an earlier
file defines, unless something declares it ahead.  This check keeps it so:

  1. no file refers to a tc__/tc_ function that a later file defines
     (per-ISA functions, TC__VFN(name) / TC__GFN(name), by their names);
  2. no file but src/internal.h declares a function another file defines;
  3. no stage calls a public op entry point (tc_*_at, written out or
     generated from the op rows) of another file: the library's own calls
     go through the dispatcher.  io/ is a client of the public API, like a
     user's code, and may;
  4. src/internal.h declares every tc__ function a file uses from another
     (those of runtime/platform.c, which precedes it, are named in its
     comment; a per-ISA function is declared by its instances, emitted
     before their users), and nothing else;
  5. the one registration point: the op table (src/ops/optable.h) declares
     every op's shape rule and kernel ahead (TC__DECL_) and the dispatcher
     reaches them through it; each must be defined in ops/ or cpu/, the
     layers of eager kernels, never in the compiler or after it.

Macro bodies are not read as calls (a macro is used where it is expanded,
and the compiler checks that call); the op table's pasted names are read
from its rows (rule 5).  Only functions are checked, not static tables.

Prints each violation as file: what; exits 1 if there is any.
"""
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
os.chdir(root)

manifest = open("tools/amalgamate.sh").read()


def listed(part):
    return ["src/" + x[1:] + ".c" if x.startswith("@") else x
            for x in re.search(part + r'="(.*?)"', manifest, re.S).group(1).split()
            if x.startswith(("@", "src/"))]  # (other words are generated sections)


public_header = listed("HEADER")  # the declarations: not a stage
order = listed("IMPL")
pos = {f: i for i, f in enumerate(order)}
missing = [f for f in order + public_header if not os.path.exists(f)]
unlisted = sorted(
    os.path.join(d, n)[len("./"):] if d.startswith("./") else os.path.join(d, n)
    for d, _, ns in os.walk("src") for n in ns if n.endswith((".c", ".h")))
unlisted = [f for f in unlisted if f not in pos and f not in public_header]


def blank(m):
    return re.sub(r"[^\n]", " ", m.group(0))


def strip_text(text):
    """Comments, string and character literals blanked (lines kept)."""
    return re.sub(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])+'", blank, text, flags=re.S)


def strip(text):
    """strip_text, and macro definitions blanked too."""
    return re.sub(r"^[ \t]*#[ \t]*define\b(?:[^\n]*\\\n)*[^\n]*", blank, strip_text(text), flags=re.M)


raw = {f: strip_text(open(f).read()) for f in order if os.path.exists(f)}
src = {f: strip(t) for f, t in raw.items()}

# Definitions: a function name followed by its parameter list and a body;
# a per-ISA function by the name inside TC__VFN( ) / TC__GFN( ).
DEF = re.compile(r"^(?:TC__FN|TCDEF|TC__INL|static)\b[^;{}=]*?\b(?:TC__[VG]FN\()?(tc_[A-Za-z0-9_]+)\)?\s*\("
                 r"[^;{}]*?\)\s*(?:TC__PRINTF\([^)]*\)\s*)?\{", re.M | re.S)
PROTO = re.compile(r"^(?:TC__FN|static)\b[^;{}()=]*?\b(tc__[A-Za-z0-9_]+)\s*\([^;{}]*?\)\s*"
                   r"(?:TC__PRINTF\([^)]*\)\s*)?;", re.M | re.S)
defs, public, per_isa = {}, set(), set()
for f in order:
    for m in DEF.finditer(src.get(f, "")):
        defs.setdefault(m.group(1), f)
        if m.group(0).startswith("TCDEF"):
            public.add(m.group(1))
        if re.search(r"TC__[VG]FN\(\s*" + m.group(1), m.group(0)):
            per_isa.add(m.group(1))


def line_of(text, at):
    return text.count("\n", 0, at) + 1


problems = []
for f in missing:
    problems.append("%s: in the manifest but missing" % f)
for f in unlisted:
    problems.append("%s: not in the manifest (tools/amalgamate.sh)" % f)
for f, text in src.items():
    if f == "src/internal.h":
        continue
    for m in re.finditer(r"\b(tc_[A-Za-z0-9_]+)\b", text):
        name, d = m.group(1), defs.get(m.group(1))
        if d and d != f and pos[d] > pos[f]:
            problems.append("%s:%d: refers to %s, defined by the later %s" % (f, line_of(text, m.start()), name, d))
    # rule 3, for written-out and generated entry points alike
    if not f.startswith("src/io/"):
        for m in re.finditer(r"\b(tc_[A-Za-z0-9_]+_at)\s*\(", text):
            d = defs.get(m.group(1))
            if d == f or text[max(0, text.rfind("\n", 0, m.start())):m.start()].lstrip().startswith("TCDEF"):
                continue
            problems.append("%s:%d: calls the public entry point %s%s: use the dispatcher's internals"
                            % (f, line_of(text, m.start()), m.group(1), " (%s)" % d if d else ""))
    for m in PROTO.finditer(text):
        d = defs.get(m.group(1))
        if d and d != f:
            problems.append("%s:%d: declares %s of %s (cross-stage declarations belong in src/internal.h)"
                            % (f, line_of(text, m.start()), m.group(1), d))

# rule 4
internal = raw.get("src/internal.h", "")
declared = set(m.group(1) for m in PROTO.finditer(internal))
named = set(re.findall(r"\b(tc__[A-Za-z0-9_]+)\b", open("src/internal.h").read())) - declared \
    if os.path.exists("src/internal.h") else set()
crossed = set()
for f, text in src.items():
    for m in re.finditer(r"\b(tc__[A-Za-z0-9_]+)\b", text):
        d = defs.get(m.group(1))
        if d and d != f and f != "src/internal.h" and m.group(1) not in per_isa:
            crossed.add(m.group(1))  # (a per-ISA function is declared by its instances)
for n in sorted(crossed - declared):
    if not (defs[n] == "src/runtime/platform.c" and n in named):
        problems.append("src/internal.h: %s (%s) is used by another file but not declared" % (n, defs[n]))
for n in sorted(declared - crossed):
    problems.append("src/internal.h: declares %s, which no other file uses" % n)

# rule 5: the op table's rows (its own and those of the pointwise lists)
table = raw.get("src/ops/optable.h", "")
registered = set()
for m in re.finditer(r"X\(\w+,\s*(?:\"[^\"]*\"|#\w+|\s*),\s*TC__CLASS_\w+,\s*(\w+),\s*(\w+)\)", table):
    registered.add("tc__shape_" + m.group(1))
    registered.add("tc__run_" + m.group(2))
for n in sorted(registered):
    d = defs.get(n)
    if not d:
        problems.append("src/ops/optable.h: registers %s, which no file defines" % n)
    elif not d.startswith(("src/ops/", "src/cpu/")):
        problems.append("src/ops/optable.h: registers %s, defined in %s (not an eager-kernel layer)" % (n, d))

for p in problems:
    print(p)
print("layers: %d files in pipeline order, %d functions, %d op-table registrations, %d violations"
      % (len(src), len(defs), len(registered), len(problems)))
sys.exit(1 if problems else 0)
