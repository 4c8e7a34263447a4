#!/bin/sh
# test_server_pycode.sh: Python frames in server jobs (a job's "pycode", an
# upload of format pycode; RECONSTRUCTION.md 17), on test_python.sh's run:
# pyprog.py under the cross-built CPython 3.11, traced by the plugin
# (tests/gen/python, gen-python.sh), and the same code map (pymap.sh).
#   upload              the map is accepted as format pycode, read whole:
#                       records = its code objects; GET /api/v1/formats
#                       lists pycode as neither readable nor detected
#   with pycode         the job's folded stacks = `oobprof fold --pycode`
#                       of the same inputs, byte for byte (test_python.sh
#                       checks the CLI's py: frames against CPython's
#                       profiling hook)
#   without pycode      no py: frame; = `oobprof fold` byte for byte
#   refused             a map bad at one line: 400 naming the upload and
#                       the line; a job whose pycode is an events upload:
#                       400; one of no upload: 404; the server exits clean
#                       (sanitizer reports make srv_stop fail)
set -u
T=test_server_pycode
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_pycode || exit 0
CLI=$OOB_BUILDDIR/oobprof
HOST_PYTHON=${BUILD_PYTHON:-/usr/bin/python3.11}
G=$GEN/python
PY=$G/bin/python3.11
TR=$G/pyprog.oobt
if [ ! -s "$TR" ] || [ ! -x "$PY" ]; then
	skip all "python trace not generated (see tests/out/gen-fixtures.log)"
	exit 0
fi
if [ ! -x "$CLI" ] || [ ! -x "$HOST_PYTHON" ]; then
	skip all "no oobprof CLI or no $HOST_PYTHON (the code map's compiler)"
	exit 0
fi
MAP=$W/pyprog.pymap
if ! sh "$OOB_SRCDIR/tests/tools/pymap.sh" "$G" "$HOST_PYTHON" >"$MAP" 2>"$W/map.err"; then
	fail map "pymap.sh: $(head -c 300 "$W/map.err")"
	exit 0
fi
for v in py plain; do
	set -- fold --elf "$PY" "$TR"
	[ $v = py ] && set -- "$@" --pycode "$MAP"
	if ! "$CLI" "$@" >"$W/cli-$v.folded" 2>"$W/cli-$v.err"; then
		fail "cli $v" "oobprof $*: $(head -c 300 "$W/cli-$v.err")"
		exit 0
	fi
done
srv_start "$W/data" --workers 2 || {
	fail start "server did not start"
	exit 0
}

upload() { # file name [args] -> the response in $W/up.json, prints the status
	http PUT "$SRV_URL/api/v1/traces?name=$2${3:+&$3}" "$W/up.json" -T "$1"
}
created_id() { # status -> the upload's id, or a FAIL line and 1
	[ "$1" = 201 ] && jq_py "$W/up.json" 'j["id"]' && return 0
	fail upload "status $1: $(head -c 300 "$W/up.json")" >&2
	return 1
}
job_folded() { # body out -> the job's folded stacks in out
	curl -s -d "$1" "$SRV_URL/api/v1/jobs" >"$W/job-new.json"
	_j=$(jq_py "$W/job-new.json" 'j.get("id")')
	_s=$(wait_job "$_j" 300)
	[ "$_s" = done ] || {
		echo "job $_j: $_s: $(head -c 300 "$W/job.json")"
		return 1
	}
	http GET "$SRV_URL/api/v1/jobs/$_j/folded" "$2" >/dev/null
}

curl -s -T "$PY" "$SRV_URL/api/v1/binaries?name=python3.11" >"$W/bin.json"
b=$(jq_py "$W/bin.json" 'j["id"]')
t=$(created_id "$(upload "$TR" pyprog.oobt)") &&
	m=$(created_id "$(upload "$MAP" pyprog.pymap format=pycode)") &&
	ev=$(printf '{"type": "exec", "pid": 1}\n' >"$W/ev.jsonl" &&
		created_id "$(upload "$W/ev.jsonl" ev.jsonl format=events)") || {
	srv_stop
	exit 0
}

# ---- the upload ----
ncode=$(grep -c '^code ' "$MAP")
curl -s "$SRV_URL/api/v1/traces/$m" >"$W/map.json"
got=$(jq_py "$W/map.json" '[j.get(k) for k in ("format", "records", "state")]')
[ "$got" = "[\"pycode\", $ncode, \"ready\"]" ] &&
	pass "map uploaded as pycode ($ncode code objects, $(wc -c <"$MAP") bytes)" ||
	fail "map upload" "format, records, state $got, expected pycode $ncode ready"
curl -s "$SRV_URL/api/v1/formats" >"$W/formats.json"
got=$(jq_py "$W/formats.json" \
	'[[f["readable"], f["detected"]] for f in j["formats"] if f["name"] == "pycode"]')
[ "$got" = "[[false, false]]" ] && pass "formats: pycode, neither readable nor detected" ||
	fail formats "pycode row $got"

# ---- jobs with and without the map ----
if why=$(job_folded "{\"trace\": $t, \"binaries\": [$b], \"pycode\": $m}" "$W/py.folded"); then
	n=$(grep -c 'py:' "$W/py.folded")
	if [ "$n" -gt 0 ] && cmp -s "$W/py.folded" "$W/cli-py.folded"; then
		pass "job with pycode = oobprof fold --pycode ($(wc -l <"$W/py.folded") stacks, $n with py: frames)"
	else
		fail "job with pycode" "$n stacks with py: frames; cmp $W/py.folded $W/cli-py.folded"
	fi
else
	fail "job with pycode" "$why"
fi
if why=$(job_folded "{\"trace\": $t, \"binaries\": [$b], \"pycode\": null}" "$W/plain.folded"); then
	if ! grep -q 'py:' "$W/plain.folded" && cmp -s "$W/plain.folded" "$W/cli-plain.folded"; then
		pass "job without pycode: no py: frame, = oobprof fold ($(wc -l <"$W/plain.folded") stacks)"
	else
		fail "job without pycode" "$(grep -c 'py:' "$W/plain.folded") py: stacks; cmp $W/plain.folded $W/cli-plain.folded"
	fi
else
	fail "job without pycode" "$why"
fi

# ---- refused ----
sed '5s/.*/i bogus/' "$MAP" >"$W/bad.pymap"
st=$(upload "$W/bad.pymap" bad.pymap format=pycode)
msg=$(jq_py "$W/up.json" 'j["error"]["message"]')
want='code map "bad.pymap": body:5: unknown line'
[ "$st" = 400 ] && [ "$msg" = "$want" ] && pass "bad map: 400, $msg" ||
	fail "bad map" "status $st, message $msg, expected 400, $want"
check_ref() { # case id status message
	st=$(http POST "$SRV_URL/api/v1/jobs" "$W/ref.json" \
		-d "{\"trace\": $t, \"binaries\": [$b], \"pycode\": $2}")
	msg=$(jq_py "$W/ref.json" 'j["error"]["message"]')
	[ "$st" = "$3" ] && [ "$msg" = "$4" ] && pass "$1: $st, $msg" ||
		fail "$1" "status $st, message $msg, expected $3, $4"
}
check_ref "pycode of an events upload" "$ev" 400 "pycode: upload $ev is a events trace, not a \
pycode file (upload it with format=pycode)"
check_ref "pycode of no upload" 999999 404 "pycode: no trace with id 999999"

srv_stop && pass "server exits clean" || fail stop "exit status $?: $(tail -n 5 "$W/data.log")"
exit 0
