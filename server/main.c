/*
 * oobprofd: the oobprof server (DESIGN.md 5). Wires the modules together:
 * settings -> store + catalog (data folder) -> job pool (worker.h) -> HTTP
 * (http.h) with the API (api_routes.h). Each job runs in a process of its own
 * (jobproc.h: `oobprofd --run-job`), so that no input can take the server
 * down. Start-up recovers from a crash:
 * unfinished uploads are dropped (store), open streams become "incomplete"
 * and jobs that were running are queued again (catalog). SIGINT/SIGTERM stop
 * it cleanly: running jobs are interrupted and queued for the next start.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api_cache.h"
#include "api_inputs.h"
#include "api_routes.h"
#include "api_static.h"
#include "catalog.h"
#include "http.h"
#include "job.h"
#include "jobproc.h"
#include "node.h"
#include "util/oob_log.h"
#include "settings.h"
#include "store.h"
#include "trace/trace_write.h"
#include "upload.h"
#include "worker.h"

#ifndef OOB_VERSION
#define OOB_VERSION "unknown"
#endif
#ifndef OOB_STATIC_DIRS
#define OOB_STATIC_DIRS ""
#endif

#define JSON_BODY_MAX (1u << 20)

struct server {
	struct settings cfg;
	char catalog[SETTINGS_PATH_MAX + 16]; /* catalog_open's where */
	struct store *store;
	struct catalog *cat;
	struct upload_registry *uploads;
	struct job_pool *pool;
	struct node *node; /* on a shared catalog only */
	struct worker_env env;
	struct jobproc_env jobs;
	struct api_ctx api;
	struct http_server *http;
};

/* The first of the --static folder, the installed one and the source tree's
 * that exists; none is fine (a built-in page is served). */
static struct api_static *open_static(const struct settings *cfg)
{
	struct oob_err err = {0};
	if (cfg->static_dir[0]) {
		struct api_static *s = api_static_open(cfg->static_dir, &err);
		if (!s)
			OOB_WARN("%s; serving the built-in page", err.msg);
		return s;
	}
	char dirs[4096];
	snprintf(dirs, sizeof(dirs), "%s", OOB_STATIC_DIRS);
	for (char *save, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		struct api_static *s = api_static_open(d, NULL);
		if (s && api_static_count(s))
			return s;
		api_static_free(s);
	}
	return NULL;
}

/* Through an out_file (trace_write.h): a file is replaced whole, a pipe is
 * written to, and nothing we did not create is truncated or removed. */
static int write_port_file(const char *path, unsigned port)
{
	struct out_file o;
	FILE *f;
	if (out_file_open(&o, path, NULL) < 0)
		return -1;
	if (!(f = out_file_stream(&o, NULL)) || fprintf(f, "%u\n", port) < 0) {
		out_file_abort(&o);
		return -1;
	}
	return out_file_commit(&o, NULL);
}

static int recover_jobs(struct server *s, struct oob_err *err)
{
	int64_t *ids;
	size_t n;
	int kept = api_inputs_recover_streams(&s->api, err);
	if (kept < 0)
		return kept;
	if (kept > 0)
		OOB_WARN("%d streamed upload(s) cut short by the last stop kept their bytes", kept);
	int closed = catalog_trace_close_streams(s->cat, err);
	if (closed < 0)
		return closed;
	if (closed > 0)
		OOB_WARN("%d streamed upload(s) were cut short by the last stop", closed);
	int rc = catalog_job_recover(s->cat, &ids, &n, err);
	if (rc < 0)
		return rc;
	/* On a shared catalog the queue is everyone's: the node claims. */
	for (size_t i = 0; i < n && !s->node; i++)
		job_pool_submit(s->pool, ids[i]);
	if (n)
		OOB_INFO("%zu queued job(s) resumed", n);
	free(ids);
	return 0;
}

/* This node's name in leases: --node-id, else host name:port (stable
 * across restarts, so that a restart finds its own jobs at once). */
static void node_name(const struct settings *cfg, char *buf, size_t n)
{
	char host[64] = "localhost";
	if (cfg->node_id[0]) {
		snprintf(buf, n, "%s", cfg->node_id);
		return;
	}
	gethostname(host, sizeof(host) - 1);
	if (cfg->listen_port)
		snprintf(buf, n, "%s:%u", host, cfg->listen_port);
	else
		snprintf(buf, n, "%s:pid%ld", host, (long)getpid());
}

/* One node: the store first (it makes the data folder the SQLite file
 * lives in). Several: the catalog first (reachable?), then the store with
 * the node's own temporary folder. */
static int open_storage(struct server *s, struct oob_err *err)
{
	char node[128];
	if (!s->cfg.catalog[0]) {
		snprintf(s->catalog, sizeof(s->catalog), "%s/catalog.db", s->cfg.data_dir);
		if (!(s->store = store_open(s->cfg.data_dir, err)))
			return err->code;
		return (s->cat = catalog_open(s->catalog, err)) ? 0 : err->code;
	}
	snprintf(s->catalog, sizeof(s->catalog), "%s", s->cfg.catalog);
	if (!(s->cat = catalog_open(s->catalog, err)))
		return err->code;
	if (!catalog_is_shared(s->cat))
		return (s->store = store_open(s->cfg.data_dir, err)) ? 0 : err->code;
	node_name(&s->cfg, node, sizeof(node));
	if (catalog_set_node(s->cat, node, err) < 0)
		return err->code;
	if (!(s->store = store_open_node(s->cfg.data_dir, node, err)))
		return err->code;
	return 0;
}

/* The pool's run function: a job's process, then, on a shared catalog,
 * the node's claimer woken at once (a worker is free) rather than at its
 * next poll, which would idle workers between short jobs. */
static int run_job(void *ctx, struct job_ctl *ctl)
{
	struct server *s = ctx;
	int rc = jobproc_run(&s->jobs, ctl);
	node_kick(s->node);
	return rc;
}

static int start(struct server *s, struct oob_err *err)
{
	struct timespec ts;
	int rc = open_storage(s, err);
	if (rc < 0)
		return rc;
	s->uploads = upload_registry_new(s->cfg.max_uploads);
	s->env = (struct worker_env){s->cat, s->store, s->uploads, s->cfg.max_events};
	s->jobs = (struct jobproc_env){&s->env, s->catalog, s->cfg.log_level, s->cfg.job_memory};
	if (!(s->pool = job_pool_new(s->cfg.workers, run_job, s, err)))
		return err->code;
	if (catalog_is_shared(s->cat) &&
	    !(s->node = node_start(s->cat, s->pool, s->cfg.lease_s, err)))
		return err->code;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->api = (struct api_ctx){.cfg = &s->cfg,
				  .cat = s->cat,
				  .store = s->store,
				  .pool = s->pool,
				  .node = s->node,
				  .uploads = s->uploads,
				  .statics = open_static(&s->cfg),
				  .cache = api_cache_new(s->cfg.cache_bytes),
				  .started = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9};
	if (s->cfg.token_file[0] && (rc = api_load_token(&s->api, s->cfg.token_file, err)) < 0)
		return rc;
	if ((rc = recover_jobs(s, err)) < 0)
		return rc;
	struct http_opts ho = {.host = s->cfg.listen_host,
			       .port = s->cfg.listen_port,
			       .max_connections = s->cfg.max_connections,
			       .max_header_bytes = s->cfg.max_header_bytes,
			       .timeout_s = s->cfg.timeout_s,
			       .max_buffered = JSON_BODY_MAX,
			       .max_per_ip = s->cfg.max_per_ip,
			       .threads = s->cfg.http_threads,
			       .compute_threads = s->cfg.compute_threads,
			       .upload_timeout_s = s->cfg.upload_timeout_s};
	if (!(s->http = http_start(&ho, api_hooks(), &s->api, err)))
		return err->code;
	return 0;
}

static void stop(struct server *s)
{
	api_cache_close(s->api.cache); /* view builds stop at their next read */
	http_stop(s->http);	       /* no request is running after this */
	node_stop(s->node);	       /* claims no more */
	job_pool_free(s->pool);
	/* What this node claimed and did not start goes back to the others. */
	if (s->node && catalog_job_release(s->cat, NULL) > 0)
		OOB_INFO("queued jobs claimed by this node released to the others");
	node_free(s->node);
	api_cache_free(s->api.cache);
	api_static_free(s->api.statics);
	upload_registry_free(s->uploads);
	catalog_close(s->cat);
	store_free(s->store);
}

static int wait_for_signal(void)
{
	sigset_t set;
	int sig = 0;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigwait(&set, &sig);
	return sig;
}

int main(int argc, char **argv)
{
	static struct server s;
	struct oob_err err = {0};
	if (jobproc_is_child(argc, argv))
		return jobproc_child_main(argc, argv);
	settings_defaults(&s.cfg);
	if (settings_parse_args(&s.cfg, argc, argv, &err) < 0) {
		fprintf(stderr, "oobprofd: %s\n", err.msg);
		return 2;
	}
	if (s.cfg.help || s.cfg.version || s.cfg.print_routes) {
		if (s.cfg.help)
			fputs(settings_usage(), stdout);
		if (s.cfg.version)
			printf("oobprofd %s\n", OOB_VERSION);
		if (s.cfg.print_routes)
			api_print_routes(stdout);
		return 0;
	}
	oob_log_set_level(s.cfg.log_level);
	/* Blocked before any thread starts, so that only sigwait sees them. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	int rc = start(&s, &err);
	if (rc < 0) {
		fprintf(stderr, "oobprofd: %s\n", err.msg);
		stop(&s);
		return 1;
	}
	OOB_INFO("oobprofd %s listening on %s port %u, data in %s, catalog %s%s%s, %u worker(s), "
		 "static %s",
		 OOB_VERSION, s.cfg.listen_host, http_port(s.http), s.cfg.data_dir,
		 catalog_where(s.cat), s.node ? ", node " : "", s.node ? catalog_node(s.cat) : "",
		 s.cfg.workers, s.api.statics ? api_static_dir(s.api.statics) : "(built-in page)");
	if (s.cfg.port_file[0] && write_port_file(s.cfg.port_file, http_port(s.http)) < 0)
		OOB_WARN("cannot write the port file %s", s.cfg.port_file);
	int sig = wait_for_signal();
	OOB_INFO("signal %d: stopping", sig);
	stop(&s);
	return 0;
}
