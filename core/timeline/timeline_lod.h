/*
 * timeline_lod: level-of-detail summaries of the hart timeline, so that a
 * coarse timeline (the whole run of a long job at a pixel's resolution) is
 * read from a small file instead of a replay of every stack event
 * (docs/formats/TLOD.md has the layout; a job writes results/<id>/events.lod).
 *
 * The bucketed answer. The run's axis [start, end) (timeline.h; start, end
 * over all harts) is cut into buckets of level k, of size b_k = b0 * 4^k
 * from b0 = ceil((end - start) / 65536) (at least 1), bucket i covering
 * [start + i * b_k, start + (i + 1) * b_k); the levels go up to the first
 * one whose single bucket covers the run. Per hart and bucket, from the
 * hart's exact intervals (timeline_harts without min_dur):
 *   - the (process, privilege) whose intervals cover most of the bucket,
 *     ties to the smaller process index (none first), then user before
 *     kernel: the bucket's state, and busy, the time it covers;
 *   - n, the intervals that meet the bucket, and whether the first of them
 *     began before it (so that runs of buckets count each interval once).
 * A query (timeline_lod_query) takes the coarsest level whose bucket is at
 * most min_dur (level 0 when none is), the buckets that meet the window,
 * and per hart gives one interval per run of consecutive buckets of one
 * state: from the first bucket's start to the last one's end, each clipped
 * to the hart's first and last event; busy and n summed (an interval
 * running on from one bucket into the next counted once). Buckets where
 * the hart did not run give nothing. The intervals are whole buckets: the
 * first and the last may reach out of the window.
 *
 * Writing holds, per hart and level, the bucket being filled and 256 rows
 * before they go to the file; reading holds the header.
 *
 * Not thread-safe: a writer or a reader belongs to one thread at a time.
 */
#ifndef OOB_TIMELINE_LOD_H
#define OOB_TIMELINE_LOD_H

#include <stdint.h>

#include "recon/evidx.h"
#include "recon/evlog.h"
#include "timeline/timeline.h"
#include "util/oob_err.h"
#include "profile/profile.h"

#define TIMELINE_LOD_BUCKETS 65536u /* buckets of level 0 over the run */
#define TIMELINE_LOD_FACTOR  4u	    /* a level's bucket over the one below */

struct timeline_lod;

/* The summaries of the run that made log and p, written to path (created or
 * truncated), or to an anonymous temporary file when path is NULL. The run's
 * extent comes from ix when given (one streaming replay), else from a first
 * replay. Errors of evlog_replay and of the file (-errno). */
int timeline_lod_build(struct evlog *log, struct evidx *ix, const struct profile *p,
		       const char *path, struct oob_err *err);

/* Opens a file timeline_lod_build wrote: -ENOENT, or -EINVAL naming what is
 * wrong (sizes that do not add up, another version); rows are checked when
 * a query reads them. The same for the temporary file: timeline_lod_new
 * builds one and opens it. */
struct timeline_lod *timeline_lod_open(const char *path, struct oob_err *err);
struct timeline_lod *timeline_lod_new(struct evlog *log, struct evidx *ix, const struct profile *p,
				      struct oob_err *err);
void timeline_lod_free(struct timeline_lod *l);

/* 1: the axis is cycles, 0: records; the smallest bucket. */
int timeline_lod_cycles(const struct timeline_lod *l);
uint64_t timeline_lod_finest(const struct timeline_lod *l);

/* The bucketed answer for o (window, min_dur, hart) as a timeline (freed
 * with timeline_free; its bucket field is the bucket size used; merged
 * counts the intervals joined into others). -EINVAL if a row read is out of
 * range (p: the profile whose processes the rows name). */
int timeline_lod_query(struct timeline_lod *l, const struct profile *p,
		       const struct timeline_opts *o, struct timeline **out, struct oob_err *err);

#endif
