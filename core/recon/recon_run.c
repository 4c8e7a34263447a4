/*
 * Reading trace files into a reconstruction (recon_run): one trace or
 * several merged by time, sequentially or cut into chunks for threads
 * (recon_par.c), FirePerf's function-level logs, and sampled inputs handed
 * to core/sample. The hot loop they feed is recon.c's.
 */
#include "recon/recon_impl.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/profile_impl.h"
#include "sample/sample.h"
#include "trace/fireperf.h"
#include "trace/trace_merge.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"

/* ---- reading trace files ---- */

static int poll_progress(struct recon *r, struct trace_merge *m, uint64_t insns)
{
	const struct recon_opts *o = r->opts;
	if (o->progress)
		o->progress(o->progress_ctx, trace_merge_raw_bytes(m), insns);
	if (o->cancel && atomic_load_explicit(o->cancel, memory_order_relaxed))
		return -ECANCELED;
	return 0;
}

static int run_batches(struct recon *r, struct trace_merge *m, struct oob_err *err)
{
	const struct trace_batch *b;
	uint64_t next_poll = r->seen + (1u << 24);
	int rc;
	while ((rc = r->look ? recon_look_next(r->look, m, &b, err)
			     : trace_merge_next(m, &b, err)) > 0) {
		recon_feed(r, b);
		if (r->seen >= next_poll) {
			next_poll = r->seen + (1u << 24);
			if ((rc = poll_progress(r, m, r->seen)) < 0)
				return oob_err_set(err, rc, "cancelled after %llu instructions",
						   (unsigned long long)r->seen);
		}
		if (r->opts->max_insns && r->seen >= r->opts->max_insns)
			return 0;
	}
	return rc;
}

/* Parked stacks (Go, ucontext) are chosen by the records that follow:
 * those runs read ahead (recon_look.c). */
static int run_merged(struct recon *r, struct trace_merge *m, struct oob_err *err)
{
	if (r->go || r->ucontext)
		r->look = recon_look_new();
	int rc = run_batches(r, m, err);
	recon_look_free(r->look);
	r->look = NULL;
	return rc;
}

/* FirePerf logs carry stack events by name, not instructions: replay them. */
static int run_fireperf(struct recon *r, struct in_stream *s, struct oob_err *err);

static int run_fireperf_files(struct recon *r, const char *const *paths, size_t n,
			      struct oob_err *err)
{
	int rc = 0;
	for (size_t k = 0; k < n && rc >= 0; k++) {
		struct in_stream *s = in_open(paths[k], &r->opts->trace.in, err);
		rc = s ? run_fireperf(r, s, err) : (err ? err->code : -EIO);
	}
	return rc;
}

/* Several single-hart files are one tile each, read in time order on the
 * base clock (trace_merge.h). */
static struct trace_merge *open_traces(struct recon *r, const char *const *paths, size_t n,
				       struct oob_err *err)
{
	struct trace_opts to = r->opts->trace;
	to.insn_changes_only = 1; /* code_put keeps bits per pc */
	return trace_merge_open_run(paths, &to, r->opts->harts, n, err);
}

/* Why this run cannot be cut into chunks (RECONSTRUCTION.md 15), or NULL:
 * what a chunk cannot know from its own records. */
static const char *par_reason(const struct recon *r)
{
	const struct recon_opts *o = r->opts;
	if (r->fields & (TRACE_F_REGS | TRACE_F_MEM | TRACE_F_EVENTS))
		return "the trace has register, memory or event records (tasks, sp)";
	if (r->trk || r->run.proc.enabled)
		return "tasks are told apart (a kernel is given)";
	if (r->go)
		return "a Go program (goroutine stacks are shared state)";
	if (r->ucontext)
		return "the program switches contexts (swapcontext: parked stacks are shared "
		       "state)";
	if (o->on_event || o->on_batch)
		return "stack events are wanted";
	if (o->inline_frames)
		return "inline frames";
	if (o->pycode)
		return "Python frames";
	if (o->pcs)
		return "per-pc counts (kept with the code blocks, not per chunk)";
	if (o->max_insns)
		return "an instruction limit";
	return NULL;
}

static unsigned online_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
}

/* The trace cut for workers that read their own chunks (trace_split.h), or
 * NULL: it is read on one thread and its records copied to the chunks. */
static struct trace_split *split_open(const struct recon *r, const char *path)
{
	struct oob_err e;
	oob_err_clear(&e);
	struct trace_opts to = r->opts->trace;
	to.insn_changes_only = 1; /* as open_traces: the same batches */
	struct trace_split *sp = trace_split_open(path, &to, recon_par_chunk_records(), &e);
	if (!sp)
		OOB_INFO("recon: no chunks its threads read themselves: %s", e.msg);
	return sp;
}

static int run_traces(struct recon *r, const char *const *paths, size_t n, struct oob_err *err)
{
	struct trace_merge *m = open_traces(r, paths, n, err);
	if (!m)
		return err ? err->code : -EINVAL;
	enum trace_format f = trace_merge_format(m);
	int rc = recon_start(r, trace_merge_fields(m), trace_format_name(f), err);
	if (rc == 0 && f == TRACE_FMT_FIREPERF) {
		trace_merge_close(m);
		return run_fireperf_files(r, paths, n, err);
	}
	int autothr = r->opts->threads == RECON_THREADS_AUTO;
	unsigned thr = autothr ? online_cores() : r->opts->threads;
	const char *why = rc == 0 && thr > 1 ? par_reason(r) : "";
	if (why && *why)
		OOB_INFO("recon: %u threads: sequential: %s", thr, why);
	struct trace_split *sp = rc == 0 && !why && n == 1 ? split_open(r, paths[0]) : NULL;
	if (!sp && !why && autothr)
		why = "the trace is read on one thread";
	if (sp)
		rc = recon_par_run_split(r, sp, thr, err);
	else if (rc == 0)
		rc = why ? run_merged(r, m, err) : recon_par_run(r, m, thr, err);
	r->run.st.raw_bytes = sp ? trace_split_raw_bytes(sp) : trace_merge_raw_bytes(m);
	trace_split_close(sp);
	r->run.st.records_cut = trace_merge_cut_records(m);
	trace_merge_close(m);
	return rc;
}

/* A file of stack samples (sample/sample.h) stands in for a trace: read,
 * not reconstructed, with the same ELFs and perf maps. */
static int run_sampled(const struct recon_opts *opts, const char *path, enum trace_format f,
		       struct profile **out, struct oob_err *err)
{
	struct sample_elf *elfs = oob_xcalloc(opts->nelfs + 1, sizeof(*elfs));
	for (size_t i = 0; i < opts->nelfs; i++)
		elfs[i] = (struct sample_elf){opts->elfs[i].path, opts->elfs[i].base};
	struct sample_opts so = {.elfs = elfs,
				 .nelfs = opts->nelfs,
				 .maps = opts->perfmaps,
				 .nmaps = opts->nperfmaps,
				 .format = f};
	int rc = sample_read(path, &so, out, err);
	free(elfs);
	return rc;
}

int recon_run(const struct recon_opts *opts, const char *const *traces, size_t ntraces,
	      struct profile **out, struct oob_err *err)
{
	struct recon *r;
	int rc;
	*out = NULL;
	if (ntraces == 1 && opts->trace.format == TRACE_FMT_AUTO) {
		enum trace_format f = sample_detect_file(traces[0]);
		if (f != TRACE_FMT_AUTO)
			return run_sampled(opts, traces[0], f, out, err);
	}
	if ((rc = recon_open(opts, &r, err)) < 0)
		goto out;
	if (opts->pycode && (rc = recon_py_load(r, traces, ntraces, err)) < 0)
		goto out;
	/* Readers name the file in their messages. */
	if ((rc = run_traces(r, traces, ntraces, err)) < 0)
		goto out;
	rc = recon_finish(r, out);
out:
	recon_free(r);
	return rc;
}

/* ---- FirePerf replay ---- */

static void fireperf_enter(struct recon *r, struct tracker_hart *h, const char *label)
{
	recon_push(r, h, frame_named(&r->run.frames, PROFILE_FRAME_KERNEL, label), STACK_RET_NONE,
		   0, 1);
	r->run.st.calls++;
}

static void fireperf_leave(struct recon *r, struct tracker_hart *h, const char *label)
{
	for (int64_t k = (int64_t)h->stk->n - 1; k >= 0; k--) {
		if (strcmp(r->run.frames.v[h->stk->v[k].frame].name, label) == 0) {
			recon_pop_to(r, h, (uint32_t)k);
			r->run.st.returns++;
			return;
		}
	}
	r->run.st.repairs_unknown++;
}

static void fireperf_cycles(struct recon *r, struct tracker_hart *h, uint64_t cycle)
{
	if (!h->started) {
		h->started = 1;
		h->first_cycle = h->last_cycle = cycle;
	}
	if (cycle > h->last_cycle)
		r->cct.v[recon_top_node(h)].cycles += cycle - h->last_cycle;
	if (cycle > h->last_cycle)
		h->last_cycle = cycle;
	h->end_cycle = h->last_cycle;
}

static int run_fireperf(struct recon *r, struct in_stream *s, struct oob_err *err)
{
	struct fireperf_reader *fr = fireperf_open_stream(s, err);
	if (!fr)
		return err ? err->code : -EINVAL;
	struct tracker_hart *h = recon_hart(r, 0);
	const struct fireperf_event *ev;
	int rc;
	while ((rc = fireperf_next(fr, &ev, err)) > 0) {
		r->run.st.events++;
		if (ev->kind == FIREPERF_ZERO) {
			recon_pop_to(r, h, 0);
			continue;
		}
		fireperf_cycles(r, h, ev->cycle);
		if (ev->kind == FIREPERF_START)
			fireperf_enter(r, h, ev->label);
		else
			fireperf_leave(r, h, ev->label);
	}
	fireperf_close(fr);
	/* FirePerf stops with the frames the program was in still open (the
	 * fold simply leaves them): close them at the last cycle, so that the
	 * stack events nest like a trace's (evlog.h). */
	recon_pop_to(r, h, 0);
	r->run.st.harts = 1;
	r->run.st.cycles = h->end_cycle - h->first_cycle;
	h->started = 0; /* finish() must not add instruction spans */
	return rc;
}
