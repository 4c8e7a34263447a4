#!/bin/sh
# test_export_axis.sh: one time axis across the exports of one job (issue
# 19): speedscope, Perfetto JSON, Perfetto protobuf and the timeline keep
# time on the job's axis, the trace's cycles when it has them, else the
# trace's record index (both harts of a merged trace on one axis), absolute,
# whatever the metric. The same event is at the same time in each file:
# - every frame's open and close in the speedscope file are in the Perfetto
#   JSON at the same time on the same hart (but for frames that last no
#   time, which Perfetto leaves out), and the other way round;
# - the protobuf's slices (name, start, end) are the JSON's;
# - the timeline's user/kernel boundaries per hart are exactly the times at
#   which the Perfetto JSON's top frame changes between a kernel function and
#   anything else (the timeline's rule), and its intervals lie within the
#   hart's first and last event;
# - with --metric instructions on a trace with cycles the files are the same
#   as with --metric cycles.
# The files are read by tests/tools/export-check.py's readers and by plain
# json here, none of it oobprof's code.
set -u
T=test_export_axis
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
CLI=$OOB_BUILDDIR/oobprof
G=$OOB_BUILDDIR/tests/gen
W=$OOB_BUILDDIR/tests/out/export_axis
rm -rf "$W" && mkdir -p "$W"
[ -x "$CLI" ] || {
	echo "SKIP: $T: all: oobprof not built"
	exit 0
}
n=0
# label axis trace elf-args...
one() {
	label=$1 axis=$2 trace=$3
	shift 3
	[ -s "$trace" ] || return 0
	n=$((n + 1))
	for f in speedscope perfetto perfetto-pb; do
		"$CLI" export --to $f "$@" "$trace" -o "$W/$label.$f" >"$W/$label.$f.err" 2>&1 || {
			echo "FAIL: $T: $label: export $f: $(head -c 300 "$W/$label.$f.err")"
			return 0
		}
	done
	"$CLI" timeline "$@" "$trace" >"$W/$label.timeline" 2>"$W/$label.timeline.err" || {
		echo "FAIL: $T: $label: timeline: $(head -c 300 "$W/$label.timeline.err")"
		return 0
	}
	if [ "$axis" = cycles ]; then
		"$CLI" export --to speedscope --metric cycles "$@" "$trace" -o "$W/$label.cyc.speedscope" 2>/dev/null
		"$CLI" export --to perfetto --metric cycles "$@" "$trace" -o "$W/$label.cyc.perfetto" 2>/dev/null
	fi
	python3 - "$T" "$label" "$axis" "$W/$label" "$OOB_SRCDIR/tests/tools/export-check.py" <<'PY'
import collections, filecmp, importlib.util, json, os, re, sys
T, label, axis, base, checker = sys.argv[1:]
spec = importlib.util.spec_from_file_location("export_check", checker)
ec = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ec)

def check(ok, case, figs):
    print("%s: %s: %s: %s (%s)" % ("PASS" if ok else "FAIL", T, label, case, figs))

# speedscope: per hart, (time, O/C, name); frames that last no time apart
ss = json.load(open(base + ".speedscope"))
frames = [f["name"] for f in ss["shared"]["frames"]]
ss_ev, ss_zero, ss_span = {}, collections.Counter(), {}
for p in ss["profiles"]:
    h = int(re.match(r"hart (\d+)", p["name"]).group(1))
    ev, stack = [], []
    for e in p["events"]:
        if e["type"] == "O":
            stack.append((frames[e["frame"]], e["at"], len(ev)))
            ev.append([e["at"], "O", frames[e["frame"]]])
        else:
            name, t0, i = stack.pop()
            if t0 == e["at"]:
                ev[i] = None
                ss_zero[h] += 1
            else:
                ev.append([e["at"], "C", name])
    ss_ev[h] = collections.Counter(tuple(x) for x in ev if x)
    ss_span[h] = (p["startValue"], p["endValue"])
    unit = p["name"]

# Perfetto JSON: per hart (tid - 1), the same, and the kind of each frame
pj = json.load(open(base + ".perfetto"))
pj_ev, cat = collections.defaultdict(list), {}
for e in pj["traceEvents"]:
    if e["ph"] in ("B", "E"):
        t = int(round(float(e["ts"]) * 1000))
        pj_ev[e["tid"] - 1].append((t, "O" if e["ph"] == "B" else "C", e["name"]))
        cat[e["name"]] = e.get("cat")
bad = []
for h in sorted(set(ss_ev) | set(pj_ev)):
    a, b = ss_ev.get(h, collections.Counter()), collections.Counter(pj_ev.get(h, []))
    if a != b:
        d = list((a - b).items())[:2] + list((b - a).items())[:2]
        bad.append("hart %d: %d events differ, e.g. %s" % (h, sum(((a - b) + (b - a)).values()), d))
nev = sum(sum(c.values()) for c in ss_ev.values())
check(not bad and nev, "speedscope and Perfetto JSON: every frame opens and closes at the same time",
      "; ".join(bad) if bad else "%s: %d events on %d harts, %d zero-length frames only in speedscope" %
      (unit, nev, len(ss_ev), sum(ss_zero.values())))

# Perfetto protobuf: the JSON's slices
tr = ec.PbTrace(base + ".perfetto-pb")
def slices(events):
    out, stack = collections.Counter(), []
    for t, _, kind, name in sorted(events, key=lambda e: (e[0], e[1])):
        if kind == "O":
            stack.append((name, t))
        else:
            name, t0 = stack.pop()
            out[(name, t0, t)] += 1
    return out
pb = collections.Counter()
for ev in tr.events.values():
    pb += slices(ev)
js = collections.Counter()
for h, ev in pj_ev.items():
    js += slices([(t, i, k, nm) for i, (t, k, nm) in enumerate(ev)])
check(pb == js and pb, "Perfetto protobuf: the JSON's slices at the same times",
      "%d slices; %d differ" % (sum(pb.values()), sum(((pb - js) + (js - pb)).values())))

# the timeline: user/kernel boundaries per hart
tl = json.load(open(base + ".timeline"))
want_axis = "cycles" if axis == "cycles" else "records"
bad = [] if tl["axis"] == want_axis else ["axis %s, want %s" % (tl["axis"], want_axis)]
nb = 0
for hd in tl["harts"]:
    h = hd["hart"]
    iv = [x for x in hd["intervals"] if x[1] > x[0]]  # no time, no state
    got = [iv[i][0] for i in range(1, len(iv)) if iv[i][2] != iv[i - 1][2]]
    ev = sorted(pj_ev.get(h, []), key=lambda e: e[0])
    stack, priv, want, i = [], None, [], 0  # None: before the first event
    while i < len(ev):
        t = ev[i][0]
        while i < len(ev) and ev[i][0] == t:
            _, k, nm = ev[i]
            if k == "O":
                stack.append(nm)
            else:
                stack.remove(nm) if stack[-1] != nm else stack.pop()
            i += 1
        p = "kernel" if stack and cat.get(stack[-1]) in ("kernel", "firmware") else "user"
        if priv is not None and p != priv and i < len(ev):
            want.append(t)
        priv = p
    if got != want:
        extra, missing = sorted(set(got) - set(want)), sorted(set(want) - set(got))
        bad.append("hart %d: %d boundaries, Perfetto %d; only timeline %s, only Perfetto %s" %
                   (h, len(got), len(want), extra[:3], missing[:3]))
    lo, hi = ss_span.get(h, (None, None))
    if iv and lo is not None and (iv[0][0] < lo or iv[-1][1] > hi):
        bad.append("hart %d: intervals [%d, %d) outside the events' [%d, %d]" % (h, iv[0][0], iv[-1][1], lo, hi))
    nb += len(got)
check(not bad, "timeline: its user/kernel boundaries are the Perfetto frames' times",
      "; ".join(bad[:3]) if bad else "%s axis, %d boundaries on %d harts" % (tl["axis"], nb, len(tl["harts"])))

if axis == "cycles":
    same = filecmp.cmp(base + ".speedscope", base + ".cyc.speedscope", shallow=False) and \
        filecmp.cmp(base + ".perfetto", base + ".cyc.perfetto", shallow=False)
    check(same, "the metric weighs, it does not move the time axis", "speedscope and Perfetto JSON byte-equal "
          "with --metric instructions and --metric cycles" if same else "files differ")
PY
}
one spike-2core records "$G/readers/spike-2core.log"
# a Linux boot under Spike, kernel and user: its first 300,000 records
S=${OOB_SHARED:-$OOB_SRCDIR/../shared}/fixtures/spike
if [ -s "$G/readers/spike.log" ] && [ -s "$G/vmlinux" ] && [ -s "$S/init" ]; then
	head -n 300000 "$G/readers/spike.log" >"$W/spike300k.log"
	one spike-boot records "$W/spike300k.log" --elf "$G/vmlinux" --elf "$S/init" --elf "$S/prog"
fi
one tracerv cycles "$G/readers/tv-c-v63-w1.bin" --elf "$G/readers/rdprog"
one mixed records "$G/progs/mixed.oobt" --elf "$G/progs/mixed"
[ "$n" -gt 0 ] || echo "SKIP: $T: all: no generated traces (tests/gen/readers, tests/gen/progs)"
