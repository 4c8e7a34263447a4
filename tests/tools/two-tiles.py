#!/usr/bin/env python3
"""two-tiles.py SRC DIR: DIR/TRACEFILE-C0 and -C1, the records of the TracerV
file SRC (its header line replaced) as two tiles of one FireSim run, the
first at the base clock and the second at half of it: the tests' two-hart
trace in two clock domains."""
import sys

src = open(sys.argv[1], "rb").read()
body = src[src.index(b"\n") + 1:]
open(sys.argv[2] + "/TRACEFILE-C0", "wb").write(
    b"# Clock Domain: tile0, Relative Frequency: 1/1 of Base Clock\n" + body)
open(sys.argv[2] + "/TRACEFILE-C1", "wb").write(
    b"# Clock Domain: tile1, Relative Frequency: 1/2 of Base Clock\n" + body)
