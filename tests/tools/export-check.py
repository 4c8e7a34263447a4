#!/usr/bin/env python3
"""export-check.py: an independent reader of oobprof's exports, for the tests.

    export-check.py speedscope|perfetto|pprof|folded FILE TOP.json METRIC [--min-ns N]
                    [--same-as FMT:FILE]
    export-check.py perfetto-pb FILE TOP.json METRIC [--min-ns N] [--json PERFETTO.json]
                    [--processes PROCESSES.json] [--same-as FMT:FILE]
    export-check.py schema FILE SCHEMA.json
    export-check.py pprof-top PPROF_TOP.txt TOP.json METRIC
    export-check.py pprof-harts FILE
    export-check.py pprof-flat-same FILE OTHER

Reads FILE with nothing but the standard library (gzip, json, a protobuf
varint decoder written here), rebuilds per-function self and total weights
from it (totals count recursion once, as `oobprof top` does), and compares
them with the rows of `oobprof top --json --metric METRIC` (TOP.json).
Functions that share a name are merged on both sides; their totals are
compared only where a name is unique (a merged total would count overlaps).
Time-keeping formats are also checked for proper nesting per hart/thread.

perfetto-pb (Perfetto's gzipped protobuf Trace) is decoded field by field
with the numbers of Perfetto's .proto files: every packet on one sequence
whose first packet clears the incremental state, every interned id defined
once before it is used, every event on a described track, slices properly
nested per track. With --json, its per-function totals must equal those of
the JSON export of the same trace; with --processes (`oobprof processes
--json`), every guest process must be a Perfetto process and thread of its
pid and comm, whose slices all lie under that process's root frame.

pprof-harts prints, as JSON, each sample type's sum per "hart" label, the
samples without exactly one hart label, and how many stacks (location lists)
are samples on more than one hart. pprof-flat-same: every sample type's flat
weight per function (the outermost line of the leaf location: the calling
context's function, whether the location is a pc or a function) is the same
in both profiles, e.g. one at the exact pc and per hart and one per calling
context.

TOP.json "-": no comparison with `oobprof top` (times on the merged record
axis of several harts, which no per-function count equals). --same-as: the
per-function totals must equal those of another export of the same job
(FMT speedscope or perfetto), which keeps time on the same axis.

Prints "ok: ..." and exits 0, or prints what differs and exits 1.
"""
import decimal
import gzip
import json
import sys
from collections import defaultdict


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class Weights:
    """Self and total per function name, from intervals or stacks."""

    def __init__(self):
        self.self = defaultdict(int)
        self.total = defaultdict(int)

    def stack(self, names, w):
        """One stack (root first) with weight w."""
        if not names:
            return
        self.self[names[-1]] += w
        for n in set(names):
            self.total[n] += w


def replay_intervals(events, where, w):
    """events: (kind 'O'/'C', name, t) in file order; checks nesting."""
    stack, last = [], None
    for kind, name, t in events:
        if last is not None and t < last:
            fail(f"{where}: time goes back ({t} after {last})")
        if stack:
            w.stack([s[0] for s in stack], t - last)
        last = t
        if kind == "O":
            stack.append((name, t))
        else:
            if not stack or stack[-1][0] != name:
                fail(f"{where}: close of {name!r} at {t} does not match the top "
                     f"({stack[-1][0] if stack else 'empty stack'!r})")
            stack.pop()
    if stack:
        fail(f"{where}: {len(stack)} frames left open")


def read_speedscope(path, metric):
    ss = json.load(open(path))
    frames = [f["name"] for f in ss["shared"]["frames"]]
    w = Weights()
    profiles = ss["profiles"]
    if not profiles:
        fail("speedscope: no profiles")
    if profiles[0]["type"] == "sampled":
        chosen = [p for p in profiles if p["name"] == metric]
        if len(chosen) != 1:
            fail(f"speedscope: no sampled profile named {metric}")
        p = chosen[0]
        if len(p["samples"]) != len(p["weights"]):
            fail("speedscope: samples and weights differ in length")
        for s, wt in zip(p["samples"], p["weights"]):
            w.stack([frames[i] for i in s], wt)
        if p["endValue"] - p["startValue"] != sum(p["weights"]):
            fail("speedscope: endValue - startValue is not the sum of weights")
        return w, "sampled"
    for p in profiles:
        if p["type"] != "evented":
            fail("speedscope: evented and sampled profiles mixed")
        ev = [(e["type"], frames[e["frame"]], e["at"]) for e in p["events"]]
        for e in p["events"]:
            if not isinstance(e["at"], int):
                fail("speedscope: a non-integer time")
        if ev and (ev[0][2] < p["startValue"] or ev[-1][2] > p["endValue"]):
            fail(f"{p['name']}: events outside startValue..endValue")
        replay_intervals(ev, p["name"], w)
    return w, "evented"


def read_perfetto(path, min_ns):
    doc = json.load(open(path), parse_float=decimal.Decimal)
    if "displayTimeUnit" in doc:
        fail("perfetto: displayTimeUnit present")
    per_tid = defaultdict(list)
    names = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "M":
            if e["name"] == "thread_name":
                names[e["tid"]] = e["args"]["name"]
            continue
        if e["ph"] not in ("B", "E"):
            fail(f"perfetto: unexpected phase {e['ph']}")
        ts = decimal.Decimal(e["ts"]) * 1000
        if ts != ts.to_integral_value():
            fail(f"perfetto: ts {e['ts']} is not a whole number of ns")
        per_tid[(e["pid"], e["tid"])].append(("O" if e["ph"] == "B" else "C", e["name"], int(ts)))
    w = Weights()
    shortest = None
    for key, ev in per_tid.items():
        if key[1] not in names:
            fail(f"perfetto: tid {key[1]} has no thread_name")
        replay_intervals(ev, f"tid {key[1]}", w)
        opens = []
        for kind, _, t in ev:
            if kind == "O":
                opens.append(t)
            else:
                d = t - opens.pop()
                shortest = d if shortest is None else min(shortest, d)
    if shortest is not None and shortest < max(min_ns, 1):
        fail(f"perfetto: a slice of {shortest} ns (minimum {max(min_ns, 1)})")
    return w, len(per_tid)


# ---- protobuf, just enough for profile.proto ----

def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def fields(b):
    # one-byte varints (most keys, lengths and small values) read inline:
    # millions of messages in a per-pc profile
    i, end, out = 0, len(b), []
    while i < end:
        key = b[i]
        if key < 0x80:
            i += 1
        else:
            key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt > 2 or wt == 1:
            fail(f"protobuf: wire type {wt}")
        v = b[i]
        if v < 0x80:
            i += 1
        else:
            v, i = varint(b, i)
        if wt == 2:
            v, i = b[i:i + v], i + v
            if i > end:
                fail(f"protobuf: field {f} runs past its message")
        out.append((f, wt, v))
    return out


def packed(v, wt):
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


_labels = {}


def label(b):
    """A Label message as {field: value}, decoded once per distinct bytes
    (millions of samples share a few labels)."""
    d = _labels.get(b)
    if d is None:
        d = _labels[b] = dict((h, y) for h, _, y in fields(b))
    return d


def process_root(strings, labels):
    """The process root frame a sample's labels stand for, as the other
    exports name it: "comm pid", the task's name without a pid, the comm
    alone without either; none without labels."""
    lb = {}
    for x in labels:
        key = strings[x.get(1, 0)]
        lb[key] = strings[x[2]] if 2 in x else x.get(3, 0)
    if "pid" in lb:
        return ["%s %d" % (lb.get("comm", ""), lb["pid"])]
    if "task" in lb:
        return [lb["task"]]
    return [lb["comm"]] if "comm" in lb else []


def read_pprof(path, metric):
    raw = gzip.open(path).read()
    strings, samples, locs, funcs, types = [], [], {}, {}, []
    default = None
    for f, wt, v in fields(raw):
        if f == 6:
            strings.append(v.decode())
        elif f == 1:
            d = dict((g, x) for g, _, x in fields(v))
            types.append(d.get(1, 0))
        elif f == 2:
            ids, vals, labels = [], [], []
            for g, w2, x in fields(v):
                if g == 1:
                    ids += packed(x, w2)
                elif g == 2:
                    vals += packed(x, w2)
                elif g == 3:
                    labels.append(label(x))
            samples.append((ids, vals, labels))
        elif f == 4:
            d = fields(v)
            lid = [x for g, _, x in d if g == 1][0]
            lines = [dict((g, y) for g, _, y in fields(x)) for g, _, x in d if g == 4]
            locs[lid] = lines[0][1]
        elif f == 5:
            d = dict((g, x) for g, _, x in fields(v))
            funcs[d[1]] = d.get(2, 0)
        elif f == 14:
            default = v
    if not strings or strings[0] != "":
        fail("pprof: string_table[0] is not empty")
    if 0 in locs or 0 in funcs:
        fail("pprof: an id 0")
    tnames = [strings[t] for t in types]
    if metric not in tnames:
        fail(f"pprof: no sample type {metric} (has {tnames})")
    if default is not None and strings[default] not in tnames:
        fail("pprof: default_sample_type names no sample type")
    k = tnames.index(metric)
    w = Weights()
    for ids, vals, labels in samples:
        if len(vals) != len(tnames):
            fail("pprof: a sample with the wrong number of values")
        names = [strings[funcs[locs[i]]] for i in reversed(ids)]  # leaf first in the file
        w.stack(process_root(strings, labels) + names, vals[k])
    return w, strings[default] if default is not None else None


def pprof_harts(path):
    raw = gzip.open(path).read()
    strings, types, samples = [], [], []
    for f, wt, v in fields(raw):
        if f == 6:
            strings.append(v.decode())
        elif f == 1:
            types.append(dict((g, x) for g, _, x in fields(v)).get(1, 0))
        elif f == 2:
            # the location ids only as a key: their bytes, not decoded
            # (millions of samples of long stacks)
            ids, vals, labels = [], [], []
            for g, w2, x in fields(v):
                if g == 1:
                    ids.append(x)
                elif g == 2:
                    vals += packed(x, w2)
                elif g == 3:
                    labels.append(label(x))
            samples.append((tuple(ids), vals, labels))
    per_hart, bad, harts_of = {}, 0, {}
    for ids, vals, labels in samples:
        hs = [lb.get(3, 0) for lb in labels if strings[lb.get(1, 0)] == "hart"]
        if len(hs) != 1:
            bad += 1
            continue
        sums = per_hart.setdefault(str(hs[0]), [0] * len(types))
        for k, x in enumerate(vals):
            sums[k] += x
        harts_of.setdefault(ids, set()).add(hs[0])
    return {"types": [strings[t] for t in types], "per_hart": per_hart,
            "samples": len(samples), "unlabelled": bad,
            "split_stacks": sum(1 for h in harts_of.values() if len(h) > 1)}


def pprof_flat(path):
    raw = gzip.open(path).read()
    strings, types, samples, locs, funcs = [], [], [], {}, {}
    for f, wt, v in fields(raw):
        if f == 6:
            strings.append(v.decode())
        elif f == 1:
            types.append(dict((g, x) for g, _, x in fields(v)).get(1, 0))
        elif f == 2:
            leaf, vals = None, []
            for g, w2, x in fields(v):
                if g == 1 and leaf is None:  # the first id is the leaf's
                    leaf = varint(x, 0)[0] if w2 == 2 else x
                elif g == 2:
                    vals += packed(x, w2)
            samples.append((leaf, vals))
        elif f == 4:
            d = fields(v)
            lid = [x for g, _, x in d if g == 1][0]
            locs[lid] = [dict((g, y) for g, _, y in fields(x)) for g, _, x in d if g == 4][-1][1]
        elif f == 5:
            d = dict((g, x) for g, _, x in fields(v))
            funcs[d[1]] = d.get(2, 0)
    flat = {}
    for leaf, vals in samples:
        name = strings[funcs[locs[leaf]]]
        for k, x in enumerate(vals):
            key = (strings[types[k]], name)
            flat[key] = flat.get(key, 0) + x
    return dict((k, v) for k, v in flat.items() if v)


def pprof_flat_same(a, b):
    fa, fb = pprof_flat(a), pprof_flat(b)
    bad = sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k))
    for k in bad[:20]:
        print(f"  {k[0]} {k[1]}: {fa.get(k)} != {fb.get(k)}")
    if bad or not fa:
        fail(f"pprof: {len(bad)} of {len(fa)} flat weights differ")
    return len(fa)


# ---- Perfetto's protobuf trace ----
# Field numbers from Perfetto's protos/perfetto/trace/: trace.proto,
# trace_packet.proto, track_event/{track_event,track_descriptor,
# process_descriptor,thread_descriptor,debug_annotation}.proto,
# interned_data/interned_data.proto.

def one(fl, num, default=None):
    v = [x for f, _, x in fl if f == num]
    if len(v) > 1:
        fail(f"perfetto-pb: field {num} repeated")
    return v[0] if v else default


class PbTrace:
    def __init__(self, path):
        raw = gzip.open(path).read()
        self.tracks = {}     # uuid -> dict(pid, tid, name, process)
        self.events = defaultdict(list)  # uuid -> [(t, order, kind, name)]
        self.interned = defaultdict(dict)  # field -> iid -> value
        self.cats = defaultdict(set)       # name -> categories
        self.sources = {}    # name -> "file:line"
        self.packets = 0
        seq_started = False
        for n, (f, wt, pkt) in enumerate(fields(raw)):
            if f != 1 or wt != 2:
                fail(f"perfetto-pb: top-level field {f} is no Trace.packet")
            self.packets += 1
            p = fields(pkt)
            if one(p, 10) != 1:
                fail(f"perfetto-pb: packet {n} is not on sequence 1")
            flags = one(p, 13, 0)
            if flags & 1:
                if seq_started:
                    fail(f"perfetto-pb: packet {n} clears the state again")
                seq_started = True
            if not seq_started:
                fail(f"perfetto-pb: packet {n} before the state is cleared")
            idata = one(p, 12)
            if idata is not None:
                self.intern(fields(idata), n)
            td = one(p, 60)
            if td is not None:
                self.track(fields(td), n)
            te = one(p, 11)
            if te is not None:
                if not flags & 2:
                    fail(f"perfetto-pb: event packet {n} without SEQ_NEEDS_INCREMENTAL_STATE")
                if one(p, 8) is None:
                    fail(f"perfetto-pb: event packet {n} without a timestamp")
                self.event(fields(te), one(p, 8), n)

    def intern(self, fl, n):
        for f, _, v in fl:
            if f not in (1, 2, 3, 29):
                fail(f"perfetto-pb: unexpected InternedData field {f}")
            e = fields(v)
            iid, val = one(e, 1), one(e, 2)
            if not iid:
                fail(f"perfetto-pb: packet {n}: interned entry without iid")
            val = val.decode()
            if iid in self.interned[f] and self.interned[f][iid] != val:
                fail(f"perfetto-pb: iid {iid} of field {f} redefined")
            self.interned[f][iid] = val

    def resolve(self, field, iid, n):
        if iid not in self.interned[field]:
            fail(f"perfetto-pb: packet {n} uses iid {iid} of field {field}, not interned")
        return self.interned[field][iid]

    def track(self, fl, n):
        uuid = one(fl, 1)
        if not uuid or uuid in self.tracks:
            fail(f"perfetto-pb: packet {n}: track uuid {uuid} missing or described twice")
        proc, thr = one(fl, 3), one(fl, 4)
        if (proc is None) == (thr is None):
            fail(f"perfetto-pb: track {uuid} is not one process or one thread")
        d = fields(proc if proc is not None else thr)
        if one(d, 1) is None:
            fail(f"perfetto-pb: track {uuid} has no pid")
        if proc is not None:
            self.tracks[uuid] = dict(process=True, pid=one(d, 1), name=one(d, 6).decode())
        else:
            if one(d, 2) is None:
                fail(f"perfetto-pb: thread track {uuid} has no tid")
            self.tracks[uuid] = dict(process=False, pid=one(d, 1), tid=one(d, 2),
                                     name=one(d, 5).decode())

    def event(self, fl, ts, n):
        uuid, kind = one(fl, 11), one(fl, 9)
        if uuid not in self.tracks or self.tracks[uuid]["process"]:
            fail(f"perfetto-pb: packet {n}: event on track {uuid}, no described thread")
        if kind == 1:
            name = self.resolve(2, one(fl, 10), n)
            for c in [x for f, w2, v in fl if f == 3 for x in packed(v, w2)]:
                self.cats[name].add(self.resolve(1, c, n))
            for f, _, v in fl:
                if f == 4:
                    a = fields(v)
                    key = self.resolve(3, one(a, 1), n)
                    val = self.resolve(29, one(a, 17), n)
                    if key == "source":
                        self.sources[name] = val
            self.events[uuid].append((ts, n, "O", name))
        elif kind == 2:
            self.events[uuid].append((ts, n, "C", None))
        else:
            fail(f"perfetto-pb: packet {n}: event type {kind}")


def read_perfetto_pb(path, min_ns):
    """Per-function weights over every thread track, as Perfetto nests them
    (its events ordered by time, ties in file order)."""
    tr = PbTrace(path)
    w, shortest, outer = Weights(), None, {}
    for uuid, ev in tr.events.items():
        ev.sort(key=lambda e: (e[0], e[1]))
        stack, seq, roots = [], [], set()
        for t, _, kind, name in ev:
            if kind == "O":
                if not stack:
                    roots.add(name)
                stack.append((name, t))
                seq.append(("O", name, t))
            else:
                if not stack:
                    fail(f"perfetto-pb: track {uuid}: an END with no open slice at {t}")
                name, t0 = stack.pop()
                seq.append(("C", name, t))
                d = t - t0
                shortest = d if shortest is None else min(shortest, d)
        replay_intervals(seq, f"track {uuid} ({tr.tracks[uuid]['name']})", w)
        outer[uuid] = roots
    if shortest is not None and shortest < max(min_ns, 1):
        fail(f"perfetto-pb: a slice of {shortest} ns (minimum {max(min_ns, 1)})")
    return tr, w, outer


def check_processes(tr, outer, path):
    procs = json.load(open(path))["processes"]
    pb_procs = {u: t for u, t in tr.tracks.items() if t["process"]}
    threads = {(t["pid"], t["tid"]): (u, t) for u, t in tr.tracks.items() if not t["process"]}
    names = sorted(t["name"] for t in pb_procs.values())
    for pr in procs:
        if pr["comm"] not in names:
            fail(f"perfetto-pb: process {pr['pid']} {pr['comm']!r} is no Perfetto process")
        names.remove(pr["comm"])
        pid = pr["pid"]
        if pid < 0 or sum(1 for q in procs if q["pid"] == pid) > 1:
            continue
        if not any(t["pid"] == pid and t["name"] == pr["comm"] for t in pb_procs.values()):
            fail(f"perfetto-pb: no process of pid {pid} named {pr['comm']!r}")
        if (pid, pid) not in threads or threads[(pid, pid)][1]["name"] != pr["comm"]:
            fail(f"perfetto-pb: no thread {pid} named {pr['comm']!r}")
        roots = outer.get(threads[(pid, pid)][0], set())
        if len(roots) > 1:
            fail(f"perfetto-pb: thread {pid} holds the stacks of {sorted(roots)}")
        if roots and tr.cats[next(iter(roots))] != {"process"}:
            fail(f"perfetto-pb: thread {pid}'s outermost slice is no process frame")
    return len(procs)


def read_folded(path):
    w = Weights()
    for line in open(path):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        w.stack(stack.split(";"), int(n))
    return w


def compare(w, top_path, metric, totals=True, extra_ok=()):
    top = json.load(open(top_path))
    want_self, want_total, count = defaultdict(int), {}, defaultdict(int)
    for f in top["functions"]:
        want_self[f["name"]] += f["self_" + metric] if metric != "calls" else f["calls"]
        want_total[f["name"]] = f["total_" + metric] if metric != "calls" else None
        count[f["name"]] += 1
    bad = []
    for n in set(want_self) | set(w.self):
        if n in extra_ok and n not in want_self:
            continue
        if w.self.get(n, 0) != want_self.get(n, 0):
            bad.append(f"{n}: self {w.self.get(n, 0)} != {want_self.get(n, 0)}")
        if totals and count.get(n) == 1 and want_total[n] is not None and \
                w.total.get(n, 0) != want_total[n]:
            bad.append(f"{n}: total {w.total.get(n, 0)} != {want_total[n]}")
    if bad:
        for b in sorted(bad)[:20]:
            print("  " + b)
        fail(f"{len(bad)} of {len(want_self)} functions differ")
    return len(want_self)


def pprof_top(path, top_path, metric):
    """The text of `go tool pprof -top` against oobprof top's rows."""
    rows, seen = {}, False
    for line in open(path):
        f = line.split()
        if len(f) == 5 and f[0] == "flat" and f[3] == "cum":
            seen = True
            continue
        if seen and len(f) >= 6:
            name = line.split(None, 5)[5].strip()
            if name in rows:
                rows[name] = None  # pprof lists it twice: not comparable
            else:
                rows[name] = (int(f[0]), int(f[3]))
    if not seen:
        fail("pprof -top: no table in its output")
    top = json.load(open(top_path))
    count = defaultdict(int)
    for f in top["functions"]:
        count[f["name"]] += 1
    bad, n = [], 0
    for f in top["functions"]:
        if count[f["name"]] != 1 or rows.get(f["name"]) is None:
            continue
        flat, cum = rows[f["name"]]
        want_flat = f["calls"] if metric == "calls" else f["self_" + metric]
        if flat != want_flat or (metric != "calls" and cum != f["total_" + metric]):
            bad.append(f"{f['name']}: pprof {flat} {cum}, oobprof {want_flat} "
                       f"{f.get('total_' + metric)}")
        n += 1
    missing = [f["name"] for f in top["functions"]
               if count[f["name"]] == 1 and f["name"] not in rows and
               (f["calls"] if metric == "calls" else f["self_" + metric])]
    if bad or missing:
        for b in bad[:20]:
            print("  " + b)
        fail(f"{len(bad)} functions differ, {len(missing)} missing ({missing[:5]})")
    return n


def schema(path, schema_path):
    try:
        import jsonschema
    except ImportError:
        print("SKIP: python3-jsonschema is not installed")
        sys.exit(77)
    s = json.load(open(schema_path))
    jsonschema.validate(json.load(open(path)), s)


def same_as(w, a):
    """--same-as FMT:FILE: w's per-function totals equal that export's."""
    if "--same-as" not in a:
        return ""
    fmt, path = a[a.index("--same-as") + 1].split(":", 1)
    other = read_speedscope(path, "-")[0] if fmt == "speedscope" else read_perfetto(path, 0)[0]
    names = set(w.total) | set(other.total)
    bad = [n for n in names if w.total.get(n, 0) != other.total.get(n, 0) or
           w.self.get(n, 0) != other.self.get(n, 0)]
    for n in sorted(bad)[:20]:
        print(f"  {n}: self {w.self.get(n)} total {w.total.get(n)}, "
              f"{fmt} self {other.self.get(n)} total {other.total.get(n)}")
    if bad:
        fail(f"{len(bad)} of {len(names)} functions differ from the {fmt} export")
    return f", {len(names)} functions as the {fmt} export"


def main():
    a = sys.argv[1:]
    if a[0] == "pprof-top":
        n = pprof_top(a[1], a[2], a[3])
        print(f"ok: {n} functions as go tool pprof -top prints them")
        return
    if a[0] == "pprof-harts":
        print(json.dumps(pprof_harts(a[1]), sort_keys=True))
        return
    if a[0] == "pprof-flat-same":
        print(f"ok: {pprof_flat_same(a[1], a[2])} flat weights (type, function) equal")
        return
    if a[0] == "schema":
        schema(a[1], a[2])
        print("ok: valid")
        return
    fmt, path, top, metric = a[0], a[1], a[2], a[3]
    min_ns = int(a[a.index("--min-ns") + 1]) if "--min-ns" in a else 0
    if top == "-":
        compare_top = lambda w, *_, **__: len(w.total)  # noqa: E731
    else:
        compare_top = compare
    if fmt == "speedscope":
        w, form = read_speedscope(path, metric)
        n = compare_top(w, top, metric, extra_ok=("[unknown]",))
        print(f"ok: {form}, {n} functions{same_as(w, a)}")
    elif fmt == "perfetto":
        w, ntid = read_perfetto(path, min_ns)
        if min_ns == 0:
            n = compare_top(w, top, metric)
            print(f"ok: {ntid} threads, {n} functions{same_as(w, a)}")
        else:
            print(f"ok: {ntid} threads, nested, no slice under {min_ns} ns")
    elif fmt == "perfetto-pb":
        tr, w, outer = read_perfetto_pb(path, min_ns)
        msg = f"ok: {tr.packets} packets, {len(tr.events)} tracks with slices"
        if min_ns == 0:
            n = compare_top(w, top, metric)
            msg += f", {n} functions" + (" as top" if top != "-" else "") + same_as(w, a)
        if "--json" in a:
            wj, _ = read_perfetto(a[a.index("--json") + 1], min_ns)
            if wj.self != w.self or wj.total != w.total:
                bad = [n for n in set(wj.total) | set(w.total)
                       if wj.total.get(n) != w.total.get(n) or wj.self.get(n) != w.self.get(n)]
                for n in sorted(bad)[:20]:
                    print(f"  {n}: json self {wj.self.get(n)} total {wj.total.get(n)}, "
                          f"pb self {w.self.get(n)} total {w.total.get(n)}")
                fail(f"perfetto-pb: {len(bad)} functions differ from the JSON export")
            msg += f", {len(w.total)} functions as the JSON"
        if "--processes" in a:
            msg += f", {check_processes(tr, outer, a[a.index('--processes') + 1])} processes"
        print(msg)
    elif fmt == "pprof":
        w, default = read_pprof(path, metric)
        n = compare(w, top, metric, extra_ok=("[unknown]",))
        print(f"ok: default type {default}, {n} functions")
    elif fmt == "folded":
        w = read_folded(path)
        n = compare(w, top, metric, extra_ok=("[unknown]",))
        print(f"ok: {n} functions")
    else:
        fail("unknown format " + fmt)


if __name__ == "__main__":
    main()
