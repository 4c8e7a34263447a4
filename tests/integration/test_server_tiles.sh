#!/bin/sh
# test_server_tiles.sh: a job of several traces, one file per hart, as a
# FireSim run uploads them (TRACEFILE-C0, TRACEFILE-C1: the hart is in the
# name). The input is the Linux boot on two harts (tests/tools/gen-linux.sh,
# smp2), split with `oobprof convert --per-hart`; the files go up in the
# wrong order on purpose. The job's process tree and folded stacks must be
# the CLI's on the same files (read in time order: tasks migrate between the
# harts), and bad requests get a 4xx that says why.
set -u
T=test_server_tiles
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_tiles || exit 0
L=$GEN/linux
CLI=$OOB_BUILDDIR/oobprof
for f in "$L/smp2/boot.oobt" "$L/smp2/vmlinux" "$L/init" "$L/calls" "$L/sort" "$L/syscalls"; do
	[ -e "$f" ] || {
		skip all "no $f (gen-linux did not run: see tests/out/gen-fixtures.log)"
		exit 0
	}
done
"$CLI" convert --to oobt --per-hart "$L/smp2/boot.oobt" -o "$W/TRACEFILE" || {
	fail "convert --per-hart" "exit $?"
	exit 0
}
set -- --elf "$L/smp2/vmlinux" --elf "$L/init" --elf "$L/calls" --elf "$L/sort" --elf "$L/syscalls"
"$CLI" processes --json "$@" "$W/TRACEFILE-C0" "$W/TRACEFILE-C1" >"$W/cli.procs.json" &&
	"$CLI" fold "$@" "$W/TRACEFILE-C0" "$W/TRACEFILE-C1" >"$W/cli.folded" || {
	fail "cli" "oobprof processes/fold on the split files failed"
	exit 0
}

srv_start "$W/data" || {
	fail start "server did not start"
	exit 0
}
bins=
for b in "$L/smp2/vmlinux" "$L/init" "$L/calls" "$L/sort" "$L/syscalls"; do
	id=$(curl -s -T "$b" "$SRV_URL/api/v1/binaries?name=$(basename "$b")" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
	bins=$bins${bins:+,}$id
done
c1=$(curl -s -T "$W/TRACEFILE-C1" "$SRV_URL/api/v1/traces?name=TRACEFILE-C1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
c0=$(curl -s -T "$W/TRACEFILE-C0" "$SRV_URL/api/v1/traces?name=TRACEFILE-C0" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
curl -s -d "{\"traces\": [$c1, $c0], \"binaries\": [$bins]}" "$SRV_URL/api/v1/jobs" >"$W/job.created"
job=$(jq_py "$W/job.created" 'j.get("id", "")')
s=$(wait_job "$job" 600)
if [ "$s" != done ]; then
	fail "job of two traces" "$s: $(cat "$W/job.json")"
	exit 0
fi
curl -s "$SRV_URL/api/v1/jobs/$job/processes" >"$W/api.procs.json"
curl -s "$SRV_URL/api/v1/jobs/$job/folded" >"$W/api.folded"
curl -s "$SRV_URL/api/v1/jobs/$job" >"$W/job.json"
python3 - "$W" <<'EOF'
import json, sys
T = "test_server_tiles"
w = sys.argv[1]
api, cli = json.load(open(w + "/api.procs.json")), json.load(open(w + "/cli.procs.json"))
job = json.load(open(w + "/job.json"))
ok = api["processes"] == cli["processes"] and len(api["processes"]) > 20
print(("PASS" if ok else "FAIL") + ": %s: a job of TRACEFILE-C1 and -C0: the processes of the CLI on "
      "the same files (%d processes, %d switches; spec %s)" % (
          T, len(api["processes"]), api["switches"], json.dumps(job.get("spec", {}).get("traces"))))
same = open(w + "/api.folded").read() == open(w + "/cli.folded").read()
print(("PASS" if same else "FAIL") + ": %s: the same folded stacks (%d lines)" % (
    T, len(open(w + "/api.folded").read().splitlines())))
EOF
refused() { # body, what the message must say, case, status (default 400)
	code=$(curl -s -o "$W/bad.json" -w '%{http_code}' -d "$1" "$SRV_URL/api/v1/jobs")
	if [ "$code" = "${4:-400}" ] && grep -q "$2" "$W/bad.json"; then
		pass "refused: $3 ($code: $(jq_py "$W/bad.json" 'j["error"]["message"]'))"
	else
		fail "refused: $3" "$code $(cat "$W/bad.json")"
	fi
}
refused "{\"traces\": [$c0, $c0]}" "given twice" "a trace twice"
refused "{\"trace\": $c0, \"traces\": [$c1]}" "one of them" "both trace and traces"
refused "{\"traces\": []}" "array of trace ids" "no traces"
refused "{\"traces\": [$c0, 999999]}" "999999" "a trace that does not exist" 404
srv_stop || fail "clean shutdown" "exit status $?"
rm -f "$W"/TRACEFILE-C*
