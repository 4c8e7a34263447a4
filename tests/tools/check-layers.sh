#!/bin/sh
# check-layers.sh [SRCDIR]: checks the include graph of core/, cli/, server/
# and api/ against the folder layers of core/Makemodule.am:
#   util < trace < sym < {profile, go, py} < {flow, sample} < tasks < recon < timeline < export
# then the front ends cli/ and server/+api/ on top of all of core.
# A file may include files of its own folder and of the folders below it; core
# never includes a front end; cli and server/api never include each other;
# api does not include server/worker.h (the job pool). Includes of core are
# spelled from core/ ("trace/trace.h"). Any include cycle between files fails.
# Prints FAIL: layers: ... per violation, else
#   PASS: layers: N files, N includes, N levels
# (levels: the longest include chain, in files). Exit status 1 on failure.
src=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
if ! command -v python3 >/dev/null 2>&1; then
	echo "SKIP: layers: python3 not installed"
	exit 77
fi
exec python3 - "$src" <<'EOF'
import os
import re
import sys

src = sys.argv[1]
# Each folder and the folders it sits directly on; it may include their closure.
SITS_ON = {
    "util": [],
    "trace": ["util"],
    "sym": ["trace"],
    "profile": ["sym"],
    "go": ["sym"],
    "py": ["sym"],
    "flow": ["profile"],
    "sample": ["profile"],
    "tasks": ["flow"],
    "recon": ["tasks", "sample", "py"],
    "timeline": ["recon", "go"],
    "export": ["timeline"],
    "cli": ["export"],
    "server": ["export", "api"],
    "api": ["export", "server"],
}
# Include paths of each front end (core's is core/ alone; config.h is generated).
IPATH = {"cli": ["core", "cli"], "server": ["core", "server", "api"],
         "api": ["core", "server", "api"]}
GENERATED = {"config.h"}
FORBIDDEN = {("api", "server/worker.h")}
# Known exceptions, each with the issue that removes it.
KNOWN = set()


def closure(f, seen=None):
    seen = set() if seen is None else seen
    for g in SITS_ON[f]:
        if g not in seen:
            seen.add(g)
            closure(g, seen)
    return seen


ALLOWED = {f: closure(f) | {f} for f in SITS_ON}


def folder(path):
    parts = path.split("/")
    return parts[1] if parts[0] == "core" else parts[0]


files = []
for root in ("core", "cli", "server", "api"):
    for d, _, names in os.walk(os.path.join(src, root)):
        for n in sorted(names):
            if n.endswith((".c", ".h")):
                files.append(os.path.relpath(os.path.join(d, n), src))
files.sort()
inc_re = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
fails = []
graph = {f: [] for f in files}
nincl = 0
for f in files:
    top = f.split("/")[0]
    paths = [os.path.dirname(f)] + IPATH.get(top, ["core"])
    with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            m = inc_re.match(line)
            if not m:
                continue
            name = m.group(1)
            if name in GENERATED:
                continue
            target = None
            for p in paths:
                cand = os.path.normpath(os.path.join(p, name))
                if cand in graph:
                    target = cand
                    break
            where = "%s:%d" % (f, lineno)
            if target is None:
                other = [r + "/" + name for r in ("cli", "server", "api") if r + "/" + name in graph]
                if other:
                    fails.append("%s: %s/ includes %s (%s/ is not below it)"
                                 % (where, folder(f), other[0], folder(other[0])))
                else:
                    fails.append("%s includes \"%s\", not on its include path" % (where, name))
                continue
            nincl += 1
            graph[f].append(target)
            if target.startswith("core/") and name != target[len("core/"):]:
                fails.append("%s includes \"%s\", spell it \"%s\"" % (where, name, target[len("core/"):]))
            a, b = folder(f), folder(target)
            if b not in ALLOWED.get(a, {a}):
                fails.append("%s: %s/ includes %s (%s/ is not below it)" % (where, a, target, b))
            elif (a, target) in FORBIDDEN:
                if (f, target) in KNOWN:
                    print("known exception: %s includes %s" % (f, target))
                else:
                    fails.append("%s: %s/ includes %s" % (where, a, target))

# Cycles between files (Tarjan's strongly connected components).
index, low, onstack, stack, sccs = {}, {}, set(), [], []
sys.setrecursionlimit(10000)


def strong(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    onstack.add(v)
    for w in graph[v]:
        if w not in index:
            strong(w)
            low[v] = min(low[v], low[w])
        elif w in onstack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            onstack.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1 or v in graph[v]:
            sccs.append(sorted(comp))


for v in files:
    if v not in index:
        strong(v)
for comp in sccs:
    fails.append("include cycle between " + " ".join(comp))

for msg in fails:
    print("FAIL: layers: " + msg)
if fails:
    sys.exit(1)

depth = {}


def longest(v):
    if v not in depth:
        depth[v] = 1 + max((longest(w) for w in graph[v]), default=0)
    return depth[v]


levels = max((longest(v) for v in files), default=0)
print("PASS: layers: %d files, %d includes, %d levels" % (len(files), nincl, levels))
EOF
