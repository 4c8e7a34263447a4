/*
 * evlog: a compact, disk-backed log of recon's stack events (recon.h), for
 * the exports that keep time (speedscope evented profiles, Perfetto). A
 * reconstruction hands evlog_record to recon as its on_event callback; the
 * exporters replay the log afterwards, once per hart or once for all.
 *
 * Memory stays bounded whatever the trace length: events are varint-coded
 * (deltas per hart; about 6 bytes an event) into a fixed 256 KiB buffer that
 * is written to a file whenever it fills. Recording never allocates except
 * when a hart shows up for the first time.
 *
 * File layout (all integers little-endian):
 *
 *   header, 32 bytes: "OOBEVL2\0", u64 body bytes, u64 events, u32 harts
 *                     (highest hart + 1), u32 flags (bit 0: capped)
 *   body:             per event, LEB128 varints:
 *                       (hart << 2) | (calls << 1) | (kind == CLOSE), frame, depth,
 *                       insn - previous insn of that hart,
 *                       zigzag(cycle - previous cycle of that hart),
 *                       zigzag(seq - previous seq, all harts)
 *   trailer:          per hart, struct evlog_hart as 6 u64
 *
 * A log read back is checked as it is replayed: every varint in bounds,
 * every close matching the open frame at its depth, every open one deeper
 * than the hart's stack; anything else is -EINVAL naming the byte offset. So
 * consumers may rely on events being properly nested per hart.
 *
 * Not thread-safe: one log belongs to one thread at a time.
 */
#ifndef OOB_EVLOG_H
#define OOB_EVLOG_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"
#include "util/oob_progress.h"
#include "recon/recon.h"

/* What the log knows about one hart (all zero for a hart without events). */
struct evlog_hart {
	uint64_t events;
	uint64_t first_insn, last_insn; /* instruction stamps of its first and last events */
	uint64_t first_cycle, last_cycle;
	uint64_t max_depth;
};

/* Replay callback; a negative return stops the replay and is returned. */
typedef int (*evlog_fn)(void *ctx, const struct recon_event *ev);

struct evlog;

/*
 * A new, empty log writing to path (created or truncated), or to an
 * anonymous temporary file in $TMPDIR (else /tmp) when path is NULL.
 * max_events > 0 caps the log: events past the cap are counted but not kept,
 * and evlog_capped says so (the exports then fall back or refuse). NULL and
 * err (-errno of open) on failure.
 */
struct evlog *evlog_new(const char *path, uint64_t max_events, struct oob_err *err);

/* recon_event_fn: records one event (ctx is the struct evlog *). A write
 * error is kept and reported by evlog_finish; later events are dropped. */
void evlog_record(void *ctx, const struct recon_event *ev);

/* Flushes the buffer and writes header and trailer: the log becomes
 * readable. Returns 0, or the first error met while recording (-EIO,
 * -ENOSPC). Called once; evlog_replay calls it if needed. */
int evlog_finish(struct evlog *l, struct oob_err *err);

/* Opens a finished log file for replay. -ENOENT, -EINVAL (not a log, or
 * sizes that do not add up). */
struct evlog *evlog_open(const char *path, struct oob_err *err);

/* Closes (and, for an anonymous log, deletes) the log. NULL is fine. */
void evlog_free(struct evlog *l);

/* Events kept in the log, and seen in all (more when capped). */
uint64_t evlog_count(const struct evlog *l);
uint64_t evlog_seen(const struct evlog *l);
int evlog_capped(const struct evlog *l);
/* Bytes of events (what a whole replay reads). */
uint64_t evlog_body_bytes(const struct evlog *l);
/* Highest hart + 1 that has events (0 for an empty log). */
unsigned evlog_nharts(const struct evlog *l);
/* The hart's summary; a zeroed struct for harts beyond evlog_nharts. */
struct evlog_hart evlog_hart(const struct evlog *l, unsigned hart);

/*
 * Calls fn for each kept event in recorded order (only those of hart, or of
 * every hart when hart < 0). Frame ids are checked against nframes when it is
 * non-zero. Returns 0, fn's negative return, or -EINVAL/-EIO naming the byte
 * offset of what is wrong. The log can be replayed any number of times.
 */
int evlog_replay(struct evlog *l, int hart, uint32_t nframes, evlog_fn fn, void *ctx,
		 struct oob_err *err);

/* Replays from now on report to p (NULL: to no one): each adds the body
 * bytes it will read to p's total and steps p as it reads them, and stops
 * with -ECANCELED once p is cancelled. */
void evlog_watch(struct evlog *l, struct oob_progress *p);

/* Where the next recorded event will go: its body offset, the events kept
 * before it and the seq of the last one (the checkpoints of evidx.h). */
void evlog_tell(const struct evlog *l, uint64_t *off, uint64_t *count, uint64_t *seq);

/* A point to resume a replay from (a checkpoint of evidx.h): the state of
 * the decoder at body offset off, and every hart's open stack then. */
struct evlog_resume_hart {
	uint64_t insn, cycle, seq; /* stamps of the hart's last event before off */
	uint32_t depth;
	const uint32_t *frames; /* depth frame ids, bottom first */
};
struct evlog_resume {
	uint64_t off, count, seq; /* as evlog_tell said then */
	uint64_t end;		  /* body offset to stop at; 0: the end of the log */
	unsigned nharts;
	const struct evlog_resume_hart *h;
};

/*
 * evlog_replay from rs: first an open event (calls 0, the hart's last stamps)
 * for each frame open at rs->off, bottom first, then the events from there
 * up to rs->end. The same checks as evlog_replay, and the same errors.
 */
int evlog_replay_from(struct evlog *l, const struct evlog_resume *rs, int hart, uint32_t nframes,
		      evlog_fn fn, void *ctx, struct oob_err *err);

#endif
