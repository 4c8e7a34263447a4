#!/usr/bin/env python3
"""Socket-level helpers of tests/load/test_load.sh (127.0.0.1 only).

  load.py idle PORT N          N idle connections (half of them with a
                               request line sent, no headers end); prints
                               how many stay open and /health's worst latency
                               over 20 fresh connections meanwhile (ms)
  load.py flames PORT PATH N   N concurrent GETs of PATH, released at once;
                               prints "statuses lengths seconds"
  load.py keepalive PORT PATH  two GETs on one connection; prints the two
                               statuses and the Connection header
  load.py closed PORT SECS     opens one idle connection; prints the seconds
                               until the server closed it (or "open")
  load.py perip PORT N         opens N idle connections, then one more with a
                               request: prints "accepted" or "refused"
"""
import http.client
import socket
import sys
import threading
import time


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def still_open(s):
    s.setblocking(False)
    try:
        return s.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def health_ms(port):
    t = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/api/v1/health")
    r = c.getresponse()
    r.read()
    c.close()
    if r.status != 200:
        raise RuntimeError("health %d" % r.status)
    return (time.monotonic() - t) * 1000


def idle(port, n):
    socks = []
    for i in range(n):
        s = connect(port)
        if i % 2:
            s.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")
        socks.append(s)
    time.sleep(0.5)
    worst = max(health_ms(port) for _ in range(20))
    opened = sum(still_open(s) for s in socks)
    for s in socks:
        s.close()
    print(opened, "%.1f" % worst)


def flames(port, path, n):
    barrier = threading.Barrier(n)
    out = [None] * n

    def one(i):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=110)
        c.connect()
        barrier.wait()
        c.request("GET", path)
        r = c.getresponse()
        out[i] = (r.status, len(r.read()))
        c.close()

    t = time.monotonic()
    th = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    dt = time.monotonic() - t
    print(",".join(sorted({str(o[0]) if o else "none" for o in out})),
          ",".join(sorted({str(o[1]) if o else "none" for o in out})), "%.2f" % dt)


def keepalive(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path)
    r1 = c.getresponse()
    r1.read()
    sock = c.sock
    c.request("GET", path)
    r2 = c.getresponse()
    r2.read()
    same = sock is not None and c.sock is sock
    print(r1.status, r2.status, r1.getheader("Connection", "-"), "same" if same else "new")


def closed(port, secs):
    s = connect(port)
    s.settimeout(secs)
    t = time.monotonic()
    try:
        data = s.recv(1)
        print("%.1f" % (time.monotonic() - t) if data == b"" else "data")
    except socket.timeout:
        print("open")
    except OSError:
        print("%.1f" % (time.monotonic() - t))


def perip(port, n):
    socks = [connect(port) for _ in range(n)]
    time.sleep(0.3)
    try:
        ms = health_ms(port)
        print("accepted %.0f" % ms)
    except (OSError, RuntimeError, http.client.HTTPException):
        print("refused")
    for s in socks:
        s.close()


if __name__ == "__main__":
    cmd, port = sys.argv[1], int(sys.argv[2])
    if cmd == "idle":
        idle(port, int(sys.argv[3]))
    elif cmd == "flames":
        flames(port, sys.argv[3], int(sys.argv[4]))
    elif cmd == "keepalive":
        keepalive(port, sys.argv[3])
    elif cmd == "closed":
        closed(port, float(sys.argv[3]))
    elif cmd == "perip":
        perip(port, int(sys.argv[3]))
