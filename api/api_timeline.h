/*
 * api_timeline: what ran when, from a finished job's stack events
 * (api_events.h) and its Go trace.
 *
 * GET /api/v1/jobs/{id}/timeline?from=&to=&min_duration=&tracks=&hart=&detail=
 *   The document of core/timeline/timeline_json.h: per-hart (process, user|kernel)
 *   intervals and, for a job with a "go_trace", the Go goroutine, P, M and
 *   GC tracks mapped onto the same axis. from/to bound the window (axis
 *   units: cycles, else the record index); intervals shorter than
 *   min_duration are merged (a viewer passes its pixel's duration). At most
 *   API_TIMELINE_MAX_INTERVALS come back; past that, 413 asking for a
 *   larger min_duration. A job whose Go clock could not be fitted answers
 *   with "go": {"clock": {"ok": false, "error": ...}} and no Go tracks.
 *   detail=exact: the hart intervals of a replay of the window, merged by
 *   min_duration (timeline.h). detail=buckets: the bucketed answer of the
 *   job's level-of-detail summaries (timeline_lod.h; a job without them, or
 *   with a damaged file, builds them by a replay first). detail=auto (the
 *   default): buckets when the summaries open, min_duration is at least
 *   their finest bucket and the index puts more than API_TIMELINE_LOD_EVENTS
 *   events in the window; exact otherwise. The document says which.
 *
 * The Perfetto export (api_export.c) adds the same Go tracks.
 *
 * GET /api/v1/jobs/{id}/offcpu?view=json|flamegraph|folded&pid=
 *   Off-CPU waits (core/timeline/waits.h, RECONSTRUCTION.md 15): json (the
 *   default) every wait with its stack, length and waker, and the counts;
 *   flamegraph and folded the stacks at the blocks weighted by the time
 *   blocked. pid (or task): one task, by pid or by its name in /processes.
 *
 * GET /api/v1/jobs/{id}/path?task=&from=&to=&top=
 *   The critical path of a task (a pid or a name) over [from, to): its
 *   steps latest first, each running one with its top (5) stacks.
 *
 * GET /api/v1/jobs/{id}/flamegraph?from=&to= (api_jobs.c hands over)
 *   The flame graph of that window only (timeline_profile).
 *
 * Thread-safety: any request thread.
 */
#ifndef OOB_API_TIMELINE_H
#define OOB_API_TIMELINE_H

#include "api_flame.h"
#include "api_routes.h"
#include "recon/evidx.h"
#include "recon/evlog.h"
#include "timeline/timeline.h"
#include "timeline/timeline_go.h"

#define API_TIMELINE_MAX_INTERVALS 1000000
/* detail=auto answers from the summaries past this many events to replay. */
#define API_TIMELINE_LOD_EVENTS (1u << 20)

/* The Go side of job id (its go_trace and stored clock): trace NULL when the
 * job has none, or when its clock was refused (aligned 0, clock says why). */
struct api_go {
	struct timeline_go go;
	struct gotrace *trace;
	json_t *clock;
	int aligned;
};
int api_go_load(struct api_ctx *c, int64_t id, struct api_go *s, struct oob_err *e);
void api_go_free(struct api_go *s);

int api_jobs_timeline(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_jobs_offcpu(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_jobs_path(struct api_ctx *c, struct http_req *r, struct api_req *q);

/* A finished job's stack events and the profile of the run that recorded
 * them (its stored result, borrowed from the cache), held for one request. */
struct api_cache_ref;
struct api_job_events {
	struct api_cache_ref *ref;
	int partial;
	struct evlog *log;
	struct evidx *ix; /* NULL: replay the whole log */
	const struct profile *p;
};
int api_job_events_get(struct api_ctx *c, int64_t id, struct api_job_events *x, struct oob_err *e);
void api_job_events_put(struct api_ctx *c, struct api_job_events *x);

/* The window arguments from=, to=, min_duration=, hart= (400 on bad ones). */
int api_timeline_window_args(struct http_req *r, struct timeline_opts *o, struct oob_err *e);
/* The events a replay of the window goes through, from the index: each
 * hart's events taken as spread evenly over its time. */
double api_timeline_window_events(struct evidx *ix, const struct timeline_opts *o);

/* 1 if the request asks for a window (from= or to=). */
int api_timeline_windowed(struct http_req *r);
/* Answers a windowed flame graph request of job id with options o. */
int api_timeline_flamegraph(struct api_ctx *c, struct http_req *r, int64_t id,
			    const struct api_flame_opts *o);
/* Answers a windowed (or one-hart) /top request: the table of that cut,
 * with o's pid and priv filters, its first limit rows. */
int api_timeline_top(struct api_ctx *c, struct http_req *r, int64_t id,
		     const struct api_flame_opts *o, size_t limit);

#endif
