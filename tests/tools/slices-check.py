#!/usr/bin/env python3
"""The stack slices of a window, computed from a Perfetto (Chrome JSON)
export, against GET /jobs/{id}/slices (api/api_slices.h).

  slices-check.py PERFETTO.json API.json...

Truth: every B/E pair of the export (written with --min-duration 0: every
frame longer than 0) is a slice (hart = tid - 1, depth = how many are open
under it); cut to the API document's window [from, to), those longer than 0
there and at least its min_duration are the slices the API must give, with
the same names. With a by=process document as well (API-p.json beside
API.json): its tracks hold the same slices, each under the process of its
bottom (depth 0) slice. Prints a line per document: OK and the counts, or
DIFF and what differs (exit 1 if any differs)."""
import json
import os
import sys
from decimal import Decimal


def ns(ts):
    return int(Decimal(ts) * 1000)


def truth(path):
    doc = json.load(open(path), parse_float=str, parse_int=str)
    open_, out = {}, []
    for e in doc["traceEvents"]:
        if e.get("ph") not in ("B", "E") or int(e["pid"]) != 1:
            continue
        h = int(e["tid"]) - 1
        st = open_.setdefault(h, [])
        if e["ph"] == "B":
            st.append((ns(e["ts"]), e["name"], len(st)))
        else:
            t0, name, d = st.pop()
            assert name == e["name"], (name, e["name"])
            out.append((h, t0, ns(e["ts"]), d, name))
    return out


def window(sl, a, b, m):
    got = []
    for h, s, e, d, name in sl:
        s, e = max(s, a), min(e, b)
        if e > s and e - s >= m:
            got.append((h, s, e, d, name))
    return sorted(got)


def api_slices(doc):
    fr = doc["frames"]
    return sorted((t["hart"], s, e, d, fr[f]["name"]) for t in doc["tracks"]
                  for s, e, d, f in t["slices"])


def check(want_all, path):
    api = json.load(open(path))
    if "tracks" not in api:
        print("DIFF: %s: not a slices document: %s" % (os.path.basename(path), str(api)[:200]))
        return 1
    a = api["from"]
    b = api["to"] if api["to"] is not None else 1 << 64
    want = window(want_all, a, b, api["min_duration"])
    got = api_slices(api)
    bad = []
    if got != want:
        ws, gs = set(want), set(got)
        bad.append("%d slices, want %d; missing %s; extra %s" % (
            len(got), len(want), sorted(ws - gs)[:3], sorted(gs - ws)[:3]))
    if api["slices"] != len(got):
        bad.append("\"slices\": %d for %d listed" % (api["slices"], len(got)))
    # hidden: the slices that met the window but were too short there
    short = len(window(want_all, a, b, 1)) - len(want)
    if api["hidden"] != short:
        bad.append("hidden %d, want %d" % (api["hidden"], short))
    nproc = 0
    bypath = path[:-5] + "-p.json"
    if os.path.exists(bypath):
        bp = json.load(open(bypath))
        if api_slices(bp) != got:
            bad.append("by=process: not the same slices")
        for t in bp["tracks"]:
            roots = {bp["frames"][f]["name"] for s, e, d, f in t["slices"] if d == 0}
            if len(roots) > 1:
                bad.append("track of %s on hart %d: bottoms %s" % (
                    t.get("comm"), t["hart"], sorted(roots)[:3]))
            root = next(iter(roots)) if roots else None
            if root and t["process"] is not None and (
                    t["comm"] not in root or (t["pid"] >= 0 and str(t["pid"]) not in root)):
                bad.append("track of %s (pid %s) under bottom %s" % (t["comm"], t["pid"], root))
            # nested: every slice at depth d > 0 lies in one of depth d - 1 of its track
            nproc += t["process"] is not None
        keys = [(t["hart"], t["process"]) for t in bp["tracks"]]
        if len(set(keys)) != len(keys):
            bad.append("by=process: a (hart, process) twice")
    name = os.path.basename(path)
    if bad:
        print("DIFF: %s: %s" % (name, "; ".join(bad)))
        return 1
    print("OK: %s: %d slices, %d hidden, %d harts, %d process tracks" % (
        name, len(got), short, len({h for h, *_ in got}), nproc))
    return 0


def main():
    want_all = truth(sys.argv[1])
    return max(check(want_all, p) for p in sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
