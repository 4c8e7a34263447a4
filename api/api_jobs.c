#include "api_jobs.h"

#include <elf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_cache.h"
#include "api_events.h"
#include "api_flame.h"
#include "api_timeline.h"
#include "api_json.h"
#include "node.h"
#include "jobspec.h"
#include "store.h"
#include "catalog.h"
#include "util/oob_mem.h"
#include "profile/annot.h"
#include "profile/profile_json.h"
#include "sample/sample.h"
#include "trace/trace_formats.h"
#include "util/oob_log.h"
#include "result.h"

static int refuse(struct http_req *r, struct oob_err *e)
{
	http_respond_oob_err(r, e);
	return HTTP_BODY_NONE;
}

/* ---- creating ---- */

int api_jobs_create_begin(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	(void)c;
	(void)q;
	return HTTP_BODY_BUFFER;
}

/* A side input (events, Go trace, code map) must be an upload of that format. */
static int check_side(struct api_ctx *c, int64_t id, const char *key, const char *format,
		      struct oob_err *e)
{
	struct catalog_trace t;
	if (!id)
		return 0;
	if (catalog_trace_get(c->cat, id, &t, e) < 0)
		return oob_err_prefix(e, "%s", key);
	if (strcmp(t.format, format) != 0)
		return oob_err_set(e, -EINVAL,
				   "%s: upload %lld is a %s trace, not a %s file (upload it with "
				   "format=%s)",
				   key, (long long)t.id, t.format, format, format);
	return 0;
}

/* An instruction trace of the job: uploaded, valid; of several, complete
 * (a stream is followed only as a job's one trace). */
static int check_trace(struct api_ctx *c, int64_t id, size_t ntraces, struct oob_err *e)
{
	struct catalog_trace t;
	int rc = catalog_trace_get(c->cat, id, &t, e);
	if (rc < 0)
		return rc;
	if (t.state == CATALOG_TRACE_INVALID)
		return oob_err_set(e, -EINVAL, "trace %lld is invalid: %s", (long long)t.id,
				   t.error);
	const struct trace_format_row *f = trace_format_find(t.format);
	/* Sampled stacks are a job's one input (recon_run reads them whole). */
	if (f && !f->ops && sample_format_is(f->fmt) && ntraces == 1 &&
	    t.state == CATALOG_TRACE_READY)
		return 0;
	if (f && !f->ops)
		return oob_err_set(e, -EINVAL, "trace %lld is a %s file, not an instruction trace",
				   (long long)t.id, t.format);
	if (ntraces > 1 && t.state != CATALOG_TRACE_READY)
		return oob_err_set(e, -EINVAL,
				   "trace %lld is %s: a job of several traces takes finished "
				   "uploads",
				   (long long)t.id, catalog_trace_state_name(t.state));
	return 0;
}

/* The ids a spec names must exist, and be usable for what they are used. */
static int check_refs(struct api_ctx *c, const struct jobspec *s, struct oob_err *e)
{
	struct catalog_binary b;
	int rc = 0;
	for (size_t i = 0; i < s->ntraces && rc == 0; i++)
		rc = check_trace(c, s->traces[i], s->ntraces, e);
	if (rc < 0 ||
	    (rc = check_side(c, s->events, "events", trace_format_name(TRACE_FMT_EVENTS), e)) < 0 ||
	    (rc = check_side(c, s->go_trace, "go_trace", trace_format_name(TRACE_FMT_GOTRACE), e)) <
		0 ||
	    (rc = check_side(c, s->pycode, "pycode", trace_format_name(TRACE_FMT_PYCODE), e)) < 0)
		return rc;
	for (size_t i = 0; i < s->nbins; i++) {
		if ((rc = catalog_binary_get(c->cat, s->bins[i].id, &b, e)) < 0)
			return rc;
		/* No pc of a RISC-V trace is in another machine's code: the job
		 * would show raw addresses for it without a word. */
		if (b.machine != EM_RISCV)
			return oob_err_set(e, -EINVAL,
					   "binary %lld (\"%s\") is not RISC-V code (ELF e_machine "
					   "%u): the trace's instructions cannot be in it",
					   (long long)b.id, b.name, b.machine);
	}
	return 0;
}

static int add_job(struct api_ctx *c, const struct jobspec *s, struct catalog_job *j,
		   struct oob_err *e)
{
	json_t *norm = jobspec_to_json(s);
	char *text = json_dumps(norm, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(norm);
	memset(j, 0, sizeof(*j));
	if (!text || strlen(text) >= sizeof(j->spec)) {
		free(text);
		return oob_err_set(e, -EFBIG, "job: specification over %zu bytes", sizeof(j->spec));
	}
	snprintf(j->spec, sizeof(j->spec), "%s", text);
	free(text);
	j->trace_id = s->trace;
	j->events_id = s->events;
	return catalog_job_add(c->cat, j, s->bins, s->nbins, e);
}

void api_jobs_create_end(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	struct jobspec s;
	size_t n;
	const char *body = http_req_body(r, &n);
	struct catalog_job *j = malloc(sizeof(*j));
	(void)q;
	if (!j || jobspec_parse_text(body, n, &s, &e) < 0 || check_refs(c, &s, &e) < 0 ||
	    add_job(c, &s, j, &e) < 0) {
		if (!j)
			oob_err_set(&e, -ENOMEM, "out of memory");
		http_respond_oob_err(r, &e);
		free(j);
		return;
	}
	/* Several nodes: the queue is the catalog's, and whichever node has an
	 * idle worker claims it (this one first, as it is awake). */
	int rc = c->node ? (node_kick(c->node), 0) : job_pool_submit(c->pool, j->id);
	if (rc < 0)
		OOB_WARN("job %lld: not queued (%d); it runs at the next start", (long long)j->id,
			 rc);
	struct job_progress p;
	int queued = job_pool_progress(c->pool, j->id, &p) == 0;
	catalog_job_get(c->cat, j->id, j, NULL);
	char url[64];
	snprintf(url, sizeof(url), "/api/v1/jobs/%lld", (long long)j->id);
	http_add_header(r, "Location", url);
	http_respond_json(r, 201, api_json_job(j, queued ? &p : NULL, NULL));
	free(j);
}

/* ---- reading ---- */

static json_t *job_json(struct api_ctx *c, const struct catalog_job *j)
{
	struct job_progress p;
	struct catalog_result res;
	/* The job's process writes "done" before the pool reaps it: until then
	 * the pool's copy of its progress is the last one relayed, older than
	 * the final count the catalog holds. */
	int active = j->state == CATALOG_JOB_QUEUED || j->state == CATALOG_JOB_RUNNING;
	int live = active && job_pool_progress(c->pool, j->id, &p) == 0;
	int has = j->has_result && catalog_result_get(c->cat, j->id, &res, NULL) == 0;
	return api_json_job(j, live ? &p : NULL, has ? &res : NULL);
}

int api_jobs_list(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	uint64_t after = 0, limit = 100;
	struct catalog_job *v;
	size_t n;
	(void)q;
	if (api_arg_uint("after", http_req_arg(r, "after"), 0, INT64_MAX, &after, &e) < 0 ||
	    api_arg_uint("limit", http_req_arg(r, "limit"), 1, 1000, &limit, &e) < 0 ||
	    catalog_job_list(c->cat, (int64_t)after, (size_t)limit, &v, &n, &e) < 0)
		return refuse(r, &e);
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, job_json(c, &v[i]));
	free(v);
	http_respond_json(r, 200, json_pack("{s:o}", "jobs", arr));
	return HTTP_BODY_NONE;
}

int api_jobs_get(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	struct catalog_job *j = malloc(sizeof(*j));
	if (!j || catalog_job_get(c->cat, q->id, j, &e) < 0) {
		free(j);
		return refuse(r, &e);
	}
	http_respond_json(r, 200, job_json(c, j));
	free(j);
	return HTTP_BODY_NONE;
}

/* A job the pool does not hold: cancel it if the catalog still says
 * queued; flag it for its node if it runs on another one (202); else
 * delete it and its files. */
static int delete_finished(struct api_ctx *c, struct http_req *r, int64_t id, struct oob_err *e)
{
	if (catalog_job_transition(c->cat, id, CATALOG_JOB_QUEUED, CATALOG_JOB_CANCELLED, NULL) ==
	    0) {
		http_respond_json(
		    r, 200, json_pack("{s:I, s:s}", "id", (json_int_t)id, "state", "cancelled"));
		return 0;
	}
	if (c->node && catalog_job_request_cancel(c->cat, id, NULL) == 1) {
		http_respond_json(
		    r, 202, json_pack("{s:I, s:s}", "id", (json_int_t)id, "state", "cancelling"));
		return 0;
	}
	int rc = catalog_job_delete(c->cat, id, e);
	if (rc < 0)
		return rc;
	char rel[64];
	result_path(id, RESULT_DIR, rel, sizeof(rel));
	store_rmdir(c->store, rel, NULL);
	api_cache_forget(c->cache, id);
	http_respond_json(r, 200, json_pack("{s:I, s:b}", "id", (json_int_t)id, "deleted", 1));
	return 0;
}

int api_jobs_delete(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	int rc = job_pool_cancel(c->pool, q->id);
	if (rc == JOB_CANCELLED_QUEUED) {
		catalog_job_transition(c->cat, q->id, CATALOG_JOB_QUEUED, CATALOG_JOB_CANCELLED,
				       NULL);
		http_respond_json(
		    r, 200, json_pack("{s:I, s:s}", "id", (json_int_t)q->id, "state", "cancelled"));
	} else if (rc == JOB_CANCELLED_RUNNING) {
		http_respond_json(
		    r, 202,
		    json_pack("{s:I, s:s}", "id", (json_int_t)q->id, "state", "cancelling"));
	} else if (delete_finished(c, r, q->id, &e) < 0) {
		return refuse(r, &e);
	}
	return HTTP_BODY_NONE;
}

/* ---- results ---- */

/* The job's loaded result, or -EBUSY (409) saying why there is none. */
static struct api_cache_ref *job_result(struct api_ctx *c, int64_t id, const struct result **res,
					struct oob_err *e)
{
	struct catalog_result row;
	return api_job_result(c, id, &row, res, e);
}

static int metric_arg(struct http_req *r, const struct result *res, enum profile_metric *m,
		      struct oob_err *e)
{
	const char *s = http_req_arg(r, "metric");
	*m = PROFILE_INSNS;
	if (s && profile_metric_parse(s, m) < 0)
		return oob_err_set(e, -EINVAL,
				   "metric \"%.40s\": expected instructions, cycles or calls", s);
	if (*m == PROFILE_CYCLES && !result_has_cycles(res))
		return oob_err_set(e, -EINVAL, "metric cycles: this trace has no cycle counts");
	return 0;
}

static int hart_arg(struct http_req *r, const struct result *res, struct oob_err *e)
{
	uint64_t hart = 0;
	const char *s = http_req_arg(r, "hart");
	unsigned harts = result_stats(res)->harts ? result_stats(res)->harts : 1;
	if (!s)
		return 0;
	if (api_arg_uint("hart", s, 0, 65535, &hart, e) < 0)
		return e->code;
	if (hart >= harts)
		return oob_err_set(e, -EINVAL, "hart %llu: this profile has %u hart(s)",
				   (unsigned long long)hart, harts);
	return 0;
}

static int flame_opts(struct http_req *r, const struct result *res, struct api_flame_opts *o,
		      struct oob_err *e)
{
	uint64_t max = API_FLAME_DEFAULT_MAX_NODES;
	const char *priv = http_req_arg(r, "priv"), *pid = http_req_arg(r, "pid");
	memset(o, 0, sizeof(*o));
	if (metric_arg(r, res, &o->metric, e) < 0 || hart_arg(r, res, e) < 0 ||
	    api_arg_uint("max_nodes", http_req_arg(r, "max_nodes"), 0, 100000000, &max, e) < 0)
		return e->code;
	if (priv && api_flame_parse_priv(priv, &o->priv) < 0)
		return oob_err_set(e, -EINVAL, "priv \"%.40s\": expected all, user or kernel",
				   priv);
	if (pid && api_flame_parse_pid(result_profile(res), pid, o, e) < 0)
		return e->code;
	o->max_nodes = (size_t)max;
	return 0;
}

int api_jobs_flamegraph(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	const struct result *res;
	struct api_flame_opts o;
	struct api_cache_ref *ref = job_result(c, q->id, &res, &e);
	if (!ref)
		return refuse(r, &e);
	char key[128];
	if (flame_opts(r, res, &o, &e) < 0) {
		refuse(r, &e);
		goto out;
	}
	/* A window, or one hart of several: cut from the stack events. */
	if (api_timeline_windowed(r) || (http_req_arg(r, "hart") && result_stats(res)->harts > 1)) {
		api_timeline_flamegraph(c, r, q->id, &o);
		goto out;
	}
	snprintf(key, sizeof(key), "flame m=%d p=%d n=%zu by_pid=%d pid=%lld", (int)o.metric,
		 (int)o.priv, o.max_nodes, o.by_pid, (long long)o.pid);
	struct api_flame_render fr = {result_profile(res), result_partial(res), &o};
	api_cache_serve(c->cache, r, ref, key, api_flame_render, &fr, "application/json");
out:
	api_cache_put(c->cache, ref);
	return HTTP_BODY_NONE;
}

struct folded_render {
	const struct result *res;
	enum profile_metric m;
	int annotate;
};

static char *folded_render(void *arg, struct api_build *b, size_t *len)
{
	(void)b;
	const struct folded_render *a = arg;
	return api_flame_folded(result_profile(a->res), a->m, a->annotate, len);
}

int api_jobs_folded(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	const struct result *res;
	enum profile_metric m;
	struct api_cache_ref *ref = job_result(c, q->id, &res, &e);
	if (!ref)
		return refuse(r, &e);
	const char *ann = http_req_arg(r, "annotate");
	struct folded_render fr = {res, PROFILE_INSNS, ann && strcmp(ann, "0") != 0};
	char key[64];
	if (metric_arg(r, res, &m, &e) < 0) {
		refuse(r, &e);
	} else {
		fr.m = m;
		snprintf(key, sizeof(key), "folded m=%d ann=%d", (int)m, fr.annotate);
		if (result_partial(res))
			http_add_header(r, "X-Oobprof-Partial", "1");
		api_cache_serve(c->cache, r, ref, key, folded_render, &fr,
				"text/plain; charset=utf-8");
	}
	api_cache_put(c->cache, ref);
	return HTTP_BODY_NONE;
}

int api_jobs_top(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	const struct result *res;
	struct api_flame_opts o;
	uint64_t limit = 100;
	struct api_cache_ref *ref = job_result(c, q->id, &res, &e);
	if (!ref)
		return refuse(r, &e);
	if (flame_opts(r, res, &o, &e) < 0 ||
	    api_arg_uint("limit", http_req_arg(r, "limit"), 1, 10000000, &limit, &e) < 0) {
		refuse(r, &e);
	} else if (api_timeline_windowed(r) ||
		   (http_req_arg(r, "hart") && result_stats(res)->harts > 1)) {
		/* the same cut as the flame graph's: from the stack events */
		api_timeline_top(c, r, q->id, &o, (size_t)limit);
	} else {
		struct profile_func *v;
		size_t n = o.by_pid || o.priv != API_PRIV_ALL
			       ? api_flame_functions(result_profile(res), &o, &v)
			       : result_functions(res, o.metric, &v);
		http_respond_json(r, 200,
				  profile_top_json(result_profile(res), v, n, (size_t)limit,
						   o.metric, result_partial(res)));
		free(v);
	}
	api_cache_put(c->cache, ref);
	return HTTP_BODY_NONE;
}

/* The process tree, in the shape `oobprof processes` prints. */
int api_jobs_processes(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	const struct result *res;
	struct api_cache_ref *ref = job_result(c, q->id, &res, &e);
	if (!ref)
		return refuse(r, &e);
	json_t *j = profile_processes_json(result_profile(res));
	json_object_set_new(j, "partial", json_boolean(result_partial(res)));
	http_respond_json(r, 200, j);
	api_cache_put(c->cache, ref);
	return HTTP_BODY_NONE;
}

/* Where a job's binaries are stored, by build-id: its run used temporary
 * links, gone since. What cannot be found is left out (no text then). */
struct job_bins {
	struct annot_binary *v;
	struct catalog_binary *b;
	char (*paths)[PATH_MAX];
	size_t n;
};

static void job_bins_get(struct api_ctx *c, int64_t job, struct job_bins *jb)
{
	struct catalog_job_binary *ids = NULL;
	size_t n = 0;
	if (catalog_job_binaries(c->cat, job, &ids, &n, NULL) < 0 || !n) {
		free(ids);
		return;
	}
	jb->v = oob_xcalloc(n, sizeof(*jb->v));
	jb->b = oob_xcalloc(n, sizeof(*jb->b));
	jb->paths = oob_xcalloc(n, sizeof(*jb->paths));
	for (size_t i = 0; i < n; i++) {
		if (catalog_binary_get(c->cat, ids[i].id, &jb->b[jb->n], NULL) < 0 ||
		    store_abspath(c->store, jb->b[jb->n].blob, jb->paths[jb->n], PATH_MAX) < 0)
			continue;
		jb->v[jb->n] = (struct annot_binary){jb->b[jb->n].build_id, jb->paths[jb->n]};
		jb->n++;
	}
	free(ids);
}

static void job_bins_free(struct job_bins *jb)
{
	free(jb->v);
	free(jb->b);
	free(jb->paths);
}

/* perf annotate's views with exact counts (profile/annot.h): needs a job
 * that counted per pc (options.pcs); 409 says so otherwise. */
int api_jobs_annotate(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	const struct result *res;
	const char *fn = http_req_arg(r, "fn"), *view = http_req_arg(r, "view");
	enum annot_view v = ANNOT_SOURCE;
	if (!fn || !*fn) {
		oob_err_set(&e, -EINVAL, "fn: the function to annotate is missing");
		return refuse(r, &e);
	}
	if (view && annot_view_parse(view, &v) < 0) {
		oob_err_set(&e, -EINVAL, "view: expected source or disasm");
		return refuse(r, &e);
	}
	struct api_cache_ref *ref = job_result(c, q->id, &res, &e);
	if (!ref)
		return refuse(r, &e);
	struct job_bins jb = {0};
	if (v == ANNOT_DISASM)
		job_bins_get(c, q->id, &jb);
	json_t *j = annot_json(result_profile(res), fn, v, jb.v, jb.n, &e);
	job_bins_free(&jb);
	if (j) {
		http_respond_json(r, 200, j);
	} else {
		if (e.code == -ENODATA)
			oob_err_set(&e, -EBUSY,
				    "job %lld ran without per-pc counts: submit it again with "
				    "options.pcs = true",
				    (long long)q->id);
		refuse(r, &e);
	}
	api_cache_put(c->cache, ref);
	return HTTP_BODY_NONE;
}
