/* api_metrics: /metrics in Prometheus text format. */
#include "api_metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "node.h"
#include "util/oob_mem.h"

struct text {
	char *p;
	size_t len, cap;
};

static void __attribute__((format(printf, 2, 3))) put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		t->cap = t->cap * 2 + (size_t)(n > 0 ? n : 0);
		t->p = oob_xrealloc(t->p, t->cap);
	}
}

/* One metric with its HELP and TYPE lines. */
static void metric(struct text *t, const char *name, const char *type, const char *help, double v)
{
	put(t, "# HELP %s %s\n# TYPE %s %s\n%s %.15g\n", name, help, name, type, name, v);
}

static void jobs_by_state(struct text *t, struct catalog *cat)
{
	put(t, "# HELP oobprof_jobs Jobs in the catalog by state (all nodes on a shared one).\n"
	       "# TYPE oobprof_jobs gauge\n");
	for (int s = CATALOG_JOB_QUEUED; s <= CATALOG_JOB_CANCELLED; s++) {
		int64_t n = catalog_job_count(cat, (enum catalog_job_state)s);
		put(t, "oobprof_jobs{state=\"%s\"} %lld\n",
		    catalog_job_state_name((enum catalog_job_state)s), (long long)(n < 0 ? 0 : n));
	}
}

int api_metrics_get(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct text t = {oob_xmalloc(4096), 0, 4096};
	struct metrics m;
	struct node_stats ns;
	(void)q;
	metrics_read(&m);
	node_stats(c->node, &ns);
	metric(&t, "oobprof_uploads_total", "counter", "Upload bodies received whole.",
	       (double)m.uploads);
	metric(&t, "oobprof_upload_bytes_total", "counter", "Bytes of those uploads.",
	       (double)m.upload_bytes);
	jobs_by_state(&t, c->cat);
	int64_t queued = catalog_job_count(c->cat, CATALOG_JOB_QUEUED);
	metric(&t, "oobprof_queue_depth", "gauge",
	       "Queued jobs in the catalog (the shared queue on several nodes).",
	       (double)(queued < 0 ? 0 : queued));
	metric(&t, "oobprof_node_queue", "gauge", "Jobs waiting in this node's pool.",
	       (double)job_pool_queue_len(c->pool));
	metric(&t, "oobprof_node_running", "gauge", "Jobs running on this node.",
	       (double)job_pool_running(c->pool));
	metric(&t, "oobprof_jobs_run_total", "counter", "Job processes this node ran to their end.",
	       (double)m.jobs_run);
	metric(&t, "oobprof_job_seconds_total", "counter", "Wall-clock seconds of those jobs.",
	       m.job_seconds);
	metric(&t, "oobprof_job_instructions_total", "counter",
	       "Instructions those jobs reconstructed (rate over job seconds: instructions/s).",
	       (double)m.job_insns);
	metric(&t, "oobprof_instructions_per_second", "gauge",
	       "Instructions per job-second since start (0 before the first job).",
	       m.job_seconds > 0 ? (double)m.job_insns / m.job_seconds : 0);
	metric(&t, "oobprof_job_claims_total", "counter", "Jobs this node claimed from the queue.",
	       (double)ns.claims);
	metric(&t, "oobprof_lease_renewals_total", "counter",
	       "Job leases this node renewed (one per held job per round).", (double)ns.renewals);
	metric(&t, "oobprof_leases_reaped_total", "counter",
	       "Jobs of dead nodes this node queued again.", (double)ns.reaped);
	http_respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", t.p, t.len);
	free(t.p);
	return HTTP_BODY_NONE;
}
