#!/bin/sh
# The include graph of core/, cli/, server/ and api/ follows the folder layers
# (core/Makemodule.am) and has no cycle: tests/tools/check-layers.sh.
: "${OOB_SRCDIR:?}"
exec sh "$OOB_SRCDIR/tests/tools/check-layers.sh" "$OOB_SRCDIR"
