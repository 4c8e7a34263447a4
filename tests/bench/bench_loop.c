/* bench_loop: a long trace made by looping a real one (not a test: it
 * writes the inputs of tests/bench/bench-scale.sh).
 * Usage: bench_loop SRC DST ROUNDS oobt|tracerv|tracerv-lz4
 * Writes SRC's records ROUNDS times to DST in the given format; cycles go on
 * growing from round to round (each round starts one cycle after the last
 * record of the one before), so that the result is one run of a program
 * that restarts at its entry ROUNDS times. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"
#include "trace/trace.h"
#include "trace/trace_write.h"

static int loop(const char *src, struct trace_writer *w, long rounds, struct oob_err *e)
{
	uint64_t *cyc = oob_xmalloc(TRACE_BATCH_MAX * sizeof(*cyc)), base = 0, last = 0;
	int rc = 0;
	for (long k = 0; k < rounds && rc >= 0; k++) {
		struct trace_reader *r = trace_open(src, NULL, e);
		const struct trace_batch *b;
		if (!r) {
			rc = -1;
			break;
		}
		while ((rc = trace_next(r, &b, e)) > 0) {
			struct trace_batch c = *b;
			/* no cycles in the source (QEMU): one an instruction */
			for (uint32_t i = 0; i < b->n; i++)
				cyc[i] = base + (b->cycle ? b->cycle[i] : b->seq + i);
			c.cycle = cyc;
			last = cyc[b->n - 1];
			if ((rc = trace_writer_put(w, &c, e)) < 0)
				break;
		}
		base = last + 1;
		trace_close(r);
	}
	free(cyc);
	return rc;
}

int main(int argc, char **argv)
{
	struct oob_err e = {0};
	if (argc != 5 || atol(argv[3]) < 1) {
		fprintf(stderr, "usage: bench_loop SRC DST ROUNDS oobt|tracerv|tracerv-lz4\n");
		return 2;
	}
	struct trace_reader *r = trace_open(argv[1], NULL, &e);
	if (!r) {
		fprintf(stderr, "bench_loop: %s\n", e.msg);
		return 1;
	}
	struct trace_write_opts wo = {.fields = trace_reader_fields(r)};
	trace_close(r);
	wo.format = strcmp(argv[4], "oobt") ? TRACE_FMT_TRACERV_BIN : TRACE_FMT_OOBT;
	wo.lz4 = strcmp(argv[4], "tracerv-lz4") == 0;
	if (wo.format == TRACE_FMT_TRACERV_BIN)
		wo.fields = TRACE_F_CYCLE;
	else
		wo.fields |= TRACE_F_CYCLE;
	struct trace_writer *w = trace_writer_open(argv[2], &wo, &e);
	if (!w || loop(argv[1], w, atol(argv[3]), &e) < 0) {
		fprintf(stderr, "bench_loop: %s\n", e.msg);
		if (w)
			trace_writer_abort(w);
		return 1;
	}
	if (trace_writer_close(w, &e) < 0) {
		fprintf(stderr, "bench_loop: %s\n", e.msg);
		return 1;
	}
	return 0;
}
