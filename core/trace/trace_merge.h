/*
 * trace_merge: several single-hart traces of one run (FireSim writes one
 * TRACEFILE-C<n> per tile) read as one, in time order.
 *
 * A task that Linux switches out on one hart may resume on another, so the
 * reconstruction must see hart A's records up to the switch before hart B's
 * records after it. When every file counts cycles, batches are cut so that
 * records come out by cycle (on the base clock when opts ask for it; equal
 * cycles: the file given first goes first). Without cycles in every file
 * there is no common time: the files come out one after the other.
 *
 * Of several files, each is one hart, opts[k].hart, whatever its records say
 * (a single file keeps its harts).
 *
 * Batches are views into the readers' own arrays (no copy of the records;
 * extras and the insn_new list are re-indexed), valid until the next call.
 * seq counts records in the merged order.
 */
#ifndef OOB_TRACE_MERGE_H
#define OOB_TRACE_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"
#include "trace/trace.h"

struct trace_merge;

/* Opens the n readers (opts[k] for the k-th path: its hart, base clock).
 * NULL + err (naming the file) if any fails to open. */
struct trace_merge *trace_merge_open(const char *const *paths, const struct trace_opts *opts,
				     size_t n, struct oob_err *err);

/* The hart of the k-th of several single-hart trace files named name:
 * FireSim names them TRACEFILE-C<n>; otherwise k. */
uint16_t trace_merge_hart(const char *name, size_t k);

/* trace_merge_open of one run's traces, each read with *base; of several,
 * the k-th is hart harts[k] (NULL: trace_merge_hart of its path), on the
 * base clock. */
struct trace_merge *trace_merge_open_run(const char *const *paths, const struct trace_opts *base,
					 const uint16_t *harts, size_t n, struct oob_err *err);
void trace_merge_close(struct trace_merge *m);

/* As trace_next: 1 and *out, 0 at the end of every file, or a negative errno
 * (err names the file; records before the failure were delivered). */
int trace_merge_next(struct trace_merge *m, const struct trace_batch **out, struct oob_err *err);

/* 1 if the files are interleaved by cycle, 0 if they come one after another. */
int trace_merge_by_cycle(const struct trace_merge *m);
/* The fields every file carries (TRACE_F_*). */
unsigned trace_merge_fields(const struct trace_merge *m);
/* The first file's format. */
enum trace_format trace_merge_format(const struct trace_merge *m);
/* Compressed input bytes consumed, all files. */
uint64_t trace_merge_raw_bytes(const struct trace_merge *m);
/* Records cut short at the end of the files and dropped (one per file at
 * most; only with in_opts.tail_may_be_cut). */
uint64_t trace_merge_cut_records(const struct trace_merge *m);

#endif
