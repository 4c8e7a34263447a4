#!/bin/sh
# bench-index.sh TRACE ELF...: one job of TRACE on a private oobprofd, then
# the event index's figures: job time, sizes of events.evl, events.idx and
# events.lod, time of a 1 %-window flame graph and of the first timeline
# (the viewer's two requests: the extent, then the whole run at 2000
# pixels), each with the timeline summaries (lod), with the index only (the
# summaries moved away) and with the whole log's replay (the index moved
# away too, as jobs of older oobprofd are served), each on a restarted
# server (no rendering cached). The server keeps up to
# BENCH_MAX_EVENTS stack events (default 4 × 10^9, --max-events' most:
# a 10 G-instruction job needs more than the server's default). Prints
# figures; never passes or fails on timing. Called by run-bench.sh and
# bench-scale.sh; OOB_BUILDDIR set.
set -u
: "${OOB_BUILDDIR:?}"
trace=$1
shift
srv=$OOB_BUILDDIR/oobprofd
dir=$(mktemp -d "${TMPDIR:-/tmp}/oobprof-bench-index.XXXXXX") || exit 1
port=$((20000 + $$ % 20000))
url=http://127.0.0.1:$port
pid=
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
# start_srv: (re)starts the server on the same data: a fresh one has no
# rendering cached, so each variant below builds its views.
start_srv() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	"$srv" --data "$dir/data" --listen "127.0.0.1:$port" --workers 1 \
		--max-events "${BENCH_MAX_EVENTS:-4000000000}" >>"$dir/srv.log" 2>&1 &
	pid=$!
	i=0
	until curl -sf "$url/api/v1/health" >/dev/null; do
		i=$((i + 1))
		[ $i -gt 100 ] && { echo "bench-index: oobprofd did not start: $(cat "$dir/srv.log")"; exit 0; }
		sleep 0.1
	done
}
start_srv
id_of() { python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
bins=
for b in "$@"; do
	bins=$bins${bins:+,}$(curl -s -T "$b" "$url/api/v1/binaries?name=$(basename "$b")" | id_of)
done
tr=$(curl -s -T "$trace" "$url/api/v1/traces?name=$(basename "$trace")" | id_of)
t0=$(date +%s.%N)
job=$(curl -s -d "{\"trace\": $tr, \"binaries\": [$bins]}" "$url/api/v1/jobs" | id_of)
while :; do
	state=$(curl -s "$url/api/v1/jobs/$job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
	case $state in done | failed | cancelled) break ;; esac
	sleep 0.2
done
t1=$(date +%s.%N)
[ "$state" = done ] || { echo "bench-index: job $state"; exit 0; }
res=$dir/data/results/$job
curl -s "$url/api/v1/jobs/$job" >"$dir/job.json"
python3 - "$dir/job.json" "$res" "$t0" "$t1" <<'PY'
import json, os, sys
j = json.load(open(sys.argv[1]))
insns = j.get("summary", {}).get("instructions") or j.get("progress", {}).get("instructions", 0)
size = lambda f: os.path.getsize(os.path.join(sys.argv[2], f)) if os.path.exists(os.path.join(sys.argv[2], f)) else 0
ev, ix, lod = size("events.evl"), size("events.idx"), size("events.lod")
nev, capped = 0, False
if ev >= 32:  # the log's header (evlog.h): u64 events at 16, flags (bit 0: capped) at 28
    head = open(os.path.join(sys.argv[2], "events.evl"), "rb").read(32)
    nev, capped = int.from_bytes(head[16:24], "little"), bool(head[28] & 1)
print("bench-index: job of %d instructions: %.1f s; events.evl %.1f MB (%d events%s), "
      "events.idx %.1f MB (%.3f bytes an instruction), events.lod %.1f MB" % (
          insns, float(sys.argv[4]) - float(sys.argv[3]), ev / 1e6, nev,
          ", capped: --max-events" if capped else "", ix / 1e6, ix / max(insns, 1), lod / 1e6))
PY
curl -s "$url/api/v1/jobs/$job/timeline?tracks=harts&min_duration=1000000000000" >"$dir/tl0.json"
read -r start end <<EOF
$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["start"], j["end"])' "$dir/tl0.json")
EOF
span=$((end - start))
a=$((start + span / 2)) b=$((start + span / 2 + span / 100))
px=$((span / 2000 + 1))
timed() { # label url
	s=$(curl -s -o /dev/null -w '%{time_total} %{http_code}' "$2")
	echo "bench-index: $1: $s (s, HTTP)"
}
for how in lod index replay; do
	[ $how = index ] && mv "$res/events.lod" "$dir/lod.saved"
	[ $how = replay ] && mv "$res/events.idx" "$dir/idx.saved"
	start_srv
	timed "1 % window flame graph ($how)" "$url/api/v1/jobs/$job/flamegraph?from=$a&to=$b"
	timed "first timeline: extent ($how)" "$url/api/v1/jobs/$job/timeline?min_duration=1000000000000000000"
	timed "first timeline, 2000 px ($how)" "$url/api/v1/jobs/$job/timeline?min_duration=$px"
	timed "1 % window timeline ($how)" "$url/api/v1/jobs/$job/timeline?from=$a&to=$b&min_duration=$((px / 100 + 1))"
done
exit 0
