#!/bin/sh
# test_server_openapi.sh: api/openapi.yaml describes exactly the routes the
# server registers (oobprofd --print-routes), in both directions, and every
# documented route answers with its documented kind of status on a live
# server (no route in the table that the server does not really route).
set -u
T=test_server_openapi
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_openapi || exit 0
"$OOBPROFD" --print-routes >"$W/routes.txt" || {
	fail "print-routes" "oobprofd --print-routes failed"
	exit 0
}
python3 - "$OOB_SRCDIR/api/openapi.yaml" "$W/routes.txt" <<'EOF'
import re, sys
T = "test_server_openapi"
spec, routes = sys.argv[1:]
try:
    import yaml
    doc = yaml.safe_load(open(spec))
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops
                  if m in ("get", "put", "post", "delete", "patch", "head")}
    how = "PyYAML"
except ImportError:
    # The paths section by indentation: "  /path:" then "    method:".
    documented, path, inside = set(), None, False
    for line in open(spec):
        if re.match(r"^paths:", line):
            inside = True
            continue
        if inside and re.match(r"^\S", line):
            inside = False
        m = re.match(r"^  (/\S*):\s*$", line)
        if inside and m:
            path = m.group(1)
        m = re.match(r"^    (get|put|post|delete|patch|head):", line)
        if inside and path and m:
            documented.add((m.group(1).upper(), path))
    how = "indentation"
served = {tuple(l.split()) for l in open(routes) if l.strip()}
missing = sorted(served - documented)
extra = sorted(documented - served)
if missing:
    print("FAIL: %s: every served route is documented: undocumented: %s" % (T, missing))
else:
    print("PASS: %s: every served route is documented (%d routes)" % (T, len(served)))
if extra:
    print("FAIL: %s: every documented route is served: not served: %s" % (T, extra))
else:
    print("PASS: %s: every documented route is served (%d operations, read with %s)" % (T, len(documented), how))
EOF

# Each route of the table, called on a live server with ids that do not
# exist, is routed: it answers JSON with a status other than 405 and other
# than 404 "no such route".
srv_start "$W/data" || {
	fail "live routes" "server did not start"
	exit 0
}
bad=0
n=0
while read -r method pattern; do
	path=$(echo "$pattern" | sed 's/{id}/987654/; s/{name}/speedscope/')
	[ "$pattern" = "/{name}" ] && path=/no-such-file.js
	case $method in
	POST | PUT) st=$(http "$method" "$SRV_URL$path" "$W/resp" --data-binary 'x') ;;
	*) st=$(http "$method" "$SRV_URL$path" "$W/resp") ;;
	esac
	n=$((n + 1))
	if [ "$st" = 405 ] || grep -q '"no such route' "$W/resp" 2>/dev/null || [ "$st" = 000 ]; then
		echo "route $method $pattern -> $st: $(head -c 200 "$W/resp")" >>"$W/unrouted"
		bad=$((bad + 1))
	fi
done <"$W/routes.txt"
if [ $bad -eq 0 ]; then
	pass "all $n routes are routed by the live server"
else
	fail "live routes" "$bad of $n not routed: $(head -n 3 "$W/unrouted")"
fi
# The format table (GET /api/v1/formats) and the documentation agree: every
# format enum of openapi.yaml (Trace.format, the upload's ?format=) is "auto"
# then the table's names, in table order. A format added to the table but not
# to the documentation fails here, and the other way round.
st=$(http GET "$SRV_URL/api/v1/formats" "$W/formats.json")
if [ "$st" != 200 ]; then
	fail "format enums" "GET /api/v1/formats -> $st: $(head -c 200 "$W/formats.json")"
else
	python3 - "$OOB_SRCDIR/api/openapi.yaml" "$W/formats.json" <<'EOF2'
import json, re, sys
T = "test_server_openapi"
spec, got = sys.argv[1:]
table = json.load(open(got))
names = ["auto"] + [f["name"] for f in table["formats"]]
# Every "format: {... enum: [...]}" line and every "name: format" parameter's
# schema line: read as text, so that PyYAML is not needed.
lines = open(spec).read().split("\n")
enums = []
for i, line in enumerate(lines):
    m = re.search(r"\benum: \[([^\]]*)\]", line)
    if not m:
        continue
    if re.match(r"^\s*format:", line) or (i >= 2 and "name: format" in lines[i - 2]):
        enums.append((i + 1, [x.strip() for x in m.group(1).split(",")]))
bad = [(n, e) for n, e in enums if e != names]
ok = len(enums) >= 2 and not bad and table.get("default") == "auto"
ok = ok and all(isinstance(f.get("description"), str) and f["description"]
                and isinstance(f.get("extensions"), list)
                and isinstance(f.get("readable"), bool)
                and isinstance(f.get("detected"), bool) for f in table["formats"])
if ok:
    print("PASS: %s: format enums of openapi.yaml (%d) = auto + GET /api/v1/formats (%s)"
          % (T, len(enums), ", ".join(names[1:])))
else:
    print("FAIL: %s: format enums: served %s; openapi.yaml lines %s" % (T, names, bad or enums))
EOF2
fi
# The viewer's list (readable formats) matches what the CLI reads: the
# names `oobprof --help` gives for --format.
help=$("$OOB_BUILDDIR/oobprof" --help 2>&1 | sed -n '/--format F/,/default: detect/p' | tr -d '\n' |
	sed 's/.*trace format (//; s/).*//; s/  */ /g')
readable=$(python3 -c 'import json,sys; print(", ".join(["auto"] + [f["name"] for f in json.load(open(sys.argv[1]))["formats"] if f["readable"]]))' "$W/formats.json" 2>/dev/null)
if [ -n "$help" ] && [ "$help" = "$readable" ]; then
	pass "readable formats = oobprof --help's --format list ($help)"
else
	fail "readable formats" "oobprof --help lists '$help', GET /api/v1/formats '$readable'"
fi
# The document itself is served, byte for byte, with a YAML type.
ct=$(curl -s -o "$W/served.yaml" -w '%{http_code} %{content_type}' "$SRV_URL/api/v1/openapi.yaml")
if [ "$ct" = "200 application/yaml; charset=utf-8" ] && cmp -s "$W/served.yaml" "$OOB_SRCDIR/api/openapi.yaml"; then
	pass "GET /api/v1/openapi.yaml serves api/openapi.yaml ($(wc -c <"$W/served.yaml") bytes)"
else
	fail "GET /api/v1/openapi.yaml" "$ct; differs from api/openapi.yaml: $(cmp "$W/served.yaml" "$OOB_SRCDIR/api/openapi.yaml" 2>&1)"
fi
srv_stop || fail "clean shutdown" "exit status $? (sanitizer report in $W/data.log?)"
