#!/bin/sh
# Sideband process events (--events, DESIGN.md 3.3) on a real trace: a run of
# tests/fixtures/progs/mixed.c, declared to be pid 42 that forks pid 43 a third
# of the way in and switches to it. The instruction count comes from the
# plugin's own histogram, the split from the events: every number expected
# here is known before oobprof runs.
set -u
T=test_full_events
G=$OOB_BUILDDIR/tests/gen/progs
CLI=$OOB_BUILDDIR/oobprof
for f in "$CLI" "$G/mixed" "$G/mixed.oobt" "$G/mixed.hist"; do
	[ -e "$f" ] || { echo "SKIP: $T: all: missing $f"; exit 0; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
N=$(awk '{s += $2} END {print s}' "$G/mixed.hist")
K=$((N / 3))
cat >"$tmp/ev.jsonl" <<EOT
{"event": "exec", "hart": 0, "seq": 0, "pid": 42, "path": "/bin/mixed"}
{"event": "switch", "hart": 0, "seq": 0, "pid": 42}

{"event": "fork", "hart": 0, "seq": $K, "pid": 42, "child": 43}
{"type": "switch", "seq": $K, "tid": 43}
{"event": "exit", "hart": 0, "seq": $((N - 1)), "pid": 43}
{"event": "map", "hart": 0, "seq": 5, "pid": 42, "path": "/lib/x.so", "base": 4096, "size": 4096}
EOT
"$CLI" processes --json --events "$tmp/ev.jsonl" --elf "$G/mixed" "$G/mixed.oobt" >"$tmp/p.json" ||
	{ echo "FAIL: $T: processes: oobprof failed"; exit 1; }
"$CLI" fold --events "$tmp/ev.jsonl" --elf "$G/mixed" "$G/mixed.oobt" >"$tmp/fold" ||
	{ echo "FAIL: $T: fold: oobprof failed"; exit 1; }
python3 - "$tmp" "$N" "$K" <<'PY'
import json, sys
tmp, N, K = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
T = "test_full_events"
def check(name, ok, detail):
    print(("PASS" if ok else "FAIL") + ": %s: %s (%s)" % (T, name, detail))
j = json.load(open(tmp + "/p.json"))
ps = {p["pid"]: p for p in j["processes"]}
check("source", j["source"] == "events" and j["switches"] == 1, "%s, %d switches" % (j["source"], j["switches"]))
p42, p43 = ps.get(42, {}), ps.get(43, {})
check("tree", p42.get("children") == [43] and p43.get("ppid") == 42 and p42.get("comm") == "mixed"
      and p43.get("comm") == "mixed" and p42.get("exec", [{}])[0].get("path") == "/bin/mixed",
      json.dumps({k: (v["ppid"], v["comm"], v["children"]) for k, v in ps.items()}))
u42 = p42.get("instructions", {}).get("user")
u43 = p43.get("instructions", {}).get("user")
check("instructions split at the switch", u42 == K and u43 == N - K, "42: %s of %d, 43: %s of %d" % (u42, K, u43, N - K))
roots = {}
for l in open(tmp + "/fold"):
    stack, w = l.rsplit(" ", 1)
    roots[stack.split(";")[0]] = roots.get(stack.split(";")[0], 0) + int(w)
check("stacks rooted at the processes", roots == {"mixed 42": K, "mixed 43": N - K}, str(roots))
PY
printf '{"event": "switch", "seq": 0, "pid": 1}\n{"event": "swap", "seq": 1}\n' >"$tmp/bad.jsonl"
if msg=$("$CLI" fold --events "$tmp/bad.jsonl" --elf "$G/mixed" "$G/mixed.oobt" 2>&1 >/dev/null); then
	echo "FAIL: $T: bad events file: accepted"
else
	case "$msg" in
	*"line 2"*) echo "PASS: $T: bad events file: refused naming the line ($msg)" ;;
	*) echo "FAIL: $T: bad events file: message does not name the line: $msg" ;;
	esac
fi

# map events: a PIE run (tests/fixtures/progs/mixed.c built -pie, with the
# dynamic loader and libc) given its ELFs without load bases; the bases come
# as map events, as a tracer on the guest would report them. The stacks must
# be exactly those of the run given ELF@BASE on the command line (whose
# per-function counts test_cli_programs checks against truth.py).
P=$G/mixed-pie
if [ -e "$P.oobt" ] && [ -e "$P.maps" ]; then
	{
		echo '{"event": "exec", "hart": 0, "seq": 0, "pid": 7, "path": "/bin/mixed-pie"}'
		echo '{"event": "switch", "hart": 0, "seq": 0, "pid": 7}'
		while read -r elf base; do
			printf '{"event": "map", "hart": 0, "seq": 0, "pid": 7, "path": "%s", "base": "%s"}\n' "$elf" "$base"
		done <"$P.maps"
		echo '{"event": "map", "hart": 0, "seq": 0, "pid": 7, "path": "/lib/not-given.so", "base": 4096}'
	} >"$tmp/maps.jsonl"
	set --
	at=
	while read -r elf base; do
		set -- "$@" --elf "$elf"
		at="$at --elf $elf@$base"
	done <"$P.maps"
	# shellcheck disable=SC2086
	"$CLI" fold $at "$P.oobt" >"$tmp/at.fold" 2>"$tmp/at.err"
	"$CLI" fold --events "$tmp/maps.jsonl" "$@" "$P.oobt" 2>"$tmp/ev.err" | sed 's/^mixed-pie 7;//' >"$tmp/ev.fold"
	"$CLI" stats --events "$tmp/maps.jsonl" "$@" "$P.oobt" >"$tmp/ev.stats" 2>&1
	maps=$(grep -E '^maps(_skipped)?:' "$tmp/ev.stats" | tr '\n' ' ')
	if [ -s "$tmp/at.fold" ] && cmp -s "$tmp/at.fold" "$tmp/ev.fold" && [ "$maps" = "maps: 3 maps_skipped: 1 " ]; then
		echo "PASS: $T: map events place a PIE and its libraries as ELF@BASE does ($(wc -l <"$tmp/at.fold") stacks; $maps)"
	else
		echo "FAIL: $T: map events: $maps; $(diff "$tmp/at.fold" "$tmp/ev.fold" | head -n 4 | tr '\n' ' ')"
	fi
else
	echo "SKIP: $T: map events: no $P.oobt (gen-fixtures)"
fi
printf '{"event": "map", "seq": 0, "pid": 7, "path": "libc.so.6"}\n' >"$tmp/badmap.jsonl"
if msg=$("$CLI" fold --events "$tmp/badmap.jsonl" --elf "$G/mixed" "$G/mixed.oobt" 2>&1 >/dev/null); then
	echo "FAIL: $T: map without a base: accepted"
else
	case "$msg" in
	*"line 1"*base*) echo "PASS: $T: map without a base: refused naming the line ($msg)" ;;
	*) echo "FAIL: $T: map without a base: $msg" ;;
	esac
fi
