/*
 * timeline_json: the timeline document the CLI (`oobprof timeline`) and the
 * API (GET /api/v1/jobs/{id}/timeline) both print, so they cannot drift:
 *
 *   {"axis": "cycles" | "records", "from", "to", "start", "end",
 *    "min_duration", "merged",
 *    "processes": [{"pid", "comm"}],
 *    "harts": [{"hart", "intervals": [[start, end, "user"|"kernel",
 *                                       process index | null, n], ...]}],
 *    "go": {"clock": {"a", "b", "x0", "source", ...}, "start", "end",
 *           "goroutines": [{"id", "name", "intervals": [[s, e, state, P, n]]}],
 *           "procs":      [{"id", "intervals": [[s, e, state, M, n]]}],
 *           "threads":    [{"id", "intervals": [[s, e, state, P, n]]}],
 *           "gc": [[s, e, "gc" | "stw", name, n]]}}
 *
 * Times are on the instruction trace's axis (timeline.h); Go times are
 * mapped through the job's clock model and rounded. n counts the intervals
 * merged into one (timeline_merger). Go entities without an interval in the
 * window are left out. "detail" says how the hart intervals were made:
 * "exact" (timeline_harts, merged by min_duration), or "buckets"
 * (timeline_lod.h: "bucket" is the bucket size and each interval has busy,
 * the time its state held in it); without harts it is left out.
 */
#ifndef OOB_TIMELINE_JSON_H
#define OOB_TIMELINE_JSON_H

#include <jansson.h>

#include "go/goclock.h"
#include "go/gotrace.h"
#include "util/oob_err.h"
#include "profile/profile.h"
#include "timeline/timeline.h"
#include "timeline/timeline_go.h"

enum {
	TIMELINE_T_HARTS = 1,
	TIMELINE_T_GOROUTINES = 2,
	TIMELINE_T_PROCS = 4,
	TIMELINE_T_THREADS = 8,
	TIMELINE_T_GC = 16,
	TIMELINE_T_ALL = 31,
};

/* Parses "harts,goroutines,procs,threads,gc" (any subset, or "all"). */
int timeline_tracks_parse(const char *s, unsigned *out, struct oob_err *err);

/* The document (new reference). t may be NULL when tracks leaves harts out;
 * go may be NULL (no "go" member). o gives the window and min_dur. */
json_t *timeline_json(const struct timeline *t, const struct profile *p,
		      const struct timeline_go *go, const struct timeline_opts *o, unsigned tracks);

#endif
