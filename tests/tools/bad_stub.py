#!/usr/bin/env python3
"""bad_stub.py MODE PORT: a GDB stub that misbehaves, for test_sample_rsp.sh.

Serves one connection on 127.0.0.1:PORT, then exits (or after 30 s):
  close    closes the socket at once
  badsum   acks every packet and answers it with a bad checksum, forever
  garbage  acks every packet and answers bytes that are never a packet
  silent   reads and never answers (not even an ack)
"""
import socket
import sys
import time

mode, port = sys.argv[1], int(sys.argv[2])
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(1)
srv.settimeout(30)
conn, _ = srv.accept()
conn.settimeout(1)
end = time.time() + 30
if mode == "close":
    conn.close()
    sys.exit(0)
while time.time() < end:
    try:
        data = conn.recv(4096)
    except socket.timeout:
        continue
    except OSError:
        break
    if not data:
        break
    if mode == "silent" or (b"#" not in data and b"-" not in data):
        continue  # a packet or a resend request gets an answer
    try:
        if mode == "badsum":
            conn.sendall(b"+$OK#00")
        else:
            conn.sendall(b"+" + b"z" * 8192)
    except OSError:
        break
conn.close()
