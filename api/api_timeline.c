#include "api_timeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_cache.h"
#include "api_events.h"
#include "api_json.h"
#include "jobspec.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"
#include "profile/profile_json.h"
#include "timeline/timeline.h"
#include "timeline/timeline_go.h"
#include "timeline/timeline_json.h"
#include "timeline/timeline_lod.h"
#include "timeline/waits.h"
#include "timeline/waits_json.h"
#include "result.h"

int api_timeline_window_args(struct http_req *r, struct timeline_opts *o, struct oob_err *e)
{
	uint64_t hart = UINT64_MAX;
	memset(o, 0, sizeof(*o));
	if (api_arg_uint("from", http_req_arg(r, "from"), 0, UINT64_MAX, &o->from, e) < 0 ||
	    api_arg_uint("to", http_req_arg(r, "to"), 0, UINT64_MAX, &o->to, e) < 0 ||
	    api_arg_uint("min_duration", http_req_arg(r, "min_duration"), 0, UINT64_MAX,
			 &o->min_dur, e) < 0 ||
	    api_arg_uint("hart", http_req_arg(r, "hart"), 0, 65535, &hart, e) < 0)
		return e->code;
	if (o->to && o->to <= o->from)
		return oob_err_set(e, -EINVAL, "to must be after from");
	o->hart = hart == UINT64_MAX ? -1 : (int)hart;
	return 0;
}

int api_timeline_windowed(struct http_req *r)
{
	return http_req_arg(r, "from") || http_req_arg(r, "to");
}

int api_go_load(struct api_ctx *c, int64_t id, struct api_go *s, struct oob_err *e)
{
	struct catalog_job *j = oob_xmalloc(sizeof(*j));
	struct jobspec spec;
	struct catalog_trace t;
	char rel[128], abs[1400];
	int rc = catalog_job_get(c->cat, id, j, e);
	if (rc == 0)
		rc = jobspec_parse_text(j->spec, strlen(j->spec), &spec, e);
	free(j);
	if (rc < 0 || !spec.go_trace)
		return rc;
	result_path(id, RESULT_GO, rel, sizeof(rel));
	store_abspath(c->store, rel, abs, sizeof(abs));
	json_error_t je;
	if (!(s->clock = json_load_file(abs, 0, &je)))
		return oob_err_set(e, -EIO, "job %lld: its Go clock is unreadable: %s",
				   (long long)id, je.text);
	struct oob_err why = {0};
	s->aligned = timeline_go_clock_load(s->clock, &s->go.clock, &why) == 0;
	if (!s->aligned)
		return 0;
	if ((rc = catalog_trace_get(c->cat, spec.go_trace, &t, e)) < 0)
		return rc;
	store_abspath(c->store, t.blob, abs, sizeof(abs));
	if (!(s->trace = gotrace_open(abs, NULL, e)))
		return e->code;
	s->go.trace = s->trace;
	s->go.clock_json = s->clock;
	return 0;
}

void api_go_free(struct api_go *s)
{
	gotrace_free(s->trace);
	json_decref(s->clock);
}

static size_t count_intervals(const json_t *v)
{
	size_t n = 0, i;
	const char *k;
	json_t *x;
	if (json_is_array(v) && json_array_size(v) && json_is_integer(json_array_get(v, 0)))
		return 1; /* [start, end, ...] */
	if (json_is_array(v))
		json_array_foreach(v, i, x) n += count_intervals(x);
	else if (json_is_object(v))
		json_object_foreach((json_t *)v, k, x) n += count_intervals(x);
	return n;
}

int api_job_events_get(struct api_ctx *c, int64_t id, struct api_job_events *x, struct oob_err *e)
{
	struct catalog_result row;
	const struct result *res;
	if (!(x->ref = api_job_result(c, id, &row, &res, e)))
		return e->code;
	x->partial = result_partial(res);
	x->p = result_profile(res);
	if (!(x->log = api_job_events(c, &row, id, e)))
		return e->code;
	x->ix = api_job_index(c, id);
	return 0;
}

void api_job_events_put(struct api_ctx *c, struct api_job_events *x)
{
	evidx_free(x->ix);
	evlog_free(x->log);
	if (x->ref)
		api_cache_put(c->cache, x->ref);
}

enum { DETAIL_AUTO, DETAIL_EXACT, DETAIL_BUCKETS };

static int detail_arg(struct http_req *r, int *d, struct oob_err *e)
{
	const char *s = http_req_arg(r, "detail");
	*d = DETAIL_AUTO;
	if (!s || !strcmp(s, "auto"))
		return 0;
	if (!strcmp(s, "exact"))
		*d = DETAIL_EXACT;
	else if (!strcmp(s, "buckets"))
		*d = DETAIL_BUCKETS;
	else
		return oob_err_set(e, -EINVAL, "detail \"%.40s\": expected auto, exact or buckets",
				   s);
	return 0;
}

/* The events a replay of the window goes through, from the index: each
 * hart's events taken as spread evenly over its time. */
double api_timeline_window_events(struct evidx *ix, const struct timeline_opts *o)
{
	double n = 0;
	for (unsigned i = 0; i < evidx_nharts(ix); i++) {
		uint64_t first, last, ev;
		if ((o->hart >= 0 && (unsigned)o->hart != i) ||
		    evidx_hart_events(ix, i, &first, &last, &ev) < 0 || !ev)
			continue;
		uint64_t a = o->from > first ? o->from : first;
		uint64_t b = o->to && o->to < last ? o->to : last;
		if (last == first)
			n += o->from <= first && (!o->to || first < o->to) ? (double)ev : 0;
		else if (b > a)
			n += (double)ev * (double)(b - a) / (double)(last - first);
	}
	return n;
}

/* Whether detail=auto answers from the summaries: a replay of the window
 * would be long, and a bucket fits in min_duration. */
static int auto_buckets(const struct api_job_events *x, struct timeline_lod *l,
			const struct timeline_opts *o)
{
	return x->ix && o->min_dur >= timeline_lod_finest(l) &&
	       api_timeline_window_events(x->ix, o) > API_TIMELINE_LOD_EVENTS;
}

/* The hart intervals as detail asks: exact (a replay of the window),
 * buckets (the job's summaries; a replay builds them when the file is
 * missing or damaged), or auto (buckets when auto_buckets says so and the
 * file serves, else exact). */
static int harts_of(struct api_ctx *c, int64_t id, const struct api_job_events *x,
		    const struct timeline_opts *o, int detail, struct timeline **t,
		    struct oob_err *e)
{
	struct timeline_lod *l = detail == DETAIL_EXACT ? NULL : api_job_lod(c, id);
	struct oob_err why = {0};
	if (l && (timeline_lod_cycles(l) != profile_has_cycles(x->p) ||
		  (detail == DETAIL_AUTO && !auto_buckets(x, l, o)))) {
		timeline_lod_free(l);
		l = NULL;
	}
	if (l && timeline_lod_query(l, x->p, o, t, &why) == 0) {
		timeline_lod_free(l);
		return 0;
	}
	if (l)
		OOB_WARN("job %lld: %s: replaying its event log", (long long)id, why.msg);
	timeline_lod_free(l);
	if (detail != DETAIL_BUCKETS)
		return timeline_harts_ix(x->log, x->ix, x->p, o, t, e);
	if (!(l = timeline_lod_new(x->log, x->ix, x->p, e)))
		return e->code;
	int rc = timeline_lod_query(l, x->p, o, t, e);
	timeline_lod_free(l);
	return rc;
}

/* A timeline request's arguments, parsed before its build (which must not
 * read the request: api_cache_serve). */
struct timeline_render {
	struct api_ctx *c;
	int64_t id;
	struct timeline_opts o;
	unsigned tracks;
	int detail;
	const struct api_job_events *x;
};

static json_t *timeline_build(const struct timeline_render *a, struct oob_err *e)
{
	struct timeline *t = NULL;
	struct api_go go = {0};
	json_t *j = NULL;
	if (harts_of(a->c, a->id, a->x, &a->o, a->detail, &t, e) < 0 ||
	    api_go_load(a->c, a->id, &go, e) < 0)
		goto out;
	j = timeline_json(t, a->x->p, go.trace ? &go.go : NULL, &a->o, a->tracks);
	if (go.clock && !go.aligned)
		json_object_set_new(j, "go", json_pack("{s:O}", "clock", go.clock));
	json_object_set_new(j, "partial", json_boolean(a->x->partial));
out:
	api_go_free(&go);
	timeline_free(t);
	return j;
}

static char *timeline_render(void *arg, struct api_build *b, size_t *len)
{
	const struct timeline_render *a = arg;
	evlog_watch(a->x->log, &b->progress);
	json_t *j = timeline_build(a, &b->err);
	evlog_watch(a->x->log, NULL);
	if (!j)
		return NULL;
	size_t n = count_intervals(j);
	if (n <= API_TIMELINE_MAX_INTERVALS)
		return api_json_body(j, len);
	json_decref(j);
	oob_err_set(
	    &b->err, -EFBIG,
	    "%zu intervals is over the bound of %d: raise min_duration or narrow the window", n,
	    API_TIMELINE_MAX_INTERVALS);
	return NULL;
}

int api_jobs_timeline(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	struct api_job_events x = {0};
	struct timeline_render a = {.c = c, .id = q->id, .tracks = TIMELINE_T_ALL, .x = &x};
	const char *tr = http_req_arg(r, "tracks");
	if (api_timeline_window_args(r, &a.o, &e) < 0 ||
	    (tr && timeline_tracks_parse(tr, &a.tracks, &e) < 0) ||
	    detail_arg(r, &a.detail, &e) < 0 || api_job_events_get(c, q->id, &x, &e) < 0) {
		http_respond_oob_err(r, &e);
	} else {
		char key[128];
		snprintf(key, sizeof(key), "timeline f=%llu t=%llu md=%llu h=%d tr=%u d=%d",
			 (unsigned long long)a.o.from, (unsigned long long)a.o.to,
			 (unsigned long long)a.o.min_dur, a.o.hart, a.tracks, a.detail);
		api_cache_serve(c->cache, r, x.ref, key, timeline_render, &a, "application/json");
	}
	api_job_events_put(c, &x);
	return HTTP_BODY_NONE;
}

/* A window's flame graph or top table: the part of the event log in the
 * window replayed from its checkpoint (timeline_profile_ix). */
struct window_render {
	const struct api_job_events *x;
	struct timeline_opts o;
	const struct api_flame_opts *fo;
	size_t limit; /* the top table's rows; 0: the flame graph */
};

static char *window_render(void *arg, struct api_build *b, size_t *len)
{
	const struct window_render *a = arg;
	const struct api_job_events *x = a->x;
	struct profile *w = NULL;
	json_t *j = NULL;
	evlog_watch(x->log, &b->progress);
	int rc =
	    timeline_profile_ix(x->log, x->ix, x->p, a->o.hart, a->o.from, a->o.to, &w, &b->err);
	evlog_watch(x->log, NULL);
	if (rc < 0)
		return NULL;
	if (a->limit) {
		struct profile_func *v;
		size_t n = api_flame_functions(w, a->fo, &v);
		j = profile_top_json(w, v, n, a->limit, a->fo->metric, x->partial);
		free(v);
	} else {
		j = api_flame_build(w, x->partial, a->fo);
	}
	profile_free(w);
	json_object_set_new(j, "from", json_integer((json_int_t)a->o.from));
	json_object_set_new(j, "to", a->o.to ? json_integer((json_int_t)a->o.to) : json_null());
	return api_json_body(j, len);
}

static void serve_window(struct api_ctx *c, struct http_req *r, int64_t id,
			 const struct api_flame_opts *fo, size_t limit)
{
	struct oob_err e = {0};
	struct api_job_events x = {0};
	struct window_render a = {.x = &x, .fo = fo, .limit = limit};
	if (api_timeline_window_args(r, &a.o, &e) < 0 || api_job_events_get(c, id, &x, &e) < 0) {
		http_respond_oob_err(r, &e);
	} else {
		char key[128];
		snprintf(key, sizeof(key),
			 "window f=%llu t=%llu h=%d m=%d p=%d n=%zu pid=%d:%lld l=%zu",
			 (unsigned long long)a.o.from, (unsigned long long)a.o.to, a.o.hart,
			 (int)fo->metric, (int)fo->priv, fo->max_nodes, fo->by_pid,
			 (long long)fo->pid, limit);
		api_cache_serve(c->cache, r, x.ref, key, window_render, &a, "application/json");
	}
	api_job_events_put(c, &x);
}

int api_timeline_flamegraph(struct api_ctx *c, struct http_req *r, int64_t id,
			    const struct api_flame_opts *fo)
{
	serve_window(c, r, id, fo, 0);
	return HTTP_BODY_NONE;
}

int api_timeline_top(struct api_ctx *c, struct http_req *r, int64_t id,
		     const struct api_flame_opts *fo, size_t limit)
{
	serve_window(c, r, id, fo, limit);
	return HTTP_BODY_NONE;
}

/* ---- off-CPU waits and the critical path (waits.h) ---- */

/* The task a request names (task=, or pid= for offcpu): WAITS_NONE when it
 * names none; -ENOENT when it names one the run does not have. */
static int task_arg(struct http_req *r, const struct profile *p, uint32_t *task, struct oob_err *e)
{
	const char *s = http_req_arg(r, "task");
	if (!s)
		s = http_req_arg(r, "pid");
	*task = WAITS_NONE;
	if (!s)
		return 0;
	if ((*task = waits_task_named(p, s)) == WAITS_NONE)
		return oob_err_set(e, -ENOENT,
				   "no task \"%.60s\" in this job (a pid, or a task's name as in "
				   "/processes)",
				   s);
	return 0;
}

static int offcpu_view(struct http_req *r, int *fmt, struct oob_err *e)
{
	static const char *const names[] = {"json", "flamegraph", "folded"};
	const char *s = http_req_arg(r, "view");
	*fmt = 0;
	for (int i = 0; s && i < 3; i++)
		if (!strcmp(s, names[i]))
			*fmt = i + 1;
	if (s && !*fmt)
		return oob_err_set(e, -EINVAL,
				   "view \"%.40s\": expected json, flamegraph or folded", s);
	*fmt = *fmt ? *fmt - 1 : 0;
	return 0;
}

/* The off-CPU views and the critical path come from a replay of the whole
 * event log (waits_build). They are kept as renderings of the job's result
 * (api_cache_serve, keyed by view and arguments), so the same view asked
 * again, or by several clients at once, costs one replay. */
enum { WV_JSON, WV_FLAME, WV_FOLDED, WV_PATH };

struct waits_render {
	const struct api_job_events *x;
	int view;
	uint32_t task;
	uint64_t from, to, top; /* WV_PATH */
};

static char *waits_body(const struct waits_render *a, const struct waits *w, struct oob_err *e,
			size_t *len)
{
	const struct api_job_events *x = a->x;
	struct api_flame_opts fo = {.metric = PROFILE_INSNS,
				    .max_nodes = API_FLAME_DEFAULT_MAX_NODES};
	struct profile *o = NULL;
	json_t *j = NULL;
	char *body = NULL;
	if (a->view == WV_JSON) {
		j = waits_json(w, x->p, a->task);
	} else if (a->view == WV_PATH) {
		waits_path_json(x->log, w, x->p, a->task, a->from, a->to, (unsigned)a->top, &j, e);
	} else if ((o = waits_offcpu_profile(w, x->p, a->task, e))) {
		if (a->view == WV_FOLDED)
			body = api_flame_folded(o, PROFILE_INSNS, 0, len);
		else
			j = api_flame_build(o, x->partial, &fo); /* says partial itself */
		profile_free(o);
	}
	if (j && a->view != WV_FLAME)
		json_object_set_new(j, "partial", json_boolean(x->partial));
	return j ? api_json_body(j, len) : body;
}

static char *waits_render(void *arg, struct api_build *b, size_t *len)
{
	const struct waits_render *a = arg;
	struct waits *w = NULL;
	char *body = NULL;
	evlog_watch(a->x->log, &b->progress);
	if (a->view == WV_PATH) /* a replay for the waits, one for the path's stacks */
		oob_progress_expect(&b->progress, 2 * evlog_body_bytes(a->x->log));
	if (waits_build(a->x->log, a->x->p, &w, &b->err) == 0)
		body = waits_body(a, w, &b->err, len);
	evlog_watch(a->x->log, NULL);
	waits_free(w);
	return body;
}

static void respond_waits(struct api_ctx *c, struct http_req *r, struct waits_render *a)
{
	char key[128];
	snprintf(key, sizeof(key), "waits v=%d t=%u f=%llu to=%llu top=%llu", a->view, a->task,
		 (unsigned long long)a->from, (unsigned long long)a->to,
		 (unsigned long long)a->top);
	api_cache_serve(c->cache, r, a->x->ref, key, waits_render, a,
			a->view == WV_FOLDED ? "text/plain; charset=utf-8" : "application/json");
}

int api_jobs_offcpu(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	struct api_job_events x = {0};
	struct waits_render a = {.x = &x};
	if (offcpu_view(r, &a.view, &e) < 0 || api_job_events_get(c, q->id, &x, &e) < 0 ||
	    task_arg(r, x.p, &a.task, &e) < 0)
		http_respond_oob_err(r, &e);
	else
		respond_waits(c, r, &a);
	api_job_events_put(c, &x);
	return HTTP_BODY_NONE;
}

int api_jobs_path(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	struct timeline_opts o;
	struct api_job_events x = {0};
	struct waits_render a = {.x = &x, .view = WV_PATH, .top = 5};
	if (!http_req_arg(r, "task"))
		oob_err_set(&e, -EINVAL,
			    "task is needed: a pid, or a task's name as in /processes");
	else if (api_timeline_window_args(r, &o, &e) == 0 &&
		 api_arg_uint("top", http_req_arg(r, "top"), 0, 100, &a.top, &e) == 0 &&
		 api_job_events_get(c, q->id, &x, &e) == 0 && task_arg(r, x.p, &a.task, &e) == 0) {
		a.from = o.from;
		a.to = o.to;
		respond_waits(c, r, &a);
	}
	if (e.code)
		http_respond_oob_err(r, &e);
	api_job_events_put(c, &x);
	return HTTP_BODY_NONE;
}
