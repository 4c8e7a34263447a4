/*
 * fireperf: reader for FirePerf's output_format 2 stack-event logs
 * (TRACERV.md "Format 2"). The raw instruction trace is not in the file, only
 * the stack events FirePerf derived, so the reconstruction replays them by
 * name (recon.c) instead of decoding instructions.
 *
 * Lines:
 *   Indent: N, Start label: NAME, At cycle: C
 *   Indent: N, End label: NAME, End cycle: C
 *   WARN: STACK ZEROED ...
 * An optional "# Clock Domain: ..." line may come first. The other "WARN: "
 * lines FirePerf prints to explain a STACK ZEROED warning and blank lines are
 * skipped; anything else is an -EINVAL error naming the line. Labels may
 * contain ", " (C++ names): the cycle is read after the last separator.
 * Not thread-safe.
 */
#ifndef OOB_FIREPERF_H
#define OOB_FIREPERF_H

#include <stdint.h>

#include "util/in.h"
#include "util/oob_err.h"

enum fireperf_kind { FIREPERF_START = 1, FIREPERF_END, FIREPERF_ZERO };

struct fireperf_event {
	enum fireperf_kind kind;
	unsigned indent;   /* START/END */
	const char *label; /* START/END; valid until the next fireperf_next */
	uint64_t cycle;	   /* START/END */
	uint64_t line;	   /* 1-based line number in the file */
};

struct fireperf_reader;

/* Takes over s. NULL + err if the first non-blank line is not a FirePerf line. */
struct fireperf_reader *fireperf_open_stream(struct in_stream *s, struct oob_err *err);
void fireperf_close(struct fireperf_reader *r);
/* 1 and *ev (borrowed) per event, 0 at end, negative errno + err on a bad line. */
int fireperf_next(struct fireperf_reader *r, const struct fireperf_event **ev, struct oob_err *err);

#endif
