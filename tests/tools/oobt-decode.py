#!/usr/bin/env python3
"""An independent decoder of oobt traces, written from docs/formats/OOBT.md alone.

  oobt-decode.py TRACE   prints "0x<pc> 0x<insn>" per record (insn as 4 hex
                         digits for a compressed instruction, else 8), the
                         same lines as the QEMU plugin's text=FILE output
  oobt-decode.py --sp TRACE   prints "0x<pc> 0x<sp>" per record instead: the
                         stack pointer before the record ran (the last REG x2
                         extra of an earlier record of its hart), "-" if none
  oobt-decode.py --harts N TRACE   prints "<hart> <records>" per hart for the
                         first N records of the trace (all of them if fewer):
                         reads only as much of the body as those need

It shares no code with core/trace/oobt.c: it checks that the C writer follows the
written format. Needs python3 and the lz4 command (for the LZ4-framed body).
Exit status 2 with a message on malformed input.
"""
import struct
import subprocess
import sys

MAGIC = b"\x89OOBT\r\n\x1a"


def die(msg):
    sys.stderr.write("oobt-decode.py: %s\n" % msg)
    sys.exit(2)


class Body:
    """The body's bytes; with a stream, read on as they are needed."""

    def __init__(self, b, stream=None):
        self.b, self.i, self.stream = b, 0, stream

    def more(self, n):
        while self.stream and self.i + n > len(self.b):
            chunk = self.stream.read(1 << 24)
            if not chunk:
                self.stream = None
                break
            self.b = self.b[self.i:] + chunk
            self.i = 0
        if self.i + n > len(self.b):
            die("truncated body at byte %d" % self.i)

    def u8(self):
        if self.i >= len(self.b):
            self.more(1)
        self.i += 1
        return self.b[self.i - 1]

    def fixed(self, n):
        if self.i + n > len(self.b):
            self.more(n)
        v = int.from_bytes(self.b[self.i:self.i + n], "little")
        self.i += n
        return v

    def varint(self):
        v = 0
        for k in range(10):
            c = self.u8()
            v |= (c & 0x7F) << (7 * k)
            if not c & 0x80:
                return v & (2**64 - 1)
        die("varint longer than 10 bytes at byte %d" % self.i)

    def zz(self):
        v = self.varint()
        return (v >> 1) ^ -(v & 1)


def read_sync(b):
    """SYNC's operands (version 2): records before it, {hart: pc}, the
    current hart."""
    records, n = b.varint(), b.varint()
    pcs = {}
    for h in range(n):
        pcs[h] = b.varint()
        b.varint(), b.u8()  # cycle, priv
    return records, pcs, b.varint()


def count_harts(path, limit):
    """Records per hart among the first limit ones: only the opcodes that
    make records or switch harts matter, the others are skipped by length."""
    f = open(path, "rb", buffering=0)  # lz4 reads the body from its offset
    head = f.read(48)
    if len(head) < 48 or head[:8] != MAGIC:
        die("%s: not an oobt file" % path)
    ver, hsize, fields = struct.unpack_from("<HHI", head, 8)
    if ver not in (1, 2) or hsize < 48:
        die("unsupported header: version %d, size %d" % (ver, hsize))
    f.seek(hsize)
    lz = None
    if head[32] == 1:
        lz = subprocess.Popen(["lz4", "-d", "-c"], stdin=f, stdout=subprocess.PIPE)
        b = Body(b"", lz.stdout)
    else:
        b = Body(f.read())
    has_cycle = fields & 1
    counts, hart, n = {}, 0, 0
    while n < limit:
        op = b.u8()
        recs = 0
        if op == 0:
            die("invalid opcode 00 at byte %d" % (b.i - 1))
        elif 1 < op < 0x80:
            recs = min(op.bit_length() - 1, limit - n)
        elif 0x80 <= op < 0xC0:
            recs = 1
        elif op == 0xC0:
            b.zz()
            recs = 1
        elif op in (0xC1, 0xC2):
            b.fixed(2 if op == 0xC1 else 4)
        elif op == 0xC3:
            hart = b.varint()
        elif op == 0xC8:
            hart = read_sync(b)[2]
        elif op in (0xD0, 0xD1):
            b.u8(), b.zz()
        elif op == 0xD2:
            b.varint(), b.zz()
        elif op in (0xD3, 0xD4):
            b.u8(), b.zz(), b.zz()
        elif op == 0xD5:
            b.zz(), b.zz()
        elif op == 0xD6:
            b.fixed(b.varint())
        elif op == 0xD7:
            b.u8(), b.u8(), b.varint(), b.zz(), b.zz()
        elif op == 0xFF:
            break
        elif not (op == 1 or 0xC4 <= op <= 0xC7):
            die("invalid opcode %02x at byte %d" % (op, b.i - 1))
        if recs:
            counts[hart] = counts.get(hart, 0) + recs
            n += recs
            if has_cycle:
                for _ in range(recs):
                    b.zz()
    if lz:
        lz.kill()
        lz.wait()
    sys.stdout.write("".join("%d %d\n" % (h, counts[h]) for h in sorted(counts)))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--harts":
        return count_harts(sys.argv[3], int(sys.argv[2]))
    want_sp = len(sys.argv) == 3 and sys.argv[1] == "--sp"
    if len(sys.argv) != 2 + want_sp:
        die("usage: oobt-decode.py [--sp] TRACE")
    path = sys.argv[-1]
    data = open(path, "rb").read()
    if len(data) < 48 or data[:8] != MAGIC:
        die("%s: not an oobt file" % path)
    ver, hsize, fields = struct.unpack_from("<HHI", data, 8)
    comp, k = data[32], data[33]
    if ver not in (1, 2) or hsize < 48 or not 8 <= k <= 24:
        die("unsupported header: version %d, size %d, icache %d" % (ver, hsize, k))
    body = data[hsize:]
    if comp == 1:
        p = subprocess.run(["lz4", "-d", "-c"], input=body, capture_output=True)
        if p.returncode != 0:
            die("lz4 -d: %s" % p.stderr.decode().strip())
        body = p.stdout
    b = Body(body)
    icache, mask = [0] * (1 << k), (1 << k) - 1
    pcs, pending, n, out = {0: 0}, None, 0, []
    hart, has_insn, has_cycle = 0, fields & 2, fields & 1
    M = 2**64 - 1
    sps, pending_sp = {}, None

    def record(pc, first):
        nonlocal pending, n, pending_sp
        pcs[hart] = pc
        if want_sp:
            sp = sps.get(hart)
            out.append("0x%x %s\n" % (pc, "-" if sp is None else "0x%x" % sp))
            if first and pending_sp is not None:
                sps[hart], pending_sp = pending_sp, None
        elif has_insn:
            if first and pending is not None:
                icache[(pc >> 1) & mask] = pending
            ins = icache[(pc >> 1) & mask]
            out.append("0x%x 0x%0*x\n" % (pc, 8 if ins & 3 == 3 else 4, ins))
        else:
            out.append("0x%x\n" % pc)
        n += 1

    while True:
        op = b.u8()
        recs = 0
        if op == 0:
            die("invalid opcode 00 at byte %d" % (b.i - 1))
        elif op == 1:
            pass
        elif op < 0x80:
            steps = op.bit_length() - 1
            for i in range(steps):
                record((pcs[hart] + (4 if op >> i & 1 else 2)) & M, i == 0)
            recs = steps
        elif op < 0xC0:
            record((pcs[hart] + 2 * ((op & 0x3F) - 32)) & M, True)
            recs = 1
        elif op == 0xC0:
            record((pcs[hart] + b.zz()) & M, True)
            recs = 1
        elif op in (0xC1, 0xC2):
            pending = b.fixed(2 if op == 0xC1 else 4)
            continue
        elif op == 0xC3:
            hart = b.varint()
            pcs.setdefault(hart, 0)
        elif 0xC4 <= op <= 0xC7:
            pass
        elif op == 0xC8:  # a sync point: every hart's pc, an empty cache
            records, spcs, hart = read_sync(b)
            if records != n:
                die("SYNC says %d records, decoded %d" % (records, n))
            pcs.update(spcs)
            icache = [0] * (1 << k)
        elif op in (0xD0, 0xD1):
            num, val = b.u8(), b.zz()
            if op == 0xD0 and num == 2:
                pending_sp = val & M
        elif op == 0xD2:
            b.varint(), b.zz()
        elif op in (0xD3, 0xD4):
            b.u8(), b.zz(), b.zz()
        elif op == 0xD5:
            b.zz(), b.zz()
        elif op == 0xD6:
            b.i += b.varint()
        elif op == 0xD7:
            kind, _, num, _, val = b.u8(), b.u8(), b.varint(), b.zz(), b.zz()
            if kind == 1 and num == 2:
                pending_sp = val & M
        elif op == 0xFF:
            total = b.varint()
            if total != n:
                die("END says %d records, decoded %d" % (total, n))
            if b.i != len(body):
                die("%d bytes after END" % (len(body) - b.i))
            break
        else:
            die("invalid opcode %02x at byte %d" % (op, b.i - 1))
        if recs:
            pending = None
            if has_cycle:
                for _ in range(recs):
                    b.zz()
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main()
