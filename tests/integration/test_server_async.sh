#!/bin/sh
# Views built from the stack-event log (timeline, window flame graph and
# table, off-CPU, critical path, an evented export) answered
# asynchronously: with "Prefer: respond-async, wait=0" (RFC 7240) the first
# request is answered 202 with the build's progress (0 < done <= total),
# Retry-After and Preference-Applied; the same request made again gets the
# view, and that view is byte for byte what a plain request answers on a
# server that never built it; an export (a body in a file) goes to one
# request and is built again for the next. A build that fails after its
# 202 tells its error to the next request, once; a view that reads no
# events answers 200 at once; a wait long enough answers 200; a server
# stopped while a build runs stops cleanly (sanitizers, leaks included,
# make its exit status non-zero). On the Spike full-system run (Linux,
# /init, /prog).
set -u
T=test_server_async
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_async || exit 0
srv_start "$W/data" --workers 1 || { fail start "server did not start"; exit 0; }
spike_system_job || { srv_stop; exit 0; }
job=$JOB
J=$SRV_URL/api/v1/jobs/$job

# async NAME QUERY [WAIT]: the first answer (headers and body) as NAME.h0 and
# NAME.0, then polls until it is not 202: NAME.h and NAME.body; prints the
# first status and the last.
async() {
	curl -s -D "$W/$1.h0" -o "$W/$1.0" -H "Prefer: respond-async, wait=${3:-0}" "$J/$2"
	i=0
	while :; do
		code=$(curl -s -D "$W/$1.h" -o "$W/$1.body" -w '%{http_code}' \
			-H "Prefer: respond-async, wait=${3:-0}" "$J/$2")
		[ "$code" != 202 ] && break
		i=$((i + 1))
		[ $i -gt 600 ] && break
		sleep 0.2
	done
	echo "$(sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' "$W/$1.h0") $code"
}

# a window in the middle of the run, from the timeline's extent
http GET "$J/timeline?min_duration=1000000000000" "$W/extent.json" >/dev/null
win=$(jq_py "$W/extent.json" '"from=%d&to=%d" % (j["start"] + (j["end"] - j["start"]) // 3, j["start"] + (j["end"] - j["start"]) // 2)')
views="timeline timeline?detail=exact&min_duration=0
wflame flamegraph?$win
wtop top?$win&limit=50
offcpu offcpu
folded offcpu?view=folded
path path?task=1
perfetto export/perfetto"
echo "$views" | while read -r name q; do
	echo "$name $(async "$name" "$q")" >>"$W/codes"
done
# an export is not kept once taken: asked again, it is built again
again=$(curl -s -o /dev/null -w '%{http_code}' -H 'Prefer: respond-async, wait=0' "$J/export/perfetto")

# the same views, plain, from a server that never built them
srv_stop
srv_start "$W/data" --workers 1 || { fail restart "server did not start"; exit 0; }
J=$SRV_URL/api/v1/jobs/$job
echo "$views" | while read -r name q; do
	http GET "$J/$q" "$W/$name.plain" >"$W/$name.plain.code"
done

# a failure after the 202: the path of a process in the run's first record,
# before its first interval (an interval is [start, end, priv, process])
http GET "$J/timeline?detail=exact&min_duration=0" "$W/exact.json" >/dev/null
nw=$(jq_py "$W/exact.json" '(lambda iv: "task=%d&from=%d&to=%d" % (j["processes"][max(set(i[3] for i in iv) - {iv[0][3]}, key=lambda k: min(i[0] for i in iv if i[3] == k))]["pid"], iv[0][0], iv[0][0] + 1))(j["harts"][0]["intervals"])')
fa=$(async fail "path?$nw")
fb=$(curl -s -o "$W/fail.again" -w '%{http_code}' -H 'Prefer: respond-async, wait=0' "$J/path?$nw")
# views that read no events, and a wait long enough
q1=$(curl -s -o "$W/quick.json" -w '%{http_code}' -H 'Prefer: respond-async, wait=0' "$J/flamegraph")
q2=$(curl -s -o "$W/long.json" -w '%{http_code}' -H 'Prefer: respond-async, wait=600' "$J/timeline?detail=exact&min_duration=7")
q3=$(curl -s -o "$W/plain.json" -w '%{http_code}' "$J/offcpu?view=flamegraph")
# a stop while a build runs (answered 202 at its first read)
curl -s -o /dev/null -H 'Prefer: respond-async, wait=0' "$J/path?task=1&top=3"
srv_stop
stop=$?

python3 - "$W" "$views" "$fa $fb $q1 $q2 $q3 $stop $again" <<'PY'
import json, sys
T = "test_server_async"
W, views, rest = sys.argv[1], sys.argv[2].splitlines(), sys.argv[3].split()
def check(case, ok, detail):
    print(("PASS" if ok else "FAIL") + ": %s: %s (%s)" % (T, case, detail))
def headers(path):
    h = {}
    for line in open(path, encoding="latin-1").read().splitlines()[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            h[k.strip().lower()] = v.strip()
    return h
codes = dict((l.split()[0], l.split()[1:]) for l in open(W + "/codes").read().splitlines())
for v in views:
    name = v.split()[0]
    first, last = codes[name]
    h0 = headers(W + "/%s.h0" % name)
    try:
        p = json.load(open(W + "/%s.0" % name))
    except ValueError:
        p = {}
    check(name + ": 202 first, with the build's progress",
          first == "202" and p.get("state") == "building" and
          0 < p.get("done", 0) <= p.get("total", 0) and p.get("unit") == "bytes of stack events" and
          h0.get("retry-after") == "1" and h0.get("preference-applied") == "respond-async",
          "%s %s, Retry-After %s" % (first, {k: p.get(k) for k in ("done", "total")},
                                      h0.get("retry-after")))
    body = open(W + "/%s.body" % name, "rb").read()
    plain = open(W + "/%s.plain" % name, "rb").read()
    pc = open(W + "/%s.plain.code" % name).read().strip()
    check(name + ": the view polled for is the plain request's, byte for byte",
          last == "200" and pc == "200" and body == plain and len(body) > 20,
          "%s %d bytes, plain %s %d bytes" % (last, len(body), pc, len(plain)))
fa0, fa1, fb, q1, q2, q3, stop, again = rest
try:
    err = json.load(open(W + "/fail.body"))["error"]["message"]
except (ValueError, KeyError):
    err = ""
check("a build failing after its 202 tells the next request its error, once",
      fa0 == "202" and fa1 == "404" and "did not run in the window" in err and fb == "202",
      "%s, then %s: %s; then %s" % (fa0, fa1, err, fb))
check("an export taken is not kept: asked again, it is built again", again == "202", again)
check("a view that reads no events answers 200 at once", q1 == "200", q1)
check("a wait long enough answers 200", q2 == "200", q2)
check("without Prefer: 200", q3 == "200", q3)
check("stopped while a build runs: a clean exit", stop == "0", "exit %s" % stop)
PY
