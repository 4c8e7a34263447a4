#include "worker.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jobspec.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"
#include "recon/evidx.h"
#include "recon/evlog.h"
#include "recon/recon.h"
#include "profile/profile_json.h"
#include "result.h"
#include "timeline/timeline_go.h"
#include "timeline/timeline_lod.h"
#include "trace/trace_formats.h"
#include "trace/trace_merge.h"

/* Everything one run of one job needs, on the worker's stack. */
struct run {
	struct worker_env *env;
	struct job_ctl *ctl;
	struct jobspec spec;
	/* The traces, held open across a stream's rename; only the first may be
	 * a stream (a job of several takes finished uploads). */
	int fds[JOBSPEC_MAX_TRACES];
	char paths[JOBSPEC_MAX_TRACES][64]; /* /proc/self/fd/<fd>: what recon opens */
	const char *path_list[JOBSPEC_MAX_TRACES];
	uint16_t harts[JOBSPEC_MAX_TRACES]; /* of several traces: by their names */
	int streaming;
	int cut_ok; /* the first trace is a stream, or one cut short */
	/* The format the uploads were validated as, when they all agree:
	 * what a spec of format "auto" reads them as. */
	enum trace_format upload_format;
	int formats_differ;
	uint64_t total, last_size;
	struct recon_opts opts;
	struct recon_elf elfs[JOBSPEC_MAX_BINARIES];
	char elf_paths[JOBSPEC_MAX_BINARIES][1280];
	char bin_names[JOBSPEC_MAX_BINARIES][CATALOG_NAME_MAX];
	char scratch[64]; /* DATA/tmp/job-<id>: symlinks named like the binaries */
	char events_path[1280];
	char pycode_path[1280];
	double last_db, snap_at, snap_cost;
	uint64_t snap_insns;
	struct evlog *log;	 /* the run's stack events, written as it goes */
	char events_tmp[1400];	 /* where, until the result is complete */
	struct evidx_writer *ix; /* their index (evidx.h), likewise */
	char index_tmp[1400];
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t fd_size(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Keeps the format the k-th upload was validated as (an upload still
 * streaming or never validated says "auto"). */
static void note_format(struct run *run, size_t k, const char *name)
{
	enum trace_format f = TRACE_FMT_AUTO;
	if (trace_format_parse(name, &f) < 0)
		f = TRACE_FMT_AUTO;
	if (k == 0)
		run->upload_format = f;
	else if (f != run->upload_format)
		run->formats_differ = 1;
}

/* Opens the k-th trace by its catalog path. A stream that completes renames
 * its file between our catalog read and open(): read the row again then. */
static int open_trace(struct run *run, size_t k, struct oob_err *err)
{
	int64_t id = run->spec.traces[k];
	for (int attempt = 0; attempt < 3; attempt++) {
		struct catalog_trace t;
		char abs[1280];
		int rc = catalog_trace_get(run->env->cat, id, &t, err);
		if (rc < 0)
			return rc;
		if (t.state == CATALOG_TRACE_INVALID)
			return oob_err_set(err, -EINVAL, "trace %lld is invalid: %s",
					   (long long)t.id, t.error);
		store_abspath(run->env->store, t.blob, abs, sizeof(abs));
		run->fds[k] = open(abs, O_RDONLY | O_CLOEXEC);
		if (run->fds[k] < 0 && errno == ENOENT)
			continue;
		if (run->fds[k] < 0)
			return oob_err_set(err, -errno, "trace %lld: %s", (long long)t.id,
					   strerror(errno));
		snprintf(run->paths[k], sizeof(run->paths[k]), "/proc/self/fd/%d", run->fds[k]);
		run->path_list[k] = run->paths[k];
		run->harts[k] = trace_merge_hart(t.name, k);
		note_format(run, k, t.format);
		if (k == 0) {
			run->streaming = t.state == CATALOG_TRACE_STREAMING;
			run->cut_ok = run->streaming || t.state == CATALOG_TRACE_INCOMPLETE;
			run->total = run->streaming ? fd_size(run->fds[0]) : 0;
		}
		if (!run->streaming)
			run->total += t.size;
		return 0;
	}
	return oob_err_set(err, -ENOENT, "trace %lld: its file vanished", (long long)id);
}

/* recon names frames' binaries by the basename of their path, and blobs are
 * named by hash: give each binary its uploaded name through a symlink in
 * the job's scratch folder (DATA/tmp/job-<id>, emptied at start-up). */
static int name_binary(struct run *run, size_t i, const struct catalog_binary *b,
		       struct oob_err *err)
{
	char blob[1280], rel[STORE_REL_MAX + 200];
	int dup = 0;
	for (size_t k = 0; k < i; k++)
		dup |= !strcmp(run->bin_names[k], b->name);
	snprintf(run->bin_names[i], sizeof(run->bin_names[i]), "%s", b->name);
	if (dup)
		snprintf(rel, sizeof(rel), "%s/%s.%zu", run->scratch, b->name, i);
	else
		snprintf(rel, sizeof(rel), "%s/%s", run->scratch, b->name);
	store_abspath(run->env->store, b->blob, blob, sizeof(blob));
	store_abspath(run->env->store, rel, run->elf_paths[i], sizeof(run->elf_paths[i]));
	unlink(run->elf_paths[i]);
	if (symlink(blob, run->elf_paths[i]) < 0)
		return oob_err_set(err, -errno, "binary %lld: %s", (long long)b->id,
				   strerror(errno));
	return 0;
}

static uint64_t max_events(const struct worker_env *w)
{
	return w->max_events ? w->max_events : RESULT_MAX_EVENTS;
}

/* The stored file of a side upload (events, code map), if id names one. */
static int side_path(struct run *run, int64_t id, char *path, size_t n, struct oob_err *err)
{
	struct catalog_trace t;
	int rc = id ? catalog_trace_get(run->env->cat, id, &t, err) : 0;
	if (id && rc == 0)
		store_abspath(run->env->store, t.blob, path, n);
	return rc;
}

static int resolve_files(struct run *run, struct oob_err *err)
{
	int rc;
	snprintf(run->scratch, sizeof(run->scratch), "tmp/job-%lld", (long long)run->ctl->id);
	/* Left by a run whose node died (on one node start-up empties tmp/). */
	store_rmdir(run->env->store, run->scratch, NULL);
	if ((rc = store_mkdir(run->env->store, run->scratch, err)) < 0)
		return rc;
	for (size_t i = 0; i < run->spec.nbins; i++) {
		struct catalog_binary b;
		if ((rc = catalog_binary_get(run->env->cat, run->spec.bins[i].id, &b, err)) < 0)
			return rc;
		if ((rc = name_binary(run, i, &b, err)) < 0)
			return rc;
		run->elfs[i].path = run->elf_paths[i];
		run->elfs[i].base =
		    run->spec.bins[i].base == UINT64_MAX ? RECON_BASE_LINK : run->spec.bins[i].base;
	}
	rc = side_path(run, run->spec.events, run->events_path, sizeof(run->events_path), err);
	if (rc < 0 || (rc = side_path(run, run->spec.pycode, run->pycode_path,
				      sizeof(run->pycode_path), err)) < 0)
		return rc;
	for (size_t k = 0; k < run->spec.ntraces && rc == 0; k++)
		rc = open_trace(run, k, err);
	return rc;
}

/* Whether the job's streamed trace is still being uploaded. A job's own
 * process (jobproc) has no upload registry, the server's memory: the
 * catalog says. */
static int stream_is_open(struct run *run)
{
	struct catalog_trace t;
	if (run->env->uploads)
		return upload_stream_is_open(run->env->uploads, run->spec.trace);
	return catalog_trace_get(run->env->cat, run->spec.trace, &t, NULL) == 0 &&
	       t.state == CATALOG_TRACE_STREAMING;
}

/* Waits up to ms for more bytes or the stream's end; 1 while it is open. */
static int stream_wait(struct run *run, unsigned ms)
{
	if (run->env->uploads)
		return upload_stream_wait(run->env->uploads, run->spec.trace, ms);
	for (unsigned t = 0; t < ms && fd_size(run->fds[0]) == run->last_size; t += 20) {
		struct timespec ts = {0, 20000000L};
		nanosleep(&ts, NULL);
	}
	return stream_is_open(run);
}

/* in_opts.more of a streamed trace. After the stream closes it asks for one
 * more read when the file grew since the last call, so that bytes written
 * just before the close are never lost. */
static int follow_more(void *ctx)
{
	struct run *run = ctx;
	if (atomic_load_explicit(&run->ctl->cancel, memory_order_relaxed))
		return -ECANCELED;
	int open = stream_wait(run, 200);
	uint64_t size = fd_size(run->fds[0]);
	int grew = size != run->last_size;
	run->last_size = size;
	run->total = size;
	return open || grew;
}

static char *folded_text(const struct profile *p, enum profile_metric m, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	int rc = profile_write_folded(p, f, m, 0);
	fclose(f);
	if (rc < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int result_size_ok(const char *what, size_t len, struct oob_err *err)
{
	if (len <= RESULT_MAX_BYTES)
		return 0;
	return oob_err_set(err, -E2BIG, "the %s would take %zu MiB, over the %llu MiB a result may",
			   what, len >> 20, RESULT_MAX_BYTES >> 20);
}

/* The profile's warnings in the job's summary, as many as its catalog
 * column holds (the result file keeps them all). */
static void summary_warnings(json_t *sj, const struct profile *p, size_t room)
{
	json_t *a = json_array();
	char *base = json_dumps(sj, JSON_COMPACT);
	size_t used = (base ? strlen(base) : 0) + 16;
	free(base);
	for (size_t i = 0; i < profile_nwarnings(p); i++) {
		const struct profile_warning *w = profile_warning(p, i);
		size_t need = strlen(w->kind) + 2 * strlen(w->message) + 32; /* escapes */
		if (used + need >= room)
			break;
		used += need;
		json_array_append_new(
		    a, json_pack("{s:s, s:s}", "kind", w->kind, "message", w->message));
	}
	json_object_set_new(sj, "warnings", a);
}

/* Writes both result files and fills the catalog row for them. */
static int write_result(struct run *run, const struct profile *p, int partial,
			struct catalog_result *r, struct oob_err *err)
{
	int64_t id = run->ctl->id;
	size_t len = 0;
	memset(r, 0, sizeof(*r));
	r->job_id = id;
	r->partial = partial;
	result_path(id, RESULT_PROFILE, r->profile, sizeof(r->profile));
	result_path(id, RESULT_FOLDED, r->folded, sizeof(r->folded));
	char *json = result_json_from_profile(p, partial, &len);
	if (!json)
		return oob_err_set(err, -ENOMEM, "cannot serialize the profile");
	int rc = result_size_ok("profile", len, err);
	if (rc == 0)
		rc = store_put_file(run->env->store, r->profile, json, len, err);
	free(json);
	if (rc < 0)
		return rc;
	char *folded = folded_text(p, run->spec.metric, &len);
	if (!folded)
		return oob_err_set(err, -EIO, "cannot write folded stacks");
	rc = result_size_ok("folded stacks", len, err);
	if (rc == 0)
		rc = store_put_file(run->env->store, r->folded, folded, len, err);
	free(folded);
	if (rc < 0)
		return rc;
	struct profile_stats st = *profile_stats(p);
	st.partial = partial;
	json_t *sj = profile_stats_json(&st);
	summary_warnings(sj, p, sizeof(r->stats));
	char *stats = json_dumps(sj, JSON_COMPACT);
	json_decref(sj);
	snprintf(r->stats, sizeof(r->stats), "%s", stats ? stats : "{}");
	free(stats);
	return 0;
}

/* A partial result of a stream still being uploaded: the instructions
 * decoded so far (their bytes are complete on disk) reconstructed again. */
static void snapshot(struct run *run, uint64_t insns)
{
	struct recon_opts o = run->opts;
	struct profile *p = NULL;
	struct oob_err err = {0};
	struct catalog_result r;
	double t0 = now_s();
	o.trace.in.more = NULL;
	o.max_insns = insns;
	o.progress = NULL;
	o.on_event = NULL; /* a snapshot keeps no stack events (worker.h) */
	o.on_batch = NULL;
	if (recon_run(&o, run->path_list, 1, &p, &err) == 0 &&
	    write_result(run, p, 1, &r, &err) == 0 &&
	    catalog_result_put(run->env->cat, &r, &err) == 0)
		OOB_INFO("job %lld: partial result after %llu instructions",
			 (long long)run->ctl->id, (unsigned long long)insns);
	else
		OOB_DEBUG("job %lld: no snapshot: %s", (long long)run->ctl->id, err.msg);
	profile_free(p);
	run->snap_insns = insns;
	run->snap_at = now_s();
	run->snap_cost = run->snap_at - t0;
}

static void on_progress(void *ctx, uint64_t raw_bytes, uint64_t insns)
{
	struct run *run = ctx;
	double t = now_s();
	if (run->streaming)
		run->total = fd_size(run->fds[0]);
	job_ctl_progress(run->ctl, raw_bytes, run->total, insns);
	if (t - run->last_db >= 1.0) {
		catalog_job_progress(run->env->cat, run->ctl->id, raw_bytes, run->total, insns,
				     NULL);
		run->last_db = t;
	}
	if (run->streaming && insns > run->snap_insns && t - run->snap_at >= 2.0 &&
	    t - run->snap_at >= 4 * run->snap_cost && stream_is_open(run))
		snapshot(run, insns);
}

/* The run records its stack events into a temporary file of the job's
 * result folder, installed with the result (keep_events). */
static int setup_opts(struct run *run, struct oob_err *err)
{
	struct recon_opts *o = &run->opts;
	char rel[128];
	result_path(run->ctl->id, RESULT_EVENTS, rel, sizeof(rel));
	int rc =
	    store_temp_path(run->env->store, rel, run->events_tmp, sizeof(run->events_tmp), err);
	if (rc < 0 || !(run->log = evlog_new(run->events_tmp, max_events(run->env), err)))
		return rc < 0 ? rc : err->code;
	result_path(run->ctl->id, RESULT_INDEX, rel, sizeof(rel));
	rc = store_temp_path(run->env->store, rel, run->index_tmp, sizeof(run->index_tmp), err);
	if (rc < 0 || !(run->ix = evidx_writer_new(run->index_tmp, run->log, 0, err)))
		return rc < 0 ? rc : err->code;
	jobspec_recon_opts(&run->spec, o);
	/* The upload's format was checked against its content once: reading
	 * it as that again, not detecting anew, is what the user asked for
	 * (format=fireperf random bytes were once read as something else).
	 * A format in the spec still wins. */
	if (o->trace.format == TRACE_FMT_AUTO && !run->formats_differ)
		o->trace.format = run->upload_format;
	/* An upload cut short (or a stream that may be) can end inside a
	 * record: that record is dropped and counted (records_cut), and the
	 * job gives the partial result it is meant to. */
	o->trace.in.tail_may_be_cut = run->cut_ok;
	if (run->streaming) {
		o->trace.in.more = follow_more;
		o->trace.in.more_ctx = run;
		run->last_size = fd_size(run->fds[0]);
	}
	o->elfs = run->elfs;
	o->nelfs = run->spec.nbins;
	o->events_path = run->spec.events ? run->events_path : NULL;
	o->pycode = run->spec.pycode ? run->pycode_path : NULL;
	o->harts = run->spec.ntraces > 1 ? run->harts : NULL;
	o->progress = on_progress;
	o->progress_ctx = run;
	o->cancel = &run->ctl->cancel;
	o->on_event = evidx_event;
	o->event_ctx = run->ix;
	o->on_batch = evidx_batch;
	o->batch_ctx = run->ix;
	return 0;
}

/* Puts the log's index in place beside it. Without it the views replay the
 * whole log (windows then cut spans as older jobs did): a warning, not a
 * failed job. */
static void keep_index(struct run *run)
{
	struct oob_err err = {0};
	char rel[128];
	result_path(run->ctl->id, RESULT_INDEX, rel, sizeof(rel));
	if (evidx_writer_finish(run->ix, &err) < 0 ||
	    store_install(run->env->store, run->index_tmp, rel, &err) < 0)
		OOB_WARN("job %lld: no event index: %s", (long long)run->ctl->id, err.msg);
	evidx_writer_free(run->ix);
	run->ix = NULL;
}

/* The timeline's summaries of the installed log (one more replay, so that
 * the first timeline of a long job needs none). Without them coarse
 * timelines replay the log: a warning, not a failed job. */
static void keep_lod(struct run *run, const struct catalog_result *r, const struct profile *p)
{
	struct oob_err err = {0};
	char rel[128], abs[1400], tmp[1400];
	int64_t id = run->ctl->id;
	store_abspath(run->env->store, r->events, abs, sizeof(abs));
	struct evlog *log = evlog_open(abs, &err);
	struct evidx *ix = NULL;
	if (log && evlog_capped(log)) { /* its timeline is refused anyway */
		evlog_free(log);
		return;
	}
	result_path(id, RESULT_INDEX, rel, sizeof(rel));
	store_abspath(run->env->store, rel, abs, sizeof(abs));
	if (log)
		ix = evidx_open(abs, NULL);
	result_path(id, RESULT_LOD, rel, sizeof(rel));
	int rc = log ? store_temp_path(run->env->store, rel, tmp, sizeof(tmp), &err) : err.code;
	if (rc == 0 && (rc = timeline_lod_build(log, ix, p, tmp, &err)) == 0)
		rc = store_install(run->env->store, tmp, rel, &err);
	if (rc < 0) {
		OOB_WARN("job %lld: no timeline summaries: %s", (long long)id, err.msg);
		if (log)
			unlink(tmp);
	}
	evidx_free(ix);
	evlog_free(log);
}

/* Puts the finished stack-event log in place as the result's events.evl and
 * records it in the result row. */
static int keep_events(struct run *run, struct catalog_result *r, struct oob_err *err)
{
	struct stat st;
	int rc = evlog_finish(run->log, err);
	if (rc == 0 && evlog_capped(run->log))
		OOB_WARN("job %lld: more than %llu stack events (--max-events): its timeline and "
			 "evented exports will be refused",
			 (long long)run->ctl->id, (unsigned long long)max_events(run->env));
	if (rc == 0 && !evlog_capped(run->log))
		keep_index(run);
	evlog_free(run->log);
	run->log = NULL;
	result_path(run->ctl->id, RESULT_EVENTS, r->events, sizeof(r->events));
	if (rc == 0)
		rc = store_install(run->env->store, run->events_tmp, r->events, err);
	char abs[1280];
	store_abspath(run->env->store, r->events, abs, sizeof(abs));
	if (rc == 0 && stat(abs, &st) < 0)
		rc = oob_err_set(err, -errno, "stack events: %s", strerror(errno));
	r->events_bytes = rc == 0 ? (uint64_t)st.st_size : 0;
	return rc;
}

/* A stream that ended without a proper close (client gone, server restart)
 * leaves the trace "incomplete": its result stays marked partial. */
static int trace_complete(struct run *run)
{
	struct catalog_trace t;
	return catalog_trace_get(run->env->cat, run->spec.trace, &t, NULL) == 0 &&
	       t.state == CATALOG_TRACE_READY;
}

/* An error about the traces says "trace N", not /proc/self/fd/N (the whole
 * number: fd 1's path is a prefix of fd 12's). */
static void name_traces(const struct run *run, struct oob_err *err)
{
	for (size_t k = 0; k < run->spec.ntraces; k++) {
		size_t len = strlen(run->paths[k]);
		char *at = len ? strstr(err->msg, run->paths[k]) : NULL;
		while (at && isdigit((unsigned char)at[len]))
			at = strstr(at + len, run->paths[k]);
		if (at) {
			char rest[OOB_ERR_MSG_MAX];
			snprintf(rest, sizeof(rest), "%s", at + len);
			snprintf(at, sizeof(err->msg) - (size_t)(at - err->msg), "trace %lld%s",
				 (long long)run->spec.traces[k], rest);
		}
	}
}

/* The job's Go trace on the instruction trace's axis: its clock model (given
 * or fitted) goes to results/<id>/go.json, which the timeline reads. A Go
 * trace that cannot be read fails the job; a fit that does not hold is
 * stored as such ("ok": false and why), the profile stays good. */
static int go_overlay(struct run *run, struct oob_err *err)
{
	struct catalog_trace t;
	char abs[1280], rel[128];
	int rc = catalog_trace_get(run->env->cat, run->spec.go_trace, &t, err);
	if (rc < 0)
		return oob_err_prefix(err, "go_trace");
	store_abspath(run->env->store, t.blob, abs, sizeof(abs));
	struct gotrace *g = gotrace_open(abs, NULL, err);
	if (!g)
		return oob_err_prefix(err, "go_trace %lld", (long long)t.id);
	struct timeline_go_req q = {
	    .insn = {run->path_list, run->spec.ntraces, run->opts.trace, run->opts.harts},
	    .elfs = run->elfs,
	    .nelfs = run->spec.nbins,
	    .have_hz = run->spec.have_go_clock,
	    .hz = run->spec.go_hz,
	    .offset = run->spec.go_offset};
	struct goclock clock;
	json_t *desc = NULL;
	struct oob_err why = {0};
	q.insn.opts.in.more = NULL;
	if (timeline_go_clock(g, &q, &clock, &desc, &why) < 0) {
		name_traces(run, &why);
		if (desc)
			json_object_set_new(desc, "error", json_string(why.msg));
		OOB_INFO("job %lld: the Go trace stays unaligned: %s", (long long)run->ctl->id,
			 why.msg);
	}
	gotrace_free(g);
	char *text = json_dumps(desc, JSON_COMPACT);
	json_decref(desc);
	result_path(run->ctl->id, RESULT_GO, rel, sizeof(rel));
	rc = text ? store_put_file(run->env->store, rel, text, strlen(text), err)
		  : oob_err_set(err, -ENOMEM, "go clock: cannot serialize");
	free(text);
	return rc;
}

static int finish(struct run *run, int rc, struct profile *p, struct oob_err *err)
{
	struct catalog *cat = run->env->cat;
	int64_t id = run->ctl->id;
	struct catalog_result r;
	if (rc == 0 && run->spec.go_trace)
		rc = go_overlay(run, err);
	if (rc == 0) {
		int partial = profile_stats(p)->partial || !trace_complete(run);
		rc = write_result(run, p, partial, &r, err);
		if (rc == 0)
			rc = keep_events(run, &r, err);
		if (rc == 0 && r.events[0])
			keep_lod(run, &r, p);
		if (rc == 0) {
			const struct profile_stats *st = profile_stats(p);
			catalog_job_progress(cat, id, st->raw_bytes, run->total, st->instructions,
					     NULL);
			return catalog_job_finish(cat, id, CATALOG_JOB_DONE, 0, NULL, &r, err);
		}
	}
	int stop = atomic_load_explicit(&run->ctl->cancel, memory_order_relaxed);
	if (rc == -ECANCELED && stop == JOB_STOP_SHUTDOWN) {
		OOB_INFO("job %lld: interrupted by shutdown; it will run again", (long long)id);
		return catalog_job_transition(cat, id, CATALOG_JOB_RUNNING, CATALOG_JOB_QUEUED,
					      NULL);
	}
	if (rc == -ECANCELED && stop)
		return catalog_job_finish(cat, id, CATALOG_JOB_CANCELLED, rc, "cancelled", NULL,
					  NULL);
	name_traces(run, err);
	OOB_INFO("job %lld failed: %s", (long long)id, err->msg);
	return catalog_job_finish(cat, id, CATALOG_JOB_FAILED, rc, err->msg, NULL, NULL);
}

int worker_run(void *ctx, struct job_ctl *ctl)
{
	struct run *run = oob_xcalloc(1, sizeof(*run));
	struct catalog_job *job = oob_xmalloc(sizeof(*job));
	struct oob_err err = {0};
	struct profile *p = NULL;
	run->env = ctx;
	run->ctl = ctl;
	for (size_t k = 0; k < JOBSPEC_MAX_TRACES; k++)
		run->fds[k] = -1;
	int rc = catalog_job_get(run->env->cat, ctl->id, job, &err);
	if (rc == 0)
		rc = catalog_job_transition(run->env->cat, ctl->id, CATALOG_JOB_QUEUED,
					    CATALOG_JOB_RUNNING, &err);
	if (rc < 0) {
		OOB_INFO("job %lld not started: %s", (long long)ctl->id, err.msg);
		goto out;
	}
	rc = jobspec_parse_text(job->spec, strlen(job->spec), &run->spec, &err);
	if (rc == 0)
		rc = resolve_files(run, &err);
	if (rc == 0)
		rc = setup_opts(run, &err);
	if (rc == 0) {
		job_ctl_progress(ctl, 0, run->total, 0);
		rc = recon_run(&run->opts, run->path_list, run->spec.ntraces, &p, &err);
	}
	rc = finish(run, rc, p, &err);
out:
	profile_free(p);
	evidx_writer_free(run->ix);
	evlog_free(run->log);
	if (run->events_tmp[0])
		unlink(run->events_tmp); /* left by a failure (installed, it is gone) */
	if (run->index_tmp[0])
		unlink(run->index_tmp);
	if (run->scratch[0])
		store_rmdir(run->env->store, run->scratch, NULL);
	for (size_t k = 0; k < JOBSPEC_MAX_TRACES; k++)
		if (run->fds[k] >= 0)
			close(run->fds[k]);
	free(job);
	free(run);
	return rc;
}
