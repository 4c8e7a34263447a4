#!/bin/sh
# test_server_http.sh: HTTP framing over a raw socket against a real oobprofd.
# A 405's Allow lists HEAD wherever GET is allowed (HEAD is served as GET);
# a request whose body length is given twice (two Content-Length headers,
# or Content-Length with Transfer-Encoding) is refused with a JSON 400
# before any route reads it, and registers nothing.
set -u
T=test_server_http
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_http || exit 0

srv_start "$W/data" || {
	fail start "server did not start"
	exit 0
}
PORT=${SRV_URL##*:}
python3 - "$PORT" "$T" <<'PY'
import json, socket, sys
port, T = int(sys.argv[1]), sys.argv[2]

def raw(req):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(req)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except OSError:
        pass
    s.close()
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and lines[0].startswith("HTTP/") else 0
    hdrs = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return status, hdrs, body

def check(name, ok, why):
    print(f"PASS: {T}: {name}" if ok else f"FAIL: {T}: {name}: {why}")

st, h, b = raw(b"DELETE /api/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
allow = [m.strip() for m in h.get("allow", "").split(",")]
check("405 Allow lists HEAD with GET (%s)" % h.get("allow"), st == 405 and "GET" in allow and "HEAD" in allow,
      f"status {st}, Allow {h.get('allow')!r}")
st, h, b = raw(b"HEAD /api/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
check("HEAD on a GET route -> 200, no body", st == 200 and not b, f"status {st}, body {b[:80]!r}")

def refused(name, req):
    st, h, b = raw(req)
    try:
        j = json.loads(b)
        code, msg = j["error"]["code"], j["error"]["message"]
    except Exception:
        code, msg = None, ""
    check(f"{name} -> 400 JSON ({code}: {msg})",
          st == 400 and code == "invalid_input" and "length is given twice" in msg,
          f"status {st}, body {b[:160]!r}")

refused("two Content-Length headers",
        b"POST /api/v1/traces?name=dup HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
        b"Content-Length: 7\r\nConnection: close\r\n\r\nhello12")
refused("Content-Length with Transfer-Encoding: chunked",
        b"POST /api/v1/traces?name=te HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
st, h, b = raw(b"GET /api/v1/traces HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
check("nothing registered, still serving", st == 200 and json.loads(b)["traces"] == [],
      f"status {st}, {b[:160]!r}")
PY
srv_stop || fail "clean shutdown" "exit status $?"
