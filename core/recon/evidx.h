/*
 * evidx: the index of a stack-event log (evlog.h), written in the same pass
 * (docs/formats/EVIDX.md has the file layout).
 *
 * Two things the log alone cannot answer:
 *
 * - When each record retired. Stack events stamp only the records where the
 *   stack changes, so a time window whose edge falls between two events of a
 *   hart cannot say how many of the records between them are inside it. The
 *   index keeps, per batch of records (one hart), the hart's record index and
 *   global seq of its first record and, with cycles, every record's cycle
 *   (deltas bit-packed at the block's best width: 0.26 bytes a record on a
 *   TracerV fixture). evidx_pos turns a time into the
 *   hart's record index exactly: a window [from, to) is then, per hart, the
 *   records [pos(from), pos(to)), which is what "the instructions retired in
 *   the window" means (timeline.h).
 * - Where to start reading. Every `every` records (at a batch boundary) a
 *   checkpoint holds the log's body offset, event count and seq then, and
 *   per hart its last event's stamps and open stack: a window's replay
 *   resumes at the last checkpoint before it (evlog_replay_from) and stops at
 *   the first after it, so it reads O(window + every) of the log.
 *
 * Memory while writing: the open stacks, a 256 KiB buffer and one u64 per
 * checkpoint. Reading holds the checkpoints (their stacks included).
 *
 * Not thread-safe: one index belongs to one thread at a time.
 */
#ifndef OOB_EVIDX_H
#define OOB_EVIDX_H

#include <stdint.h>

#include "recon/evlog.h"
#include "trace/trace.h"
#include "util/oob_err.h"

#define EVIDX_EVERY_DEFAULT (1u << 20) /* records between checkpoints */

struct evidx_writer;

/* A writer to path (created or truncated), or to an anonymous temporary file
 * when path is NULL, indexing log (borrowed: events go through
 * evidx_event to it). every: records between checkpoints (0: the default). */
struct evidx_writer *evidx_writer_new(const char *path, struct evlog *log, uint64_t every,
				      struct oob_err *err);
/* recon_event_fn (ctx: the writer): notes the event and records it in log. */
void evidx_event(void *ctx, const struct recon_event *ev);
/* recon_opts.on_batch (ctx: the writer). */
void evidx_batch(void *ctx, const struct trace_batch *b, uint64_t gseq);
/* Writes the directory and the header: 0, or the first write error. */
int evidx_writer_finish(struct evidx_writer *w, struct oob_err *err);
void evidx_writer_free(struct evidx_writer *w);

struct evidx;

/* Opens an index written by evidx_writer_finish (-ENOENT, or -EINVAL naming
 * what is wrong: a cut or corrupt file is refused here or by the calls
 * below, never read past its bounds). */
struct evidx *evidx_open(const char *path, struct oob_err *err);
/* The finished writer's file, opened for reading (the CLI's anonymous one). */
struct evidx *evidx_writer_open(struct evidx_writer *w, struct oob_err *err);
void evidx_free(struct evidx *ix);

/* 1: record times are cycles (every batch had them); 0: the global seq. */
int evidx_cycles(const struct evidx *ix);
unsigned evidx_nharts(const struct evidx *ix);
/* Disables checkpoints (replays start at the log's beginning): the tests
 * compare both ways. */
void evidx_noseek(struct evidx *ix);

/* The hart's records retired before time t (cycles or seq, as
 * evidx_cycles): *pos; and *cycle, the cycle of record *pos (the hart's
 * last cycle when *pos is past its last record; 0 without cycles). */
int evidx_pos(struct evidx *ix, unsigned hart, uint64_t t, uint64_t *pos, uint64_t *cycle,
	      struct oob_err *err);

/* The hart's first and last event times (on the evidx_cycles axis), its
 * event count; 0 for a hart without events. */
int evidx_hart_events(const struct evidx *ix, unsigned hart, uint64_t *first, uint64_t *last,
		      uint64_t *events);

/*
 * A resume point for a replay that needs, per hart h (only hart, when
 * hart >= 0), the events from the one before key lo[h] to the first at or
 * after hi[h]: keys are record indices (by_time 0) or times (by_time 1).
 * Fills rs (valid until the next call or evidx_free). Without a usable
 * checkpoint rs is the log's beginning.
 */
void evidx_seek(struct evidx *ix, int hart, int by_time, const uint64_t *lo, const uint64_t *hi,
		struct evlog_resume *rs);

#endif
