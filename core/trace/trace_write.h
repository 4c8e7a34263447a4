/*
 * trace_write: writing instruction traces, for `oobprof convert` and for the
 * test tools (the QEMU tracing plugin writes oobt through this API).
 *
 * Formats written: oobt (everything a batch carries; docs/formats/OOBT.md) and
 * tracerv-bin (FireSim output_format 1: pc and cycle only; a record per
 * instruction, width 1, valid bit 63, with the "# Clock Domain" header line).
 * Writes go to a temporary file beside path, which trace_writer_close fsyncs
 * and renames into place: a reader never sees a half-written trace.
 * Not thread-safe.
 */
#ifndef OOB_TRACE_WRITE_H
#define OOB_TRACE_WRITE_H

#include <stdio.h>

#include "util/oob_err.h"
#include "trace/trace.h"

struct trace_writer;

/*
 * out_file: the one way an output file is written (trace_writer, every
 * `oobprof -o`). A regular file, or a path that does not exist yet, is
 * written to a temporary file beside it, fsynced and renamed over it at
 * commit: a reader never sees half of it, and a failure leaves what was
 * there untouched. "-" (stdout), a pipe, a device or a socket is written
 * straight through: never truncated, renamed over or removed. A symbolic
 * link to a regular file has its target replaced. Nothing but the
 * temporary file is ever unlinked.
 */
struct out_file {
	char *path; /* where it goes */
	char *tmp;  /* the temporary file; NULL: written straight through */
	int fd;
	FILE *f; /* out_file_stream: owns fd */
};

/* 0, or negative errno + err (o is then cleared). */
int out_file_open(struct out_file *o, const char *path, struct oob_err *err);
/* A stdio stream over the output (made once; commit/abort close it). */
FILE *out_file_stream(struct out_file *o, struct oob_err *err);
/* Flushes, fsyncs, closes and renames into place; on error the temporary
 * file is removed. o is cleared either way. */
int out_file_commit(struct out_file *o, struct oob_err *err);
/* Closes and removes the temporary file only. o is cleared. */
void out_file_abort(struct out_file *o);

struct trace_write_opts {
	enum trace_format format; /* TRACE_FMT_OOBT or TRACE_FMT_TRACERV_BIN */
	unsigned fields;	  /* TRACE_F_* the input carries (oobt records them) */
	int lz4;		  /* tracerv-bin only: wrap in an LZ4 frame (oobt always is) */
	struct trace_tracerv_opts tracerv; /* tracerv-bin layout; 0 = width 1, 2 words, bit 63 */
	/* Tile-to-base clock ratio as trace_reader_clock_ratio gives it (base
	 * cycles = cycle * num / den); 0/0 = 1/1. Stored by both formats. */
	uint64_t clock_num, clock_den;
	const char *clock_domain;  /* tracerv-bin header's domain name; NULL = "baseClock" */
	int oobt_plain;		   /* oobt: body not LZ4-framed (benchmarks, debugging) */
	unsigned oobt_icache_log2; /* oobt: instruction cache slots, log2 (8..24); 0 = 16 */
	/* oobt in LZ4 frames: a sync point at least every this many records
	 * (threads start decoding there: trace_split.h); 0 = OOBT_SYNC_RECORDS */
	uint64_t oobt_sync_records;
	enum trace_format source; /* oobt: format converted from (informational) */
};

/* NULL + err if the options are invalid or the temporary file cannot be
 * created. A file path is written atomically (temporary file, fsync,
 * rename at close); "-" (stdout), a pipe or a device is written straight
 * through. The writer owns everything it allocates. */
struct trace_writer *trace_writer_open(const char *path, const struct trace_write_opts *opts,
				       struct oob_err *err);
/* Appends a batch (records of one hart). Negative errno + err on I/O failure
 * or on a field the format cannot store when it matters: for oobt a priv
 * above 3 or more than OOBT_X_PER_RECORD extras on one record; for tracerv-bin
 * a pc that is not a sign-extended 40-bit address, or a second hart (one file
 * per hart). tracerv-bin packs consecutive records of equal cycle into one
 * record of `width` slots; without TRACE_F_CYCLE the cycle is the record's
 * index in the whole trace (b->seq + i), so that one file per hart of a
 * multi-hart trace keeps its time order (trace_merge.h). After an error the
 * writer only accepts close/abort. */
int trace_writer_put(struct trace_writer *w, const struct trace_batch *b, struct oob_err *err);
/* Flushes, fsyncs and renames into place; frees w. On error the temporary file
 * is removed. */
int trace_writer_close(struct trace_writer *w, struct oob_err *err);
/* Frees w and removes the temporary file (nothing is written). */
void trace_writer_abort(struct trace_writer *w);

#endif
