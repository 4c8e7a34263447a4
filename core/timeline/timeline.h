/*
 * timeline: what ran when (DESIGN.md 4.5), rebuilt from a reconstruction's
 * stack events (evlog.h) and its profile.
 *
 * Time axis: the trace's cycles when the profile has them, else the global
 * record index (struct recon_event.seq), which is also the axis goclock
 * aligns Go traces to. Times are absolute in those units.
 *
 * Per hart, the intervals of (process, privilege): the process is the root
 * frame of the running task's stack (profile processes), the privilege is
 * kernel while the top frame is a kernel function, user otherwise, the rule
 * recon uses for the processes' user/kernel counts, so per (process,
 * privilege) the intervals' instructions add up to those counts.
 *
 * A window [from, to) clips the intervals, and intervals shorter than
 * min_dur (a pixel, for a viewer) are merged with their short neighbours
 * into one interval of at least min_dur that takes the state of its longest
 * member and counts its members, so a track never holds more than about
 * 2 * (to - from) / min_dur intervals.
 *
 * timeline_profile cuts a profile out of a window instead: the weight
 * between two stack events of a hart goes to the top frame, and belongs to
 * the window when the span starts in it; calls count the frames opened in
 * it. Windows whose edges are interval edges are therefore exact.
 *
 * Plain functions over caller-owned data; an evlog is replayed, so it must
 * not be used by two threads at once.
 */
#ifndef OOB_TIMELINE_H
#define OOB_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "recon/evidx.h"
#include "recon/evlog.h"
#include "util/oob_err.h"
#include "profile/profile.h"

#define TIMELINE_NONE INT64_MIN

/* One interval. For harts: a = process index (profile_process) or
 * TIMELINE_NONE, state = 0 user / 1 kernel. Go tracks use them too (see
 * timeline_go.h). n = intervals merged into it (1: none). busy: in a
 * bucketed answer (timeline_lod.h), the time the shown (a, state) held in
 * it; 0 otherwise. */
struct timeline_span {
	uint64_t start, end;
	int64_t a;
	uint32_t n;
	uint8_t state;
	uint64_t busy;
};

struct timeline_spans {
	struct timeline_span *v;
	size_t n, cap;
};

/* Clips and merges spans as they come, in time order (see above). */
struct timeline_merger {
	uint64_t from, to, min_dur;
	struct timeline_spans *out;
	struct timeline_span pend; /* a group of short spans not yet emitted */
	uint64_t pend_best;	   /* duration of its longest member */
	int have;
	uint64_t merged; /* spans merged away so far */
};

void timeline_merger_init(struct timeline_merger *m, uint64_t from, uint64_t to, uint64_t min_dur,
			  struct timeline_spans *out);
void timeline_merger_add(struct timeline_merger *m, const struct timeline_span *s);
/* Emits what is pending; returns the spans merged away. */
uint64_t timeline_merger_end(struct timeline_merger *m);

struct timeline_opts {
	uint64_t from, to; /* window; to == 0: up to the end */
	uint64_t min_dur;  /* 0: no merging */
	int hart;	   /* only this hart; -1 all */
};

struct timeline_hart {
	unsigned hart;
	struct timeline_spans spans;
};

struct timeline {
	int cycles;	     /* 1: the axis is cycles; 0: the record index */
	uint64_t bucket;     /* 0: exact intervals; else a bucketed answer's bucket
				size (timeline_lod.h) */
	uint64_t start, end; /* first and last event time over all harts */
	struct timeline_hart *harts;
	size_t nharts;
	uint64_t merged;
};

/* The hart intervals of the run that made log and p. -EINVAL if the log does
 * not belong to p (frame ids), -EFBIG if it was capped, errors of
 * evlog_replay. *out freed with timeline_free. */
int timeline_harts(struct evlog *log, const struct profile *p, const struct timeline_opts *o,
		   struct timeline **out, struct oob_err *err);
void timeline_free(struct timeline *t);

/* The profile of the window [from, to) (to == 0: the end) on one hart (or
 * every hart when hart < 0), over p's frames and calling contexts, with p's
 * processes and statistics (instructions and cycles of the window). */
int timeline_profile(struct evlog *log, const struct profile *p, int hart, uint64_t from,
		     uint64_t to, struct profile **out, struct oob_err *err);

/*
 * The same with the log's index (evidx.h; NULL, or an index of another axis:
 * as above). The window is then exact: on each hart it holds the records
 * whose time is in [from, to), evidx_pos(from) up to evidx_pos(to), a span
 * between two events cut where the window cuts it (its cycles at the cycle
 * of the first record on each side); calls count the frames opened on those
 * records. Replays read from the checkpoint before the window to the one
 * after it.
 */
int timeline_profile_ix(struct evlog *log, struct evidx *ix, const struct profile *p, int hart,
			uint64_t from, uint64_t to, struct profile **out, struct oob_err *err);

/* Every hart interval of the whole run, unmerged (those longer than 0),
 * in time order per hart, to fn: the spans timeline_harts keeps without
 * min_dur, without holding them. Errors of evlog_replay. */
typedef void (*timeline_span_fn)(void *ctx, unsigned hart, const struct timeline_span *s);
int timeline_harts_each(struct evlog *log, const struct profile *p, timeline_span_fn fn, void *ctx,
			struct oob_err *err);

/* timeline_harts reading only the window's part of the log (ix may be NULL). */
int timeline_harts_ix(struct evlog *log, struct evidx *ix, const struct profile *p,
		      const struct timeline_opts *o, struct timeline **out, struct oob_err *err);

#endif
