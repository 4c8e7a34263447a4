#include "api_events.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_cache.h"
#include "recon/evlog.h"
#include "jobspec.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"
#include "recon/recon.h"
#include "result.h"
#include "trace/trace_merge.h"

/* Re-runs take a core each and much I/O: one at a time. */
static pthread_mutex_t rerun_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the stored result ---- */

struct api_cache_ref *api_job_result(struct api_ctx *c, int64_t id, struct catalog_result *row,
				     const struct result **res, struct oob_err *e)
{
	char abs[1400];
	struct catalog_job *j;
	if (catalog_result_get(c->cat, id, row, NULL) == 0) {
		store_abspath(c->store, row->profile, abs, sizeof(abs));
		return api_cache_get(c->cache, id, abs, res, e);
	}
	j = oob_xmalloc(sizeof(*j));
	if (catalog_job_get(c->cat, id, j, e) == 0) {
		if (j->state == CATALOG_JOB_FAILED)
			oob_err_set(e, -EBUSY, "job %lld failed: %s", (long long)id, j->error);
		else
			oob_err_set(e, -EBUSY, "job %lld is %s: no result yet", (long long)id,
				    catalog_job_state_name(j->state));
	}
	free(j);
	return NULL;
}

struct profile *api_profile_from_result(const struct result *res, struct oob_err *e)
{
	size_t nn = result_nnodes(res), nf = result_nframes(res);
	struct profile_node *nodes = oob_xmalloc((nn ? nn : 1) * sizeof(*nodes));
	struct profile_frame *frames = oob_xmalloc((nf ? nf : 1) * sizeof(*frames));
	for (uint32_t i = 0; i < nn; i++)
		nodes[i] = *result_node(res, i);
	for (uint32_t i = 0; i < nf; i++)
		frames[i] = *result_frame(res, i);
	struct profile *p = profile_new(nodes, nn, frames, nf, result_stats(res), e);
	if (p)
		profile_copy_processes(p, result_profile(res));
	free(nodes);
	free(frames);
	return p;
}

/* ---- the job again, with stack events ---- */

struct rerun {
	struct jobspec spec;
	struct recon_elf elfs[JOBSPEC_MAX_BINARIES];
	char paths[JOBSPEC_MAX_BINARIES][1280];
	char scratch[64];
	char traces[JOBSPEC_MAX_TRACES][1280], events[1280];
	const char *trace_list[JOBSPEC_MAX_TRACES];
	uint16_t harts[JOBSPEC_MAX_TRACES]; /* of several traces: by their names */
};

/* Binaries get their uploaded names (frames name their binary by the file's
 * base name), through symlinks in a scratch folder as the worker does; one
 * sub-folder per binary keeps two binaries of one name apart. */
static int link_binary(struct api_ctx *c, struct rerun *x, size_t i, struct oob_err *e)
{
	struct catalog_binary b;
	char blob[1280], rel[STORE_REL_MAX + 200];
	int rc = catalog_binary_get(c->cat, x->spec.bins[i].id, &b, e);
	if (rc < 0)
		return rc;
	store_abspath(c->store, b.blob, blob, sizeof(blob));
	snprintf(rel, sizeof(rel), "%s/%zu", x->scratch, i);
	if ((rc = store_mkdir(c->store, rel, e)) < 0)
		return rc;
	snprintf(rel, sizeof(rel), "%s/%zu/%s", x->scratch, i, b.name);
	store_abspath(c->store, rel, x->paths[i], sizeof(x->paths[i]));
	unlink(x->paths[i]);
	if (symlink(blob, x->paths[i]) < 0)
		return oob_err_set(e, -errno, "binary %lld: %s", (long long)b.id, strerror(errno));
	x->elfs[i].path = x->paths[i];
	x->elfs[i].base =
	    x->spec.bins[i].base == UINT64_MAX ? RECON_BASE_LINK : x->spec.bins[i].base;
	return 0;
}

static int resolve(struct api_ctx *c, int64_t id, struct rerun *x, struct oob_err *e)
{
	struct catalog_job *j = oob_xmalloc(sizeof(*j));
	struct catalog_trace t;
	int rc = catalog_job_get(c->cat, id, j, e);
	if (rc == 0)
		rc = jobspec_parse_text(j->spec, strlen(j->spec), &x->spec, e);
	free(j);
	for (size_t k = 0; k < x->spec.ntraces && rc == 0; k++) {
		if ((rc = catalog_trace_get(c->cat, x->spec.traces[k], &t, e)) < 0)
			break;
		store_abspath(c->store, t.blob, x->traces[k], sizeof(x->traces[k]));
		x->trace_list[k] = x->traces[k];
		x->harts[k] = trace_merge_hart(t.name, k);
	}
	if (rc < 0)
		return rc;
	if (x->spec.events) {
		if ((rc = catalog_trace_get(c->cat, x->spec.events, &t, e)) < 0)
			return rc;
		store_abspath(c->store, t.blob, x->events, sizeof(x->events));
	}
	snprintf(x->scratch, sizeof(x->scratch), "tmp/export-%lld", (long long)id);
	store_rmdir(c->store, x->scratch, NULL);
	if ((rc = store_mkdir(c->store, x->scratch, e)) < 0)
		return rc;
	for (size_t i = 0; rc == 0 && i < x->spec.nbins; i++)
		rc = link_binary(c, x, i, e);
	return rc;
}

static void remove_scratch(struct api_ctx *c, struct rerun *x)
{
	char rel[128];
	for (size_t i = 0; i < x->spec.nbins; i++) {
		snprintf(rel, sizeof(rel), "%s/%zu", x->scratch, i);
		store_rmdir(c->store, rel, NULL);
	}
	store_rmdir(c->store, x->scratch, NULL);
}

/* Reconstructs job id again into *p, recording its events into log. */
static int rerun(struct api_ctx *c, int64_t id, struct evlog *log, struct profile **p,
		 struct oob_err *e)
{
	struct rerun *x = oob_xcalloc(1, sizeof(*x));
	int rc = resolve(c, id, x, e);
	if (rc == 0) {
		struct recon_opts o;
		jobspec_recon_opts(&x->spec, &o);
		o.harts = x->spec.ntraces > 1 ? x->harts : NULL;
		o.elfs = x->elfs;
		o.nelfs = x->spec.nbins;
		o.events_path = x->spec.events ? x->events : NULL;
		o.on_event = evlog_record;
		o.event_ctx = log;
		OOB_INFO("job %lld: reconstructing again for a time-keeping export", (long long)id);
		rc = recon_run(&o, x->trace_list, x->spec.ntraces, p, e);
	}
	if (rc == 0)
		rc = evlog_finish(log, e);
	if (x->scratch[0])
		remove_scratch(c, x);
	free(x);
	return rc;
}

static int newer_than(const char *a, const char *b)
{
	struct stat sa, sb;
	if (stat(a, &sa) < 0 || stat(b, &sb) < 0)
		return 0;
	return sa.st_mtim.tv_sec > sb.st_mtim.tv_sec ||
	       (sa.st_mtim.tv_sec == sb.st_mtim.tv_sec && sa.st_mtim.tv_nsec >= sb.st_mtim.tv_nsec);
}

/* The events and their profile kept from an earlier re-run, if both are
 * newer than the job's result file (a log only appears once its profile is
 * written: see keep). */
static int load_cached(struct api_ctx *c, const struct catalog_result *row, int64_t id,
		       struct evlog **log, struct profile **p)
{
	char evl[1400], prof[1400], res[1400], rel[128];
	snprintf(rel, sizeof(rel), "results/%lld/events.evl", (long long)id);
	store_abspath(c->store, rel, evl, sizeof(evl));
	snprintf(rel, sizeof(rel), "results/%lld/events-profile.json", (long long)id);
	store_abspath(c->store, rel, prof, sizeof(prof));
	store_abspath(c->store, row->profile, res, sizeof(res));
	if (!newer_than(evl, res) || !newer_than(prof, res))
		return -ENOENT;
	struct oob_err e = {0};
	struct result *r = result_load(prof, &e);
	if (r && (*p = api_profile_from_result(r, &e)) && (*log = evlog_open(evl, &e))) {
		result_free(r);
		return 0;
	}
	OOB_WARN("job %lld: kept stack events unusable (%s); reconstructing again", (long long)id,
		 e.msg);
	result_free(r);
	profile_free(*p);
	*p = NULL;
	return -EINVAL;
}

/* Keeps the profile of the re-run, then moves the log into place (last, so
 * that a log is never newer than a profile it does not belong to). */
static void keep(struct api_ctx *c, int64_t id, const char *tmp, const struct profile *p)
{
	char rel[128], evl[1400];
	size_t len = 0;
	struct oob_err e = {0};
	char *json = result_json_from_profile(p, 0, &len);
	snprintf(rel, sizeof(rel), "results/%lld/events-profile.json", (long long)id);
	snprintf(evl, sizeof(evl), "%s", tmp);
	*strrchr(evl, '.') = '\0'; /* events.evl.tmp -> events.evl */
	if (json && store_put_file(c->store, rel, json, len, &e) == 0 && rename(tmp, evl) == 0)
		OOB_INFO("job %lld: stack events kept for later exports", (long long)id);
	else
		unlink(tmp);
	free(json);
}

int api_job_events(struct api_ctx *c, const struct catalog_result *row, int64_t id, int partial,
		   struct evlog **log, struct profile **p, struct oob_err *e)
{
	char tmp[1400], rel[128];
	pthread_mutex_lock(&rerun_lock);
	int rc = partial ? -ENOENT : load_cached(c, row, id, log, p);
	if (rc == 0)
		goto out;
	snprintf(rel, sizeof(rel), "results/%lld/events.evl.tmp", (long long)id);
	store_abspath(c->store, rel, tmp, sizeof(tmp));
	*log = evlog_new(partial ? NULL : tmp, API_EXPORT_MAX_EVENTS, e);
	rc = *log ? rerun(c, id, *log, p, e) : e->code;
	if (rc == 0 && !partial && !evlog_capped(*log))
		keep(c, id, tmp, *p);
	else if (!partial)
		unlink(tmp);
out:
	pthread_mutex_unlock(&rerun_lock);
	return rc;
}
