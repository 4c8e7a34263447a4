#!/bin/sh
# GET /api/v1/jobs/{id}/slices: the stack over time (api/api_slices.h), on
# two real runs, against the Perfetto export of the same trace by the CLI
# (`oobprof export --to perfetto --min-duration 0`: every frame longer than
# 0 as B/E events), cut to each window in Python (tests/tools/slices-check.py):
#   - a program under qemu-riscv64 (tests/gen/progs/mutual; one hart), the
#     whole run and windows at odd places, at min_duration 0 and at a
#     "pixel" (the hidden count is then the truth's short slices);
#   - the two-hart Linux boot (tests/gen/linux/smp2), cut to its first
#     $SLICES_MAX_INSNS instructions (options.max_insns = --max-insns), by
#     hart and by process: per (process, hart) tracks of the same slices,
#     each under its process's root frame;
#   - bad arguments are 400, a window too large for the bound 413.
set -u
T=test_server_slices
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_slices || exit 0
P=$GEN/progs/mutual
L=$GEN/linux/smp2
N=${SLICES_MAX_INSNS:-40000000}
CLI=$OOB_BUILDDIR/oobprof
CHECK=$OOB_SRCDIR/tests/tools/slices-check.py
for f in "$P" "$P.oobt" "$L/boot.oobt" "$L/vmlinux"; do
	[ -e "$f" ] || { skip all "missing $f"; exit 0; }
done
srv_start "$W/data" --workers 1 || { fail start "server did not start"; exit 0; }

bin() { curl -s -T "$1" "$SRV_URL/api/v1/binaries?name=$(basename "$1")" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
trace() { curl -s -T "$1" "$SRV_URL/api/v1/traces?name=$(basename "$1")" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
run_job() { # name body -> job id
	curl -s -d "$2" "$SRV_URL/api/v1/jobs" >"$W/job-$1.json"
	id=$(jq_py "$W/job-$1.json" 'j.get("id", "")')
	state=$(wait_job "$id" 600)
	[ "$state" = done ] || { fail "$1 job" "state $state: $(cat "$W/job-$1.json")"; return 1; }
	echo "$id"
}
# windows NAME JOB: "from:to:min" triples over the run, from its timeline
# (the whole run at 0 only for small runs: the bound is 500,000 slices).
windows() {
	http GET "$SRV_URL/api/v1/jobs/$2/timeline?min_duration=1000000000000" "$W/$1-tl.json" >/dev/null
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
s, e = j["start"], j["end"]
n = e - s
px = n // 1000 + 1
w = [(s, e + 1, px)] + ([(s, e + 1, 0)] if n < 10**6 else []) + [ (s + n // 3, s + n // 3 + n // 40 + 7, 0),
     (s + n // 2 + 13, s + n // 2 + n // 200 + 101, 0), (s + n // 5, s + n // 5 + n // 10, n // 2000 + 1),
     (s + n // 7 + 3, s + n // 7 + 4, 0)]
print(" ".join("%d:%d:%d" % t for t in w))' "$W/$1-tl.json"
}
# check NAME JOB PERFETTO [by-process]: every window against the export.
check() {
	name=$1 job=$2 pf=$3 byp=${4:-}
	bad=0 n=0 files=
	for w in $(windows "$name" "$job"); do
		a=${w%%:*} r=${w#*:} b=${r%%:*} m=${w##*:}
		q="from=$a&to=$b&min_duration=$m"
		code=$(http GET "$SRV_URL/api/v1/jobs/$job/slices?$q" "$W/$name-$a-$m.json")
		[ -n "$byp" ] && http GET "$SRV_URL/api/v1/jobs/$job/slices?$q&by=process" "$W/$name-$a-$m-p.json" >/dev/null
		n=$((n + 1))
		if [ "$code" != 200 ]; then
			fail "$name [$a, $b) min $m" "HTTP $code: $(head -c 300 "$W/$name-$a-$m.json")"
			bad=1
		fi
		files="$files $W/$name-$a-$m.json"
	done
	# shellcheck disable=SC2086
	python3 "$CHECK" "$pf" $files >"$W/$name.check" 2>&1 || bad=1
	sed 's/^/  /' "$W/$name.check"
	if [ $bad = 0 ]; then
		pass "$name: the slices of $n windows = the Perfetto export's, cut to them${byp:+ (by hart and by process)}"
	else
		fail "$name" "$(grep -v '^OK' "$W/$name.check" | head -3)"
	fi
}

# ---- a program under QEMU ----
job=$(run_job mutual "{\"trace\": $(trace "$P.oobt"), \"binaries\": [$(bin "$P")]}")
if [ -n "$job" ]; then
	"$CLI" export --to perfetto --min-duration 0 --elf "$P" "$P.oobt" -o "$W/mutual.json" 2>"$W/cli.err" ||
		fail "mutual export" "$(cat "$W/cli.err")"
	check mutual "$job" "$W/mutual.json"
	# bad input: a clear 400, never a crash
	for q in "by=thread" "from=10&to=5" "min_duration=-1" "hart=70000"; do
		code=$(http GET "$SRV_URL/api/v1/jobs/$job/slices?$q" "$W/bad.json")
		if [ "$code" = 400 ] && grep -q '"message"' "$W/bad.json"; then
			pass "slices?$q: 400 $(jq_py "$W/bad.json" 'j["error"]["message"]')"
		else
			fail "slices?$q" "HTTP $code: $(cat "$W/bad.json")"
		fi
	done
fi

# ---- the two-hart Linux boot ----
job=$(run_job smp2 "{\"trace\": $(trace "$L/boot.oobt"), \"binaries\": [$(bin "$L/vmlinux")], \"options\": {\"max_insns\": $N}}")
if [ -n "$job" ]; then
	"$CLI" export --to perfetto --min-duration 0 --max-insns "$N" --elf "$L/vmlinux" "$L/boot.oobt" \
		-o "$W/smp2.json" 2>"$W/cli.err" || fail "smp2 export" "$(cat "$W/cli.err")"
	check smp2 "$job" "$W/smp2.json" by-process
	# the split is there to see: both harts, and several processes on each
	w=$W/smp2-$(windows smp2 "$job" | cut -d' ' -f1 | cut -d: -f1,3 | tr : -)-p.json
	if python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
per = {}
for t in j["tracks"]:
    per.setdefault(t["hart"], set()).add(t["process"])
print(" ".join("hart %d: %d processes" % (h, len(v)) for h, v in sorted(per.items())))
sys.exit(not (len(per) == 2 and all(len(v) >= 2 for v in per.values())))' "$w" >"$W/split"; then
		pass "smp2: the whole run by process: $(cat "$W/split")"
	else
		fail "smp2 by process" "want 2 harts with 2 processes or more each: $(cat "$W/split")"
	fi
fi
srv_stop || fail "server exit" "non-zero (sanitizer report?): $(tail -5 "$W/data.log")"
