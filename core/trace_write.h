/*
 * trace_write: writing instruction traces, for `oobprof convert` and for the
 * test tools (the QEMU tracing plugin writes oobt through this API).
 *
 * Formats written: oobt (everything a batch carries; core/FORMAT.md) and
 * tracerv-bin (FireSim output_format 1: pc and cycle only; a record per
 * instruction, width 1, valid bit 63, with the "# Clock Domain" header line).
 * Writes go to a temporary file beside path, which trace_writer_close fsyncs
 * and renames into place: a reader never sees a half-written trace.
 * Not thread-safe.
 */
#ifndef OOB_TRACE_WRITE_H
#define OOB_TRACE_WRITE_H

#include "oob_err.h"
#include "trace.h"

struct trace_writer;

struct trace_write_opts {
	enum trace_format format; /* TRACE_FMT_OOBT or TRACE_FMT_TRACERV_BIN */
	unsigned fields;	  /* TRACE_F_* the input carries (oobt records them) */
	int lz4;		  /* tracerv-bin only: wrap in an LZ4 frame (oobt always is) */
	struct trace_tracerv_opts tracerv; /* tracerv-bin layout; 0 = width 1, 2 words, bit 63 */
};

struct trace_writer *trace_writer_open(const char *path, const struct trace_write_opts *opts,
				       struct oob_err *err);
/* Appends a batch (records of one hart). Negative errno + err on I/O failure
 * or on a field the format cannot store when it matters (none for oobt). */
int trace_writer_put(struct trace_writer *w, const struct trace_batch *b, struct oob_err *err);
/* Flushes, fsyncs and renames into place; frees w. On error the temporary file
 * is removed. */
int trace_writer_close(struct trace_writer *w, struct oob_err *err);
/* Frees w and removes the temporary file (nothing is written). */
void trace_writer_abort(struct trace_writer *w);

#endif
