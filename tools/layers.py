#!/usr/bin/env python3
"""Checks that src/'s stages depend one way, in the amalgamation's order.

The manifest in tools/amalgamate.sh lists the files in pipeline order
(runtime, ops, cpu kernels, io, compiler, backends).  Every function is
static in one translation unit, so a file can only call what an earlier
file defines, unless something declares it ahead.  This check keeps it so:

  1. no file refers to a tc__/tc_ function that a later file defines;
  2. no file but src/internal.h declares a function another file defines;
  3. no stage calls a public op entry point (tc_*_at) of another file: the
     library's own calls go through the dispatcher (io/ is a client of the
     public API, like a user's code, and may);
  4. src/internal.h declares every tc__ function a file uses from another
     (those of runtime/platform.c, which precedes it, are named in its
     comment), and nothing else.

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


def strip(text):
    """Comments, string literals and macro definitions blanked (line numbers
    kept): a macro's body is checked where it is expanded."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    text = re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', blank, text, flags=re.S)
    return re.sub(r"^[ \t]*#[ \t]*define\b(?:[^\n]*\\\n)*[^\n]*", blank, text, flags=re.M)


src = {f: strip(open(f).read()) for f in order if os.path.exists(f)}

# Definitions: a function name followed by its parameter list and a body.
DEF = re.compile(r"^(?:TC__FN|TCDEF|static)\b[^;{}()]*?\b(tc_[A-Za-z0-9_]+)\s*\([^;{}]*?\)\s*"
                 r"(?:TC__PRINTF\([^)]*\)\s*)?\{", re.M | re.S)
PROTO = re.compile(r"^(?:TC__FN|static)\b[^;{}()=]*?\b(tc__[A-Za-z0-9_]+)\s*\([^;{}]*?\)\s*"
                   r"(?:TC__PRINTF\([^)]*\)\s*)?;", re.M | re.S)
defs, public = {}, set()
for f in order:
    for m in DEF.finditer(src.get(f, "")):
        defs.setdefault(m.group(1), f)
        if m.group(0).startswith("TCDEF"):
            public.add(m.group(1))


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
        if not d or d == f:
            continue
        if pos[d] > pos[f]:
            problems.append("%s:%d: refers to %s, defined by the later %s" % (f, line_of(text, m.start()), name, d))
        elif (name in public and name.endswith("_at") and not f.startswith("src/io/")
              and re.match(r"\s*\(", text[m.end():])):
            problems.append("%s:%d: calls the public entry point %s (%s): use the dispatcher's internals"
                            % (f, line_of(text, m.start()), name, d))
    for m in PROTO.finditer(text):
        d = defs.get(m.group(1))
        if d and d != f:
            problems.append("%s:%d: declares %s of %s (cross-stage declarations belong in src/internal.h)"
                            % (f, line_of(text, m.start()), m.group(1), d))

internal = open("src/internal.h").read() if os.path.exists("src/internal.h") else ""
declared = set(m.group(1) for m in PROTO.finditer(strip(internal)))
named = set(re.findall(r"\b(tc__[A-Za-z0-9_]+)\b", internal)) - declared
crossed = set()
for f, text in src.items():
    for m in re.finditer(r"\b(tc__[A-Za-z0-9_]+)\b", text):
        d = defs.get(m.group(1))
        if d and d != f and f != "src/internal.h":
            crossed.add(m.group(1))
for n in sorted(crossed - declared):
    if not (defs[n] == "src/runtime/platform.c" and n in named):
        problems.append("src/internal.h: %s (%s) is used by another file but not declared" % (n, defs[n]))
for n in sorted(declared - crossed):
    problems.append("src/internal.h: declares %s, which no other file uses" % n)

for p in problems:
    print(p)
print("layers: %d files in pipeline order, %d violations" % (len(src), len(problems)))
sys.exit(1 if problems else 0)
