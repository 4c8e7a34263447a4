#!/bin/sh
# test_server_utf8.sh: bytes that are not UTF-8 in what a request says (a
# query value or key, the path) are refused with a 4xx and a JSON error
# body that parses, never a 500 (jansson cannot hold such a string, so an
# error echoing it used to fail to serialize). A query value holding a NUL
# byte (%00) is refused too: it must not silently cut a name short.
set -u
T=test_server_utf8
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_utf8 inputs || exit 0

srv_start "$W/data" || {
	fail start "server did not start"
	exit 0
}
curl -s --data-binary "@$ELF" "$SRV_URL/api/v1/binaries?name=prog" >"$W/bin.json"
head -c 200000 "$TRACE" >"$W/small.trace"
curl -s --data-binary "@$W/small.trace" "$SRV_URL/api/v1/traces?name=t" >"$W/tr.json"
TR=$(jq_py "$W/tr.json" 'j["id"]')

# bad NAME METHOD URL [curl args]: a 4xx whose body is JSON with an error
# code and message (the message itself valid UTF-8, since json.load parsed it).
bad() {
	_name=$1 _m=$2 _u=$3
	shift 3
	_got=$(http "$_m" "$SRV_URL$_u" "$W/resp" "$@")
	_c=$(jq_py "$W/resp" 'j["error"]["code"] + ": " + j["error"]["message"][:80]' 2>/dev/null)
	case $_got in
	4??)
		if [ -n "$_c" ]; then
			pass "$_name -> $_got ($_c)"
		else
			fail "$_name" "status $_got but the body is not a JSON error: $(head -c 200 "$W/resp")"
		fi
		;;
	*) fail "$_name" "got $_got ($(head -c 200 "$W/resp")), want a 4xx JSON error" ;;
	esac
}

bad "upload ?name=%FF%FE" POST "/api/v1/traces?name=%FF%FE" --data-binary "@$W/small.trace"
bad "binary ?name=%FF" POST "/api/v1/binaries?name=%FF" --data-binary "@$ELF"
bad "upload ?format=%FF" POST "/api/v1/traces?format=%FF" --data-binary "@$W/small.trace"
bad "unknown path with %FF" GET "/api/v1/nothing%FF"
bad "unknown path with a cut sequence %E2%82" GET "/api/v1/x%E2%82"
bad "list ?state=%FF" GET "/api/v1/jobs?state=%FF"
bad "list ?limit=%FF" GET "/api/v1/traces?limit=%FF"
bad "query key %FF" GET "/api/v1/traces?%FF=1"
bad "export ?to=%C0%80 (overlong NUL)" GET "/api/v1/jobs/1/export?to=%C0%80"
bad "top ?metric=%FF" GET "/api/v1/jobs/1/top?metric=%FF"
bad "upload ?name=ok%00.evil" POST "/api/v1/traces?name=ok%00.evil" --data-binary "@$W/small.trace"
bad "list ?state=done%00x" GET "/api/v1/jobs?state=done%00x"
if [ -n "$(curl -s "$SRV_URL/api/v1/traces" | python3 -c 'import json,sys; print(" ".join(t["name"] for t in json.load(sys.stdin)["traces"] if t["name"] != "t"))')" ]; then
	fail "nothing registered" "an upload with a bad name was accepted"
else
	pass "none of the refused uploads was registered"
fi
# Valid UTF-8 stays valid: a non-ASCII name is refused by the name rules
# (400, its message echoing the name intact), not by the UTF-8 check.
_got=$(http POST "$SRV_URL/api/v1/traces?name=caf%C3%A9" "$W/resp" --data-binary "@$W/small.trace")
if [ "$_got" = 400 ] && jq_py "$W/resp" 'j["error"]["message"]' | grep -q 'café'; then
	pass "a UTF-8 name (café) is echoed intact in the 400"
else
	fail "UTF-8 name" "got $_got ($(head -c 200 "$W/resp"))"
fi
# A refusal before the body lets the client send all of it and then reads
# the response: closing with the body unread made the client's next send
# reset the connection, losing the response (curl: exit 55, status 000).
python3 - "${SRV_URL##*:}" >"$W/drain.out" 2>&1 <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"POST /api/v1/binaries?name=%FF HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n")
sent = 0
try:
    for i in range(20):
        time.sleep(0.05)
        s.sendall(b"x" * 10000)
        sent += 10000
except OSError as e:
    print("send failed after", sent, "bytes:", e)
resp = b""
try:
    while chunk := s.recv(65536):
        resp += chunk
except OSError as e:
    print("recv failed:", e)
print("sent", sent, "status", resp.split(b" ")[1].decode() if resp.startswith(b"HTTP/") else "none")
EOF
if grep -q '^sent 200000 status 400$' "$W/drain.out"; then
	pass "a refused upload is read to its end, then answered (400)"
else
	fail "refused upload drained" "$(tr '\n' ' ' <"$W/drain.out")"
fi
_got=$(http GET "$SRV_URL/api/v1/traces/$TR" "$W/resp")
[ "$_got" = 200 ] && pass "the server still serves (GET /traces/$TR -> 200)" ||
	fail "still serving" "got $_got"
srv_stop || fail "clean shutdown" "exit status $?"
