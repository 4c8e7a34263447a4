#include "api_routes.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <nettle/memops.h>
#include <nettle/sha2.h>

#include "api_compare.h"
#include "api_export.h"
#include "api_inputs.h"
#include "api_jobs.h"
#include "api_metrics.h"
#include "api_remove.h"
#include "api_slices.h"
#include "api_timeline.h"
#include "api_static.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"

#ifndef OOB_VERSION
#define OOB_VERSION "unknown"
#endif

static int health(struct api_ctx *c, struct http_req *r, struct api_req *q);
static int static_file(struct api_ctx *c, struct http_req *r, struct api_req *q);
static int openapi(struct api_ctx *c, struct http_req *r, struct api_req *q);

#define UPLOAD(m, p, begin)                                                                        \
	{                                                                                          \
		m, p, begin, api_inputs_upload_chunk, api_inputs_upload_end,                       \
		    api_inputs_upload_done, 1                                                      \
	}
#define READ(p, fn)                                                                                \
	{                                                                                          \
		"GET", p, fn, NULL, NULL, NULL, 0                                                  \
	}

static const struct api_route routes[] = {
    READ("/api/v1/health", health),
    READ("/api/v1/openapi.yaml", openapi),
    READ("/metrics", api_metrics_get),
    UPLOAD("POST", "/api/v1/binaries", api_inputs_binary_begin),
    UPLOAD("PUT", "/api/v1/binaries", api_inputs_binary_begin),
    READ("/api/v1/binaries", api_inputs_list_binaries),
    READ("/api/v1/binaries/{id}", api_inputs_get_binary),
    {"DELETE", "/api/v1/binaries/{id}", api_remove_binary, NULL, NULL, NULL, 1},
    UPLOAD("POST", "/api/v1/traces", api_inputs_trace_begin),
    UPLOAD("PUT", "/api/v1/traces", api_inputs_trace_begin),
    READ("/api/v1/traces", api_inputs_list_traces),
    READ("/api/v1/traces/{id}", api_inputs_get_trace),
    {"DELETE", "/api/v1/traces/{id}", api_remove_trace, NULL, NULL, NULL, 1},
    READ("/api/v1/formats", api_inputs_formats),
    {"POST", "/api/v1/jobs", api_jobs_create_begin, NULL, api_jobs_create_end, NULL, 1},
    READ("/api/v1/compare", api_compare_get),
    READ("/api/v1/jobs", api_jobs_list),
    READ("/api/v1/jobs/{id}", api_jobs_get),
    {"DELETE", "/api/v1/jobs/{id}", api_jobs_delete, NULL, NULL, NULL, 1},
    READ("/api/v1/jobs/{id}/flamegraph", api_jobs_flamegraph),
    READ("/api/v1/jobs/{id}/folded", api_jobs_folded),
    READ("/api/v1/jobs/{id}/top", api_jobs_top),
    READ("/api/v1/jobs/{id}/annotate", api_jobs_annotate),
    READ("/api/v1/jobs/{id}/processes", api_jobs_processes),
    READ("/api/v1/jobs/{id}/timeline", api_jobs_timeline),
    READ("/api/v1/jobs/{id}/slices", api_jobs_slices),
    READ("/api/v1/jobs/{id}/offcpu", api_jobs_offcpu),
    READ("/api/v1/jobs/{id}/path", api_jobs_path),
    READ("/api/v1/jobs/{id}/export/speedscope", api_export_get),
    READ("/api/v1/jobs/{id}/export/perfetto", api_export_get),
    READ("/api/v1/jobs/{id}/export/perfetto-json", api_export_get),
    READ("/api/v1/jobs/{id}/export/perfetto-pb", api_export_get),
    READ("/api/v1/jobs/{id}/export/pprof", api_export_get),
    READ("/api/v1/jobs/{id}/export/folded", api_export_get),
    READ("/api/v1/jobs/{id}/export/svg", api_export_get),
    READ("/", static_file),
    READ("/{name}", static_file),
};

#define NROUTES (sizeof(routes) / sizeof(routes[0]))

void api_print_routes(FILE *f)
{
	for (size_t i = 0; i < NROUTES; i++)
		fprintf(f, "%s %s\n", routes[i].method, routes[i].pattern);
}

/* ---- matching ---- */

static int seg_len(const char *s)
{
	return (int)strcspn(s, "/");
}

/* Matches path against pattern; fills q's {id} and {name}. "/{name}" at the
 * end of the table is the static-file catch-all: it takes the rest of the
 * path, slashes included. */
static int match(const char *pattern, const char *path, struct api_req *q)
{
	/* A request target of "?x" leaves libmicrohttpd's path empty: past its
	 * end lies no segment to match (the catch-all read beyond it). */
	if (path[0] != '/')
		return 0;
	if (!strcmp(pattern, "/{name}")) {
		if (strncmp(path, "/api/", 5) == 0 || strlen(path + 1) >= sizeof(q->name))
			return 0;
		snprintf(q->name, sizeof(q->name), "%s", path + 1);
		return path[1] != '\0';
	}
	while (*pattern && *path) {
		if (*pattern != '/' || *path != '/')
			return 0;
		pattern++, path++;
		int pl = seg_len(pattern), sl = seg_len(path);
		if (!strncmp(pattern, "{id}", 4)) {
			char *end;
			if (sl == 0 || sl > 18 || !isdigit((unsigned char)*path))
				return 0;
			q->id = strtoll(path, &end, 10);
			if (end != path + sl || q->id <= 0)
				return 0;
		} else if (!strncmp(pattern, "{name}", 6)) {
			if (sl == 0 || (size_t)sl >= sizeof(q->name))
				return 0;
			memcpy(q->name, path, (size_t)sl);
			q->name[sl] = '\0';
		} else if (pl != sl || strncmp(pattern, path, (size_t)pl) != 0) {
			return 0;
		}
		pattern += pl, path += sl;
	}
	return !*pattern && !*path;
}

/* The route for (method, path), or NULL with allow[] listing the methods
 * that would have matched the path. HEAD is served as GET (and allowed
 * with it). */
static const struct api_route *lookup(const char *method, const char *path, struct api_req *q,
				      char *allow, size_t n)
{
	const char *m = strcmp(method, "HEAD") ? method : "GET";
	allow[0] = '\0';
	for (size_t i = 0; i < NROUTES; i++) {
		struct api_req tmp = {0};
		if (!match(routes[i].pattern, path, &tmp))
			continue;
		if (!strcmp(routes[i].method, m)) {
			*q = tmp;
			q->route = &routes[i];
			return &routes[i];
		}
		if (!strstr(allow, routes[i].method)) {
			size_t l = strlen(allow);
			snprintf(allow + l, n - l, "%s%s%s", l ? ", " : "", routes[i].method,
				 strcmp(routes[i].method, "GET") ? "" : ", HEAD");
		}
	}
	return NULL;
}

/* ---- authentication ---- */

int api_load_token(struct api_ctx *c, const char *path, struct oob_err *err)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	if (!f)
		return oob_err_set(err, -errno, "token file %s: %s", path, strerror(errno));
	int ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	char *s = line, *e;
	while (ok && isspace((unsigned char)*s))
		s++;
	e = ok ? s + strlen(s) : s;
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	if (!ok || e - s < 8)
		return oob_err_set(err, -EINVAL,
				   "token file %s: the token must have 8 or more "
				   "characters on the first line",
				   path);
	struct sha256_ctx h;
	sha256_init(&h);
	sha256_update(&h, (size_t)(e - s), (const uint8_t *)s);
	sha256_digest(&h, sizeof(c->token_sha), c->token_sha);
	c->have_token = 1;
	return 0;
}

/* Hashing both sides first makes the comparison's time independent of the
 * presented token's length as well as its content. */
static int token_ok(const struct api_ctx *c, const char *header)
{
	uint8_t got[32];
	struct sha256_ctx h;
	if (!header || strncasecmp(header, "Bearer ", 7) != 0)
		return 0;
	const char *t = header + 7;
	while (*t == ' ')
		t++;
	sha256_init(&h);
	sha256_update(&h, strlen(t), (const uint8_t *)t);
	sha256_digest(&h, sizeof(got), got);
	return memeql_sec(got, c->token_sha, sizeof(got));
}

static int needs_token(const struct api_ctx *c, const struct api_route *rt)
{
	if (!c->have_token)
		return 0;
	if (rt->write)
		return 1;
	return c->cfg->auth_reads && rt->begin != health && rt->begin != static_file &&
	       rt->begin != openapi;
}

/* ---- the hooks ---- */

/* The views of a job's result (flame graph, folded, top, processes,
 * timeline, exports) load and render results, for seconds on a big one:
 * they run on the compute threads (http_defer) so that the event loop keeps
 * serving /health and the quick routes meanwhile. */
static int computes(const struct api_route *rt)
{
	static const char prefix[] = "/api/v1/jobs/{id}/";
	return !strcmp(rt->method, "GET") &&
	       (!strncmp(rt->pattern, prefix, sizeof(prefix) - 1) || rt->begin == api_compare_get);
}

static void run_deferred(void *ctx, struct http_req *r)
{
	struct api_req *q = http_req_data(r);
	q->route->begin(ctx, r, q);
}

static int on_begin(void *ctx, struct http_req *r)
{
	struct api_ctx *c = ctx;
	struct api_req *q = oob_xcalloc(1, sizeof(*q));
	char allow[64];
	http_req_set_data(r, q);
	const struct api_route *rt =
	    lookup(http_req_method(r), http_req_path(r), q, allow, sizeof(allow));
	if (!rt && allow[0]) {
		http_add_header(r, "Allow", allow);
		http_respond_error(r, 405, "method_not_allowed",
				   "%s is not allowed here (allowed: %s)", http_req_method(r),
				   allow);
		return HTTP_BODY_NONE;
	}
	if (!rt) {
		http_respond_error(r, 404, "not_found", "no such route: %.200s", http_req_path(r));
		return HTTP_BODY_NONE;
	}
	if (needs_token(c, rt) && !token_ok(c, http_req_header(r, "Authorization"))) {
		http_add_header(r, "WWW-Authenticate", "Bearer realm=\"oobprof\"");
		http_respond_error(r, 401, "unauthorized",
				   "this request needs \"Authorization: Bearer <token>\"");
		q->route = NULL;
		return HTTP_BODY_NONE;
	}
	if (computes(rt)) {
		http_defer(r, run_deferred);
		return HTTP_BODY_NONE;
	}
	return rt->begin(c, r, q);
}

static int on_chunk(void *ctx, struct http_req *r, const void *p, size_t n)
{
	struct api_req *q = http_req_data(r);
	return q->route && q->route->chunk ? q->route->chunk(ctx, r, q, p, n) : -EINVAL;
}

static void on_end(void *ctx, struct http_req *r)
{
	struct api_req *q = http_req_data(r);
	if (q->route && q->route->end && !http_req_responded(r))
		q->route->end(ctx, r, q);
}

static void on_done(void *ctx, struct http_req *r, int complete)
{
	struct api_req *q = http_req_data(r);
	if (!q)
		return;
	if (q->route && q->route->done)
		q->route->done(ctx, q, complete);
	free(q);
}

static const struct http_hooks hooks = {on_begin, on_chunk, on_end, on_done};

const struct http_hooks *api_hooks(void)
{
	return &hooks;
}

/* ---- small routes ---- */

static int health(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct timespec ts;
	(void)q;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	double up = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 - c->started;
	int64_t queued = catalog_job_count(c->cat, CATALOG_JOB_QUEUED);
	json_t *j = json_pack(
	    "{s:s, s:s, s:f, s:i, s:I, s:i, s:i, s:i}", "status", "ok", "version", OOB_VERSION,
	    "uptime_s", up, "workers", (int)job_pool_workers(c->pool), "queue",
	    (json_int_t)job_pool_queue_len(c->pool), "running", (int)job_pool_running(c->pool),
	    "uploads", (int)upload_active(c->uploads), "schema", catalog_schema_version(c->cat));
	/* Which node this is and what it shares with the others. */
	json_object_set_new(j, "node", json_string(catalog_node(c->cat)));
	json_object_set_new(j, "catalog", json_string(catalog_where(c->cat)));
	json_object_set_new(j, "shared", json_boolean(catalog_is_shared(c->cat)));
	json_object_set_new(j, "store", json_string(store_root(c->store)));
	json_object_set_new(j, "queued", json_integer(queued < 0 ? 0 : queued));
	http_respond_json(r, 200, j);
	return HTTP_BODY_NONE;
}

static int static_file(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	api_static_serve(c->statics, r, q->name[0] ? q->name : "/");
	return HTTP_BODY_NONE;
}

static int openapi(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	(void)c;
	(void)q;
	api_static_openapi(r);
	return HTTP_BODY_NONE;
}
