#!/bin/sh
# test_server_deploy.sh: the deploy/ files work. oobprof-upload sends a
# FireSim-style results folder (TRACEFILE-C0 + a *-dwarf binary, here a real
# program traced in QEMU) to a token-protected server, LZ4-compressed on the
# way, and the job it starts reconstructs the same stacks as a job made by
# hand; a folder of two TRACEFILEs makes one job of both; the systemd units
# (one server, and the node template of a scale-out) pass systemd-analyze
# verify.
set -u
T=test_server_deploy
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_deploy inputs || exit 0
UP=$OOB_SRCDIR/deploy/oobprof-upload
mkdir -p "$W/results/mixed-run"
cp "$TRACE" "$W/results/mixed-run/TRACEFILE-C0"
cp "$ELF" "$W/results/mixed-run/prog-dwarf"
printf 'deploy-test-token-123\n' >"$W/token"
srv_start "$W/data" --token-file "$W/token" || {
	fail start "server did not start"
	exit 0
}
if "$UP" -s "$SRV_URL" -t "$W/token" -z "$W/results/mixed-run" >"$W/up.out" 2>"$W/up.err"; then
	url=$(cat "$W/up.out")
	JOB=${url##*/}
	case $url in
	"$SRV_URL/api/v1/jobs/"[0-9]*) pass "oobprof-upload printed the job URL ($url)" ;;
	*) fail "job URL" "printed '$url'" ;;
	esac
else
	fail "oobprof-upload" "exit $?: $(cat "$W/up.err")"
	srv_stop
	exit 0
fi
state=$(wait_job "$JOB" 300)
curl -s "$SRV_URL/api/v1/traces/$(jq_py "$W/job.json" 'j["trace"]')" >"$W/tr.json"
curl -s "$SRV_URL/api/v1/jobs/$JOB/folded" >"$W/up.folded"
# The same by hand, uncompressed.
curl -s -H 'Authorization: Bearer deploy-test-token-123' -T "$TRACE" "$SRV_URL/api/v1/traces?name=plain" >"$W/plain.json"
curl -s -H 'Authorization: Bearer deploy-test-token-123' \
	-d "{\"trace\": $(jq_py "$W/plain.json" 'j["id"]'), \"binaries\": [$(jq_py "$W/job.json" 'j["spec"]["binaries"][0]["id"]')]}" \
	"$SRV_URL/api/v1/jobs" >"$W/j2.json"
wait_job "$(jq_py "$W/j2.json" 'j["id"]')" 300 >/dev/null
curl -s "$SRV_URL/api/v1/jobs/$(jq_py "$W/j2.json" 'j["id"]')/folded" >"$W/plain.folded"
if [ "$state" = done ] && [ "$(jq_py "$W/tr.json" 'str(j["lz4"]) + " " + j["name"]')" = "True mixed-run-C0" ] &&
	[ -s "$W/up.folded" ] && cmp -s "$W/up.folded" "$W/plain.folded"; then
	pass "its job (LZ4 upload, hart 0) = a job made by hand ($(wc -l <"$W/up.folded" | tr -d ' ') folded lines)"
else
	fail "uploaded job" "state $state, trace $(head -c 200 "$W/tr.json")"
fi
# Two tiles (here two programs traced in QEMU, as TRACEFILE-C0 and -C1):
# one job of both, whose stacks are the CLI's on the two files.
if [ -s "$GEN/progs/recursion.oobt" ] && [ "$TRACE" != "$GEN/progs/recursion.oobt" ]; then
	R=$W/results/two-tiles
	mkdir -p "$R"
	cp "$TRACE" "$R/TRACEFILE-C0"
	cp "$GEN/progs/recursion.oobt" "$R/TRACEFILE-C1"
	cp "$ELF" "$R/prog-dwarf"
	cp "$GEN/progs/recursion" "$R/recursion-dwarf"
	"$OOB_BUILDDIR/oobprof" fold --elf "$R/prog-dwarf" --elf "$R/recursion-dwarf" \
		"$R/TRACEFILE-C0" "$R/TRACEFILE-C1" >"$W/two.cli.folded"
	if url=$("$UP" -s "$SRV_URL" -t "$W/token" "$R" 2>"$W/up2.err"); then
		state=$(wait_job "${url##*/}" 300)
		curl -s "$SRV_URL/api/v1/jobs/${url##*/}/folded" >"$W/two.folded"
		ntr=$(jq_py "$W/job.json" 'len(j["spec"].get("traces", []))')
		if [ "$state" = done ] && [ "$ntr" = 2 ] && [ -s "$W/two.folded" ] &&
			cmp -s "$W/two.folded" "$W/two.cli.folded"; then
			pass "two TRACEFILEs: one job of both traces = the CLI on the two files ($(wc -l <"$W/two.folded" | tr -d ' ') folded lines)"
		else
			fail "two TRACEFILEs" "state $state, $ntr traces in the spec"
		fi
	else
		fail "oobprof-upload, two tiles" "$(cat "$W/up2.err")"
	fi
else
	skip "two TRACEFILEs" "no second traced program (tests/gen/progs/recursion.oobt)"
fi
"$UP" -s "$SRV_URL" -t /dev/null "$W/results/mixed-run" >/dev/null 2>"$W/bad.err"
rc=$?
[ $rc -ne 0 ] && grep -q 'HTTP 401' "$W/bad.err" && pass "a wrong token: exit $rc with the server's 401" ||
	fail "wrong token" "exit $rc: $(cat "$W/bad.err")"
srv_stop || fail "clean shutdown" "exit status $?"
if command -v systemd-analyze >/dev/null 2>&1; then
	sed "s|/usr/bin/oobprofd|$OOBPROFD|" "$OOB_SRCDIR/deploy/oobprofd.service" >"$W/oobprofd.service"
	if systemd-analyze verify "$W/oobprofd.service" >"$W/verify.out" 2>&1 && ! grep -q . "$W/verify.out"; then
		pass "systemd-analyze verify deploy/oobprofd.service: clean"
	else
		fail "systemd unit" "$(head -n 3 "$W/verify.out")"
	fi
	# The node template, as instance n1 (verify wants a concrete unit).
	sed "s|/usr/bin/oobprofd|$OOBPROFD|" "$OOB_SRCDIR/deploy/oobprofd@.service" >"$W/oobprofd@n1.service"
	if systemd-analyze verify "$W/oobprofd@n1.service" >"$W/verify2.out" 2>&1 && ! grep -q . "$W/verify2.out"; then
		pass "systemd-analyze verify deploy/oobprofd@.service (instance n1): clean"
	else
		fail "node unit" "$(head -n 3 "$W/verify2.out")"
	fi
else
	skip "systemd unit" "systemd-analyze not installed"
fi
if command -v nginx >/dev/null 2>&1; then
	skip "nginx config" "nginx -t needs root and certificates; not run"
else
	skip "nginx config" "nginx not installed"
fi
