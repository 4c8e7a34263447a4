#!/bin/sh
# GET /api/v1/jobs/{id}/annotate on the real oobprofd: a job run with
# options.pcs answers the source and disassembly views with the same numbers
# as `oobprof annotate --json` (which test_cli_annotate.sh checks against
# QEMU's own counts, addr2line and objdump), instruction text included (the
# server finds the job's stored binaries by build-id); its pprof export is at
# the exact pc, the CLI's bytes; the refusals: no fn (400), an unknown
# function (404), a job without options.pcs (409).
set -u
T=test_server_annotate
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
W=$OOB_BUILDDIR/tests/out/server_annotate
rm -rf "$W"
mkdir -p "$W"
CLI=$OOB_BUILDDIR/oobprof
G=$OOB_BUILDDIR/tests/gen/progs
if [ ! -x "$OOBPROFD" ] || [ ! -x "$CLI" ]; then
	skip all "oobprofd or oobprof not built"
	exit 0
fi
for f in "$G/inline" "$G/inline.oobt"; do
	[ -e "$f" ] || { skip all "missing $f"; exit 0; }
done
srv_start "$W/data" || {
	fail start "server did not start"
	exit 0
}
curl -s -X POST "$SRV_URL/api/v1/binaries?name=inline" --data-binary "@$G/inline" >"$W/bin.json"
curl -s -X POST "$SRV_URL/api/v1/traces?name=inline" --data-binary "@$G/inline.oobt" >"$W/tr.json"
BIN=$(jq_py "$W/bin.json" 'j["id"]')
TR=$(jq_py "$W/tr.json" 'j["id"]')
run_job() { # PCS: the job id
	curl -s -X POST "$SRV_URL/api/v1/jobs" \
		-d "{\"trace\": $TR, \"binaries\": [$BIN], \"options\": {\"pcs\": $1}}" >"$W/job.json"
	jq_py "$W/job.json" 'j["id"]'
}
JOB=$(run_job true)
PLAIN=$(run_job false)
for j in "$JOB" "$PLAIN"; do
	state=$(wait_job "$j" 120)
	[ "$state" = done ] || { fail job "job $j ended $state"; srv_stop; exit 0; }
done

# ---- the views: the CLI's numbers, line by line and pc by pc ----
for fn in hash_block main; do
	for view in source disasm; do
		st=$(http GET "$SRV_URL/api/v1/jobs/$JOB/annotate?fn=$fn&view=$view" "$W/api.json")
		"$CLI" annotate "$fn" --$view --json --elf "$G/inline" "$G/inline.oobt" >"$W/cli.json" 2>/dev/null
		if [ "$st" = 200 ] && python3 - "$W/api.json" "$W/cli.json" "$view" <<'PY'; then
import json, sys
a, c, view = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
key = "lines" if view == "source" else "insns"
def rows(d):
    f = d["functions"]
    assert len(f) == 1, len(f)
    cols = ("file", "line", "instructions", "calls") if view == "source" else ("pc", "instructions", "calls", "line", "asm")
    return f[0]["instructions"], f[0]["calls"], [tuple(r.get(k) for k in cols) for r in f[0][key]]
ra, rc = rows(a), rows(c)
if ra != rc or not ra[2]:
    print("  api %s\n  cli %s" % (ra, rc))
    sys.exit(1)
PY
			pass "$fn $view: the CLI's numbers"
		else
			fail "$fn $view" "status $st: $(head -c 300 "$W/api.json")"
		fi
	done
done

# ---- pprof at the exact pc: the CLI's bytes (export --pcs), whose
# per-line numbers test_export_pprof_list.sh checks ----
st=$(http GET "$SRV_URL/api/v1/jobs/$JOB/export/pprof" "$W/job.pb.gz")
"$CLI" export --to pprof --pcs --elf "$G/inline" "$G/inline.oobt" -o "$W/cli.pb.gz" 2>/dev/null
if [ "$st" = 200 ] && cmp -s "$W/job.pb.gz" "$W/cli.pb.gz"; then
	pass "pprof: exact pc, the bytes of oobprof export --pcs"
else
	fail pprof "status $st: $(cmp "$W/job.pb.gz" "$W/cli.pb.gz" 2>&1 | head -c 200)"
fi

# ---- refusals ----
expect() { # CASE STATUS URL
	st=$(http GET "$SRV_URL$3" "$W/err.json")
	if [ "$st" = "$2" ] && grep -q '"error"' "$W/err.json"; then
		pass "$1: $2"
	else
		fail "$1" "status $st, expected $2: $(head -c 200 "$W/err.json")"
	fi
}
expect "no fn" 400 "/api/v1/jobs/$JOB/annotate"
expect "bad view" 400 "/api/v1/jobs/$JOB/annotate?fn=main&view=tree"
expect "unknown function" 404 "/api/v1/jobs/$JOB/annotate?fn=no_such_fn"
expect "job without pcs" 409 "/api/v1/jobs/$PLAIN/annotate?fn=main"
srv_stop
