#!/bin/sh
# The timeline's level-of-detail summaries (results/<id>/events.lod,
# core/timeline/timeline_lod.h) answer GET /timeline?detail=buckets.
#
# On every fixture with stack events of several kinds (Spike full system on
# the record axis, one hart; a TracerV trace as two tiles with cycles, two
# harts; a two-hart Linux boot; a Go program): for several zooms (the whole
# run at 1000 and at one bucket, a few % windows at a pixel and at 0, one
# hart), the buckets answered from the file are those computed here, in
# Python, from the job's exact intervals (detail=exact, min_duration=0) with
# the rule of timeline_lod.h; the same with the file cut, corrupted or
# removed (the server then builds them by a replay); detail=auto on these
# small jobs stays exact (their replay is short).
set -u
T=test_server_timeline_lod
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_timeline_lod || exit 0
R=$GEN/readers
S=$SHARED/fixtures/spike
L=$GEN/linux/smp2
for f in "$R/spike.log" "$GEN/vmlinux" "$S/init" "$S/prog" "$R/tv-c-v40-w1.bin" "$R/rdprog" \
	"$L/boot.oobt" "$L/vmlinux" "$GEN/go/demo.oobt" "$GEN/go/gotrace-demo"; do
	[ -e "$f" ] || { skip all "missing $f"; exit 0; }
done
python3 "$OOB_SRCDIR/tests/tools/two-tiles.py" "$R/tv-c-v40-w1.bin" "$W"
srv_start "$W/data" --workers 1 || { fail start "server did not start"; exit 0; }

bin() { curl -s -T "$1" "$SRV_URL/api/v1/binaries?name=$(basename "$1")" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
trace() { curl -s -T "$1" "$SRV_URL/api/v1/traces?name=$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
run_job() { # name body -> job id
	curl -s -d "$2" "$SRV_URL/api/v1/jobs" >"$W/job-$1.json"
	id=$(jq_py "$W/job-$1.json" 'j.get("id", "")')
	state=$(wait_job "$id" 300)
	[ "$state" = done ] || { fail "$1 job" "state $state: $(cat "$W/job-$1.json")"; return 1; }
	echo "$id"
}

# check NAME JOB TAG: every zoom's buckets against the Python ones.
check() {
	name=$1 job=$2 tag=$3
	http GET "$SRV_URL/api/v1/jobs/$job/timeline?tracks=harts&detail=exact&min_duration=0" \
		"$W/$name-exact.json" >/dev/null
	qs=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
s, e = j["start"], j["end"]
n = max(e - s, 1)
a, b = s + n // 3, s + n // 3 + n // 50 + 1
c = s + n // 7 + 3
print("min_duration=%d" % (n // 1000 + 1))
print("min_duration=1000000000000000000")
print("from=%d&to=%d&min_duration=%d" % (a, b, (b - a) // 1000 + 1))
print("from=%d&to=%d&min_duration=0" % (a, b))
print("from=%d&to=%d&min_duration=%d&hart=%d" % (c, c + n // 5, n // 300 + 1, j["harts"][-1]["hart"]))
print("from=%d&min_duration=%d" % (e - n // 10, n // 4000 + 1))
' "$W/$name-exact.json")
	i=0
	for q in $qs; do
		i=$((i + 1))
		code=$(http GET "$SRV_URL/api/v1/jobs/$job/timeline?tracks=harts&detail=buckets&$q" \
			"$W/$name-$tag-$i.json")
		python3 - "$W/$name-exact.json" "$W/$name-$tag-$i.json" "$code" "$q" "$name $tag" <<'PY'
import json, sys, urllib.parse
T = "test_server_timeline_lod"
exact, got, code, q, name = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
a = {k: int(v[0]) for k, v in urllib.parse.parse_qs(q).items()}
if code != "200":
    print("FAIL: %s: %s %s: HTTP %s: %s" % (T, name, q, code, open(got).read()[:300]))
    sys.exit(0)
got = json.load(open(got))
S, E = exact["start"], exact["end"]
L = E - S
b0 = max(1, -(-L // 65536)) if L else 1
levels = [b0]
while L and -(-L // levels[-1]) > 1:
    levels.append(levels[-1] * 4)
md = a.get("min_duration", 0)
b = max([x for x in levels if x <= md] or [b0])
frm = max(a.get("from", 0), S)
to = min(a["to"], E) if "to" in a else E
def key(iv):  # smaller process first (none first), then user before kernel
    return (-1 if iv[3] is None else iv[3], iv[2] == "kernel")
want_harts = []
for h in exact["harts"]:
    if "hart" in a and h["hart"] != a["hart"]:
        continue
    spans = h["intervals"]
    first = spans[0][0] if spans else None
    last = spans[-1][1] if spans else None
    out = []
    if spans and frm < to:
        i0, i1 = (frm - S) // b, -(-(to - S) // b)
        # per bucket: time per (process, state), intervals meeting it, and
        # whether the first of them began before it
        buckets = {}
        for s, e, st, p, n in spans:
            for i in range(max(i0, (s - S) // b), min(i1, -(-(e - S) // b))):
                bs, be = S + i * b, min(S + (i + 1) * b, E)
                ov = min(e, be) - max(s, bs)
                if ov <= 0:
                    continue
                d = buckets.setdefault(i, [{}, 0, None])
                k = (None if p is None else p, st)
                d[0][k] = d[0].get(k, 0) + ov
                if d[2] is None:
                    d[2] = 1 if s < bs else 0
                d[1] += 1
        for i in sorted(buckets):
            tot, n, cont = buckets[i]
            best = sorted(tot.items(), key=lambda kv: (-kv[1], -1 if kv[0][0] is None else kv[0][0], kv[0][1] == "kernel"))[0]
            (p, st), busy = best
            bs, be = S + i * b, min(S + (i + 1) * b, E)
            s, e = max(bs, first), min(be, last)
            if out and out[-1][1] == s and out[-1][2] == st and out[-1][3] == p:
                out[-1][1] = e
                out[-1][5] += busy
                out[-1][4] += n - cont
            else:
                out.append([s, e, st, p, n, busy])
    want_harts.append({"hart": h["hart"], "intervals": out})
merged = sum(iv[4] - 1 for h in want_harts for iv in h["intervals"])
checks = [("detail", got.get("detail"), "buckets"), ("bucket", got.get("bucket"), b),
          ("start", got["start"], S), ("end", got["end"], E), ("merged", got["merged"], merged)]
bad = [c for c in checks if c[1] != c[2]]
if got["harts"] != want_harts:
    gh = got["harts"]
    for x, y in zip(gh, want_harts):
        if x != y:
            diff = [(u, v) for u, v in zip(x["intervals"], y["intervals"]) if u != v][:2]
            bad.append(("hart %d" % y["hart"], "%d intervals" % len(x["intervals"]), "%d, first diff %s" % (len(y["intervals"]), diff)))
    if len(gh) != len(want_harts):
        bad.append(("harts", len(gh), len(want_harts)))
nint = sum(len(h["intervals"]) for h in want_harts)
if bad:
    print("FAIL: %s: %s %s: %s" % (T, name, q, "; ".join("%s %s != %s" % c for c in bad)))
else:
    print("PASS: %s: %s %s: %d buckets of %d give %d intervals as computed from the exact ones" % (
        T, name, q, -(-(to - frm) // b) if frm < to else 0, b, nint))
PY
	done
}

lodcheck() { # name job
	name=$1 job=$2
	F=$W/data/results/$job/events.lod
	if [ -s "$F" ]; then pass "$name: the job wrote its timeline summaries"; else fail "$name lod" "no $F"; fi
	check "$name" "$job" file
	http GET "$SRV_URL/api/v1/jobs/$job/timeline?tracks=harts" "$W/$name-auto.json" >/dev/null
	d=$(jq_py "$W/$name-auto.json" 'j.get("detail")')
	if [ "$d" = exact ]; then pass "$name: detail=auto stays exact on a short job"; else fail "$name auto" "detail $d"; fi
	cp "$F" "$W/lod.saved"
	head -c 1000 "$W/lod.saved" >"$F"
	check "$name" "$job" cut
	cp "$W/lod.saved" "$F"
	printf 'XXXXXXXX' | dd of="$F" bs=1 seek=200 conv=notrunc 2>/dev/null
	check "$name" "$job" corrupt
	rm -f "$F"
	check "$name" "$job" missing
}

ids="$(bin "$GEN/vmlinux"), $(bin "$S/init"), $(bin "$S/prog")"
job=$(run_job spike "{\"trace\": $(trace "$R/spike.log" spike), \"binaries\": [$ids]}") && lodcheck spike "$job"
rd=$(bin "$R/rdprog")
c0=$(trace "$W/TRACEFILE-C0" TRACEFILE-C0)
c1=$(trace "$W/TRACEFILE-C1" TRACEFILE-C1)
job=$(run_job tiles "{\"traces\": [$c0, $c1], \"binaries\": [$rd]}") && lodcheck tiles "$job"
job=$(run_job smp2 "{\"trace\": $(trace "$L/boot.oobt" boot.oobt), \"binaries\": [$(bin "$L/vmlinux")]}") && lodcheck smp2 "$job"
job=$(run_job go "{\"trace\": $(trace "$GEN/go/demo.oobt" demo.oobt), \"binaries\": [$(bin "$GEN/go/gotrace-demo")]}") && lodcheck go "$job"
srv_stop
