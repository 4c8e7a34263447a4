#!/bin/sh
# Window flame graphs and timelines of a job read its event index
# (results/<id>/events.idx, core/recon/evidx.h).
#
# Input: one real TracerV trace (tests/gen/readers: rdprog under QEMU) as two
# tiles, TRACEFILE-C0 at the base clock and TRACEFILE-C1 at half of it.
# - exact: a window's flame graph holds exactly the records whose base-clock
#   cycle is in [from, to), per hart (?hart=) and in all; truth: the files'
#   own cycle words, decoded here with Python;
# - the timeline of windows read from the index is the one of the whole
#   log's replay (the same job with its index moved away: what jobs of older
#   oobprofd get);
# - a cut or corrupt index is not used (a warning), never a crash.
set -u
T=test_server_window
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_window || exit 0
R=$GEN/readers
for f in "$R/tv-c-v40-w1.bin" "$R/rdprog"; do
	[ -e "$f" ] || { skip all "missing $f"; exit 0; }
done
python3 - "$R/tv-c-v40-w1.bin" "$W" <<'PY'
import struct, sys
src = open(sys.argv[1], "rb").read()
body = src[src.index(b"\n") + 1:]
open(sys.argv[2] + "/TRACEFILE-C0", "wb").write(
    b"# Clock Domain: tile0, Relative Frequency: 1/1 of Base Clock\n" + body)
open(sys.argv[2] + "/TRACEFILE-C1", "wb").write(
    b"# Clock Domain: tile1, Relative Frequency: 1/2 of Base Clock\n" + body)
with open(sys.argv[2] + "/cycles", "w") as f:  # valid slot: bit 40 of word 1
    for i in range(len(body) // 16):
        c, s = struct.unpack_from("<QQ", body, 16 * i)
        if (s >> 40) & 1:
            f.write("%d\n" % c)
PY
srv_start "$W/data" --workers 1 || { fail start "server did not start"; exit 0; }
bin=$(curl -s -T "$R/rdprog" "$SRV_URL/api/v1/binaries?name=rdprog" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
c0=$(curl -s -T "$W/TRACEFILE-C0" "$SRV_URL/api/v1/traces?name=TRACEFILE-C0" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
c1=$(curl -s -T "$W/TRACEFILE-C1" "$SRV_URL/api/v1/traces?name=TRACEFILE-C1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
curl -s -d "{\"traces\": [$c0, $c1], \"binaries\": [$bin]}" "$SRV_URL/api/v1/jobs" >"$W/job.created"
job=$(jq_py "$W/job.created" 'j.get("id", "")')
s=$(wait_job "$job" 300)
[ "$s" = done ] || { fail job "$s: $(cat "$W/job.created")"; srv_stop; exit 0; }
IDX=$W/data/results/$job/events.idx
if [ -s "$IDX" ]; then pass "the job wrote its event index"; else fail index "no $IDX"; fi

WINS="100000:200000 250007:600007 385000:500000 1001:1002 771690:771691 0:1000000 81700:81900"
for w in $WINS; do
	a=${w%:*} b=${w#*:}
	for h in all 0 1; do
		q="from=$a&to=$b&metric=instructions&max_nodes=0"
		[ "$h" = all ] || q="$q&hart=$h"
		http GET "$SRV_URL/api/v1/jobs/$job/flamegraph?$q" "$W/fg-$a-$h.json" >/dev/null
	done
	http GET "$SRV_URL/api/v1/jobs/$job/timeline?from=$a&to=$b&min_duration=50" "$W/tl-$a.idx.json" >/dev/null
done
python3 - "$W" "$WINS" <<'PY'
import bisect, json, sys
T = "test_server_window"
w, wins = sys.argv[1], sys.argv[2].split()
cyc = [int(l) for l in open(w + "/cycles")]
bad = []
for win in wins:
    a, b = (int(x) for x in win.split(":"))
    n0 = bisect.bisect_left(cyc, b) - bisect.bisect_left(cyc, a)  # tile 0: cycle
    n1 = bisect.bisect_left(cyc, (b + 1) // 2) - bisect.bisect_left(cyc, (a + 1) // 2)  # 2 * cycle
    for h, want in (("all", n0 + n1), ("0", n0), ("1", n1)):
        try:
            got = json.load(open("%s/fg-%d-%s.json" % (w, a, h)))["value"]
        except Exception as e:
            got = "unreadable: %s" % e
        if got != want:
            bad.append("%s hart %s: %s, want %d" % (win, h, got, want))
print(("PASS" if not bad else "FAIL") + ": %s: exact windows%s" % (T, (": " + "; ".join(bad[:4])) if bad else " (%d)" % (3 * len(wins))))
PY

# The whole log's replay, the index moved away.
mv "$IDX" "$W/idx.saved"
bad=
for w in $WINS; do
	a=${w%:*} b=${w#*:}
	http GET "$SRV_URL/api/v1/jobs/$job/timeline?from=$a&to=$b&min_duration=50" "$W/tl-$a.full.json" >/dev/null
	cmp -s "$W/tl-$a.idx.json" "$W/tl-$a.full.json" || bad="$bad $w"
done
if [ -z "$bad" ]; then pass "timelines from the index are the whole replay's"; else fail timeline_seek "differ:$bad"; fi

# A cut index, then garbage: a warning and the whole replay, never a crash.
for how in cut garbage; do
	if [ $how = cut ]; then
		head -c "$(($(wc -c <"$W/idx.saved") / 2))" "$W/idx.saved" >"$IDX"
	else
		head -c 32 "$W/idx.saved" >"$IDX"
		head -c 5000 /dev/urandom >>"$IDX"
		tail -c 32 "$W/idx.saved" >>"$IDX"
	fi
	code=$(http GET "$SRV_URL/api/v1/jobs/$job/timeline?from=100000&to=200000&min_duration=50" "$W/tl-bad.json")
	fcode=$(http GET "$SRV_URL/api/v1/jobs/$job/flamegraph?from=100000&to=200000" "$W/fg-bad.json")
	if [ "$code" = 200 ] && [ "$fcode" = 200 ] && cmp -s "$W/tl-bad.json" "$W/tl-100000.full.json"; then
		pass "a $how index: the whole replay"
	else
		fail "bad_index_$how" "timeline $code, flame graph $fcode: $(head -c 300 "$W/tl-bad.json")"
	fi
done
code=$(http GET "$SRV_URL/api/v1/health" "$W/health.json")
[ "$code" = 200 ] && pass "the server is up" || fail health "$code"
srv_stop
