#!/bin/sh
# test_server_memory.sh: a job's memory stays within --job-memory
# (reliability issue, item 2). A trace of N nested calls (one pc that calls
# itself) needs a frame per record; with a budget far below what that takes
# the job fails, naming the budget, and the server runs the next job. A
# small job fits the same budget.
set -u
T=test_server_memory
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_memory || exit 0
command -v lz4 >/dev/null 2>&1 || {
	skip all "no lz4 command"
	exit 0
}

srv_start "$W/data" --workers 1 --job-memory 128M || {
	fail start "server did not start"
	exit 0
}

# 2 M nested calls: 2 M frames and CCT nodes, hundreds of MB resident.
N=2000000
python3 - "$W/calls.spike" "$N" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("core   0: 3 0x0000000080000000 (0x000000ef)\n" * int(sys.argv[2]))
PY
lz4 -q -f "$W/calls.spike" "$W/calls.spike.lz4" && rm -f "$W/calls.spike"
id=$(job_of "$W/calls.spike.lz4")
s=$(wait_job "$id" 120)
msg=$(jq_py "$W/job.json" 'j.get("error") or ""')
case $s:$msg in
failed:*job-memory*) pass "$N nested calls, --job-memory 128M: failed: $msg" ;;
*) fail "deep job over the budget" "state $s: $(head -c 300 "$W/job.json")" ;;
esac

printf 'core   0: 3 0x0000000080000000 (0x00000013)\ncore   0: 3 0x0000000080000004 (0x00000013)\n' >"$W/small.spike"
id=$(job_of "$W/small.spike")
s=$(wait_job "$id" 60)
insns=$(jq_py "$W/job.json" '(j.get("summary") or {}).get("instructions")')
if [ "$s" = done ] && [ "$insns" = 2 ]; then
	pass "a small job after it, same budget: done, $insns instructions"
else
	fail "small job" "state $s: $(head -c 300 "$W/job.json")"
fi
srv_stop || fail "clean shutdown" "exit status $?: $(tail -n 5 "$W/data.log")"
"$OOB_BUILDDIR/oobprofd" --job-memory 12X --data "$W/bad" >"$W/bad.txt" 2>&1 &&
	fail "--job-memory 12X" "accepted" ||
	{ grep -q 'job-memory' "$W/bad.txt" && pass "--job-memory 12X refused: $(head -n 1 "$W/bad.txt")" ||
		fail "--job-memory 12X" "$(head -c 200 "$W/bad.txt")"; }
