#!/bin/sh
# test_export_pprof_harts_api.sh: the pprof export of a two-hart job through
# the API (GET /api/v1/jobs/{id}/export/pprof on the real oobprofd) carries
# the hart of each sample as a label, in both forms: per context (a job
# without options.pcs: each context split per hart by a replay of the job's
# own stack events) and at the exact pc (options.pcs).
#
# Ground truth, none of it from oobprof: the records of each hart among the
# profile's total, counted by tests/tools/oobt-decode.py --harts (a decoder
# of its own, from docs/formats/OOBT.md). The two-hart Linux boot
# (tests/gen/linux/smp2) is cut with options.max_insns, as
# test_export_pprof_harts.sh cuts it with --max-insns for the CLI (whose
# per-hart labels it checks the same way); the server's files must also be
# the CLI's, byte for byte.
set -u
T=test_export_pprof_harts_api
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
W=$OOB_BUILDDIR/tests/out/export_pprof_harts_api
S=$GEN/linux/smp2
CLI=$OOB_BUILDDIR/oobprof
CHECK=$OOB_SRCDIR/tests/tools/export-check.py
N=${HARTS_MAX_INSNS:-40000000}
USERS="init calls sort syscalls signals waits"
rm -rf "$W"
mkdir -p "$W"
if [ ! -x "$OOBPROFD" ] || [ ! -x "$CLI" ]; then
	skip all "oobprofd or oobprof not built"
	exit 0
fi
if [ ! -s "$S/boot.oobt" ] || [ ! -s "$S/vmlinux" ] || [ ! -e "$GEN/linux/init" ]; then
	skip all "no $S/boot.oobt (gen-linux did not run)"
	exit 0
fi
srv_start "$W/data" || {
	fail start "server did not start"
	exit 0
}

# Binaries under their file names, the trace under the name the CLI is
# given, so that both write the same names.
bins=
set -- --elf "$S/vmlinux"
for e in "$S/vmlinux" $(for u in $USERS; do echo "$GEN/linux/$u"; done); do
	curl -s -X POST "$SRV_URL/api/v1/binaries?name=$(basename "$e")" --data-binary "@$e" >"$W/bin.json"
	bins="$bins${bins:+, }$(jq_py "$W/bin.json" 'j["id"]')"
done
for u in $USERS; do
	set -- "$@" --elf "$GEN/linux/$u"
done
curl -s -X POST "$SRV_URL/api/v1/traces?name=boot" --data-binary "@$S/boot.oobt" >"$W/tr.json"
TR=$(jq_py "$W/tr.json" 'j["id"]')

# form: ctx (a job without pcs) or pcs (options.pcs); the CLI's flag
for form in ctx pcs; do
	flag='' opt=''
	[ $form = pcs ] && flag=--pcs opt=', "pcs": true'
	curl -s -X POST "$SRV_URL/api/v1/jobs" \
		-d "{\"trace\": $TR, \"binaries\": [$bins], \"options\": {\"max_insns\": $N$opt}}" \
		>"$W/job.$form.json"
	JOB=$(jq_py "$W/job.$form.json" 'j["id"]')
	state=$(wait_job "$JOB" 300)
	if [ "$state" != "done" ]; then
		fail "$form: job" "job $JOB ended $state: $(head -c 300 "$W/job.json")"
		continue
	fi
	st=$(http GET "$SRV_URL/api/v1/jobs/$JOB/export/pprof" "$W/api.$form.pb.gz")
	# shellcheck disable=SC2086
	"$CLI" export --to pprof $flag --name boot --max-insns "$N" "$@" "$S/boot.oobt" \
		-o "$W/cli.$form.pb.gz" 2>"$W/cli.$form.err"
	if [ "$st" = 200 ] && cmp -s "$W/api.$form.pb.gz" "$W/cli.$form.pb.gz"; then
		pass "$form: 200, the same bytes as oobprof export --to pprof${flag:+ $flag} ($(wc -c <"$W/api.$form.pb.gz") bytes)"
	else
		fail "$form: the CLI's bytes" "status $st; $(cmp "$W/api.$form.pb.gz" "$W/cli.$form.pb.gz" 2>&1 | head -c 200)"
	fi
	if ! python3 "$CHECK" pprof-harts "$W/api.$form.pb.gz" >"$W/harts.$form.json"; then
		fail "$form: pprof-harts" "export-check.py could not read the API's file"
		continue
	fi
	n=$(jq_py "$W/harts.$form.json" 'sum(v[j["types"].index("instructions")] for v in j["per_hart"].values())')
	# the same cut gives the same total: one decode serves both forms
	[ -s "$W/truth.$n" ] ||
		python3 "$OOB_SRCDIR/tests/tools/oobt-decode.py" --harts "$n" "$S/boot.oobt" >"$W/truth.$n" ||
		fail "$form: oobt-decode.py --harts" "exit $?"
	cp "$W/truth.$n" "$W/truth.$form"
	if python3 - "$W/harts.$form.json" "$W/truth.$form" "$n" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
truth = dict(l.split() for l in open(sys.argv[2]))
k = d["types"].index("instructions")
got = dict((h, str(v[k])) for h, v in d["per_hart"].items())
ok = got == truth and len(truth) == 2 and d["unlabelled"] == 0 and d["split_stacks"] > 0
print("  %s records; per hart: pprof %s, oobt-decode.py %s; %d samples, %d without a hart "
      "label, %d stacks on both harts" % (sys.argv[3], sorted(got.items()), sorted(truth.items()),
      d["samples"], d["unlabelled"], d["split_stacks"]))
sys.exit(0 if ok else 1)
PY
		pass "$form: instructions per hart label = the trace's records per hart"
	else
		fail "$form: per hart labels" "see above"
	fi
done
if [ -s "$W/harts.ctx.json" ] && [ -s "$W/harts.pcs.json" ]; then
	if python3 - "$W/harts.ctx.json" "$W/harts.pcs.json" <<'PY'; then
import json, sys
c, p = (json.load(open(f)) for f in sys.argv[1:])
calls = lambda d: dict((h, v[d["types"].index("calls")]) for h, v in d["per_hart"].items())
print("  calls per hart: per context %s, per pc %s" % (sorted(calls(c).items()), sorted(calls(p).items())))
sys.exit(0 if calls(c) == calls(p) and sum(calls(c).values()) > 0 else 1)
PY
		pass "calls per hart label: per context = per pc"
	else
		fail "calls per hart" "see above"
	fi
fi
srv_stop || fail stop "the server exited non-zero (sanitizer report?): $(tail -n 5 "$W/data.log")"
