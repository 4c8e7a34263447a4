#include "api_export.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_cache.h"
#include "api_events.h"
#include "api_json.h"
#include "api_timeline.h"
#include "recon/evlog.h"
#include "export/export.h"
#include "jobspec.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"
#include "recon/recon.h"
#include "result.h"

struct export_req {
	struct export_opts o;
	int metric_given, download;
	char name[CATALOG_NAME_MAX];
};

/* ---- arguments ---- */

static int parse_args(struct http_req *r, struct export_req *x, uint64_t max_events,
		      struct oob_err *e)
{
	uint64_t sampled = 0, annotate = 0, download = 0;
	const char *m = http_req_arg(r, "metric");
	const char *path = http_req_path(r);
	if (export_format_parse(strrchr(path, '/') + 1, &x->o.format) < 0)
		return oob_err_set(e, -ENOENT, "no such export: %.100s", path);
	if (m && profile_metric_parse(m, &x->o.metric) < 0)
		return oob_err_set(e, -EINVAL,
				   "metric \"%.40s\": expected instructions, cycles or calls", m);
	x->metric_given = m != NULL;
	x->o.max_events = API_EXPORT_SPEEDSCOPE_EVENTS;
	if (api_arg_uint("clock_hz", http_req_arg(r, "clock_hz"), 1, UINT64_MAX, &x->o.clock_hz,
			 e) < 0 ||
	    api_arg_uint("min_duration", http_req_arg(r, "min_duration"), 0, UINT64_MAX,
			 &x->o.min_duration, e) < 0 ||
	    api_arg_uint("max_events", http_req_arg(r, "max_events"), 0, max_events,
			 &x->o.max_events, e) < 0 ||
	    api_arg_uint("sampled", http_req_arg(r, "sampled"), 0, 1, &sampled, e) < 0 ||
	    api_arg_uint("annotate", http_req_arg(r, "annotate"), 0, 1, &annotate, e) < 0 ||
	    api_arg_uint("download", http_req_arg(r, "download"), 0, 1, &download, e) < 0)
		return e->code;
	x->o.sampled = (int)sampled;
	x->o.annotate = (int)annotate;
	x->download = (int)download;
	return 0;
}

/* The defaults that need the result: see api_export.h. */
static int settle_metric(struct export_req *x, const struct result *res, struct oob_err *e)
{
	int cycles = result_has_cycles(res);
	if (x->metric_given) {
		if (x->o.metric == PROFILE_CYCLES && !cycles)
			return oob_err_set(e, -EINVAL,
					   "metric cycles: this trace has no cycle counts");
		return 0;
	}
	if (cycles && (export_wants_events(&x->o) || result_stats(res)->instructions == 0))
		x->o.metric = PROFILE_CYCLES;
	return 0;
}

/* ---- the response ---- */

/* An unlinked file under DATA/tmp: the export streams into it, then out of
 * it (http_respond_fd), never whole in memory. */
static FILE *temp_file(struct api_ctx *c, struct oob_err *e)
{
	char path[1400];
	store_abspath(c->store, "tmp/export-XXXXXX", path, sizeof(path));
	int fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0) {
		oob_err_set(e, -errno, "export: temporary file: %s", strerror(errno));
		return NULL;
	}
	unlink(path);
	FILE *f = fdopen(fd, "w+b");
	if (!f)
		close(fd);
	return f;
}

/* The response's headers, known before the export is written. */
static void add_headers(struct http_req *r, const struct export_req *x, int64_t id, int partial,
			const struct evlog *log)
{
	char disp[CATALOG_NAME_MAX + 128];
	if (x->download) {
		snprintf(disp, sizeof(disp), "attachment; filename=\"%s-job%lld%s\"", x->name,
			 (long long)id, export_file_suffix(x->o.format));
		http_add_header(r, "Content-Disposition", disp);
	}
	if (partial)
		http_add_header(r, "X-Oobprof-Partial", "1");
	if (x->o.format == EXPORT_SPEEDSCOPE && export_speedscope_fell_back(log, &x->o))
		http_add_header(r, "X-Oobprof-Fallback", "sampled");
}

/* What an export's build (api_cache_serve) reads: nothing of the request. */
struct export_render {
	struct api_ctx *c;
	const struct profile *p;
	struct evlog *log;
	const struct export_req *x;
};

/* Writes the export into an unlinked file, left to the cache (api_build.fd). */
static char *export_render(void *arg, struct api_build *b, size_t *len)
{
	const struct export_render *a = arg;
	struct stat st;
	if (a->log) {
		evlog_watch(a->log, &b->progress);
		/* speedscope's evented profile replays the log once per hart */
		if (a->x->o.format == EXPORT_SPEEDSCOPE &&
		    !export_speedscope_fell_back(a->log, &a->x->o))
			oob_progress_expect(&b->progress,
					    evlog_nharts(a->log) * evlog_body_bytes(a->log));
	}
	FILE *f = temp_file(a->c, &b->err);
	if (!f)
		return NULL;
	if (export_write(a->p, a->log, &a->x->o, f, &b->err) == 0 && fflush(f) == 0 &&
	    fstat(fileno(f), &st) == 0 && (b->fd = dup(fileno(f))) >= 0)
		*len = (size_t)st.st_size;
	else if (!b->err.code)
		oob_err_set(&b->err, -EIO, "export: cannot write the output: %s", strerror(errno));
	fclose(f);
	if (a->log)
		evlog_watch(a->log, NULL);
	return NULL;
}

static int write_export(struct api_ctx *c, struct http_req *r, const struct catalog_result *row,
			struct api_cache_ref *ref, const struct result *res, struct export_req *x,
			int64_t id, struct oob_err *e)
{
	struct export_render a = {.c = c, .p = result_profile(res), .x = x};
	struct api_go go = {0};
	char key[128];
	int rc = 0;
	if (export_wants_events(&x->o) && !(a.log = api_job_events(c, row, id, e)))
		rc = e->code;
	if (x->o.format == EXPORT_PPROF && !profile_npcs(a.p)) {
		/* per-hart samples when the job kept its events; else without */
		struct oob_err none = {0};
		a.log = api_job_events(c, row, id, &none);
	}
	if (rc == 0 && export_is_perfetto(x->o.format) && (rc = api_go_load(c, id, &go, e)) == 0)
		x->o.go = go.trace ? &go.go : NULL;
	if (rc == 0) {
		snprintf(key, sizeof(key), "export f=%d m=%d hz=%llu md=%llu me=%llu s=%d a=%d",
			 (int)x->o.format, (int)x->o.metric, (unsigned long long)x->o.clock_hz,
			 (unsigned long long)x->o.min_duration, (unsigned long long)x->o.max_events,
			 x->o.sampled, x->o.annotate);
		add_headers(r, x, id, result_partial(res), a.log);
		api_cache_serve(c->cache, r, ref, key, export_render, &a,
				export_content_type(x->o.format));
	}
	x->o.go = NULL;
	api_go_free(&go);
	evlog_free(a.log);
	return rc;
}

int api_export_get(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	struct export_req *x = oob_xcalloc(1, sizeof(*x));
	struct catalog_result row;
	struct catalog_trace t;
	const struct result *res = NULL;
	struct api_cache_ref *ref = NULL;
	int rc = parse_args(r, x, c->cfg->max_events, &e);
	if (rc == 0 && !(ref = api_job_result(c, q->id, &row, &res, &e)))
		rc = e.code;
	if (rc == 0)
		rc = settle_metric(x, res, &e);
	if (rc == 0) { /* the trace's name names the profile */
		struct catalog_job *j = oob_xmalloc(sizeof(*j));
		if (catalog_job_get(c->cat, q->id, j, NULL) == 0 &&
		    catalog_trace_get(c->cat, j->trace_id, &t, NULL) == 0)
			snprintf(x->name, sizeof(x->name), "%s", t.name);
		free(j);
	}
	x->o.name = x->name[0] ? x->name : NULL;
	if (rc == 0)
		rc = write_export(c, r, &row, ref, res, x, q->id, &e);
	if (rc < 0)
		http_respond_oob_err(r, &e);
	if (ref)
		api_cache_put(c->cache, ref);
	free(x);
	return HTTP_BODY_NONE;
}
