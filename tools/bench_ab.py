#!/usr/bin/env python3
"""Before/after benchmark: the bench built against two revisions' tcompile.h,
run alternately (A, B, A, B, ...), so that a shared host's drift hits both
alike; prints each row's median ms per side and the ratio.

    python3 tools/bench_ab.py [--rounds N] [--threads T] [--under-load] OLD [NEW] -- WORKLOAD...

OLD and NEW are git revisions (NEW defaults to the work tree's tcompile.h).
Both are built from the work tree's bench/bench.c (the same measuring code);
where it does not build against OLD's header, OLD's own bench.c is used.
Each process times its candidates interleaved as usual; the medians here
are over the rounds' per-process medians.  Results: build/bench_ab/.
"""
import csv
import os
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "build", "bench_ab")


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, cwd=ROOT, **kw)


def build(rev, name):
    """The bench against rev's header (None: the work tree's); its path."""
    src = os.path.join(OUT, name)
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(os.path.join(src, "bench"))
    if rev is None:
        shutil.copy(os.path.join(ROOT, "tcompile.h"), src)
    else:
        with open(os.path.join(src, "tcompile.h"), "wb") as f:
            f.write(subprocess.run(["git", "show", rev + ":tcompile.h"], cwd=ROOT, check=True,
                                   capture_output=True).stdout)
    for f in ("bench.c", "ref_isa.h"):
        shutil.copy(os.path.join(ROOT, "bench", f), os.path.join(src, "bench"))
    exe = os.path.join(OUT, name + ".bin")
    cc = os.environ.get("CC", "cc")
    cmd = "%s -std=c99 -O2 -I%s %s/bench/bench.c -o %s -lm -lpthread -ldl" % (cc, src, src, exe)
    if sh(cmd, capture_output=True).returncode != 0:
        if rev is None:
            sys.exit("bench_ab: the work tree's bench does not build")
        for f in ("bench.c", "ref_isa.h"):
            with open(os.path.join(src, "bench", f), "wb") as fp:
                fp.write(subprocess.run(["git", "show", "%s:bench/%s" % (rev, f)], cwd=ROOT, check=True,
                                        capture_output=True).stdout)
        if sh(cmd, capture_output=True).returncode != 0:
            sys.exit("bench_ab: the bench does not build against " + rev)
        print("bench_ab: %s built with its own bench.c" % rev)
    return exe


def main():
    args = sys.argv[1:]
    rounds, threads, extra = 5, 2, []
    while args and args[0].startswith("--"):
        a = args.pop(0)
        if a == "--rounds":
            rounds = int(args.pop(0))
        elif a == "--threads":
            threads = int(args.pop(0))
        elif a == "--under-load":
            extra.append("--tune-under-load")
        elif a == "--":
            break
        else:
            sys.exit(__doc__)
    if "--" in args:
        i = args.index("--")
        revs, work = args[:i], args[i + 1:]
    else:
        revs, work = args[:1], args[1:]
    if not revs or not work:
        sys.exit(__doc__)
    os.makedirs(OUT, exist_ok=True)
    sides = [("A", build(revs[0], "A")), ("B", build(revs[1] if len(revs) > 1 else None, "B"))]
    ms = {}
    for r in range(rounds):
        for side, exe in (sides if r % 2 == 0 else sides[::-1]):
            out = os.path.join(OUT, "%s_%d.csv" % (side, r))
            # each side's max-autotune choices in its own cache (bench/out/tune-cache under its cwd)
            cwd = os.path.join(OUT, "run-" + side)
            os.makedirs(cwd, exist_ok=True)
            p = subprocess.run([exe, "-t", str(threads), "-o", out] + extra + work, cwd=cwd,
                               capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit("bench_ab: %s failed: %s" % (side, p.stderr[-2000:]))
            with open(out) as f:
                for row in csv.DictReader(f):
                    key = (row["workload"], int(row["batch"]), row["mode"])
                    ms.setdefault(key, {}).setdefault(side, []).append(float(row["ms"]))
    print("A = %s, B = %s; %d rounds alternated, %d threads; median of per-run medians (ms)" %
          (revs[0], revs[1] if len(revs) > 1 else "work tree", rounds, threads))
    print("%-18s %5s %-16s %11s %11s %8s" % ("workload", "batch", "mode", "A ms", "B ms", "A/B"))
    for key in sorted(ms, key=lambda k: (k[0], k[1], k[2])):
        a, b = ms[key].get("A"), ms[key].get("B")
        ma = statistics.median(a) if a else float("nan")
        mb = statistics.median(b) if b else float("nan")
        print("%-18s %5d %-16s %11.5f %11.5f %7.2fx" % (key[0], key[1], key[2], ma, mb, ma / mb if mb else 0))


if __name__ == "__main__":
    main()
