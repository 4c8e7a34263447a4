/*
 * cli_cmds: the oobprof commands over a reconstruction: fold, top, stats,
 * processes, convert, export, timeline, offcpu and path (usage and options in
 * cli.c).
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "recon/evidx.h"
#include "recon/evlog.h"
#include "export/export.h"
#include "cli_go.h"
#include "cli_impl.h"
#include "util/oob_err.h"
#include "util/oob_mem.h"
#include "profile/profile.h"
#include "profile/profile_json.h"
#include "recon/recon.h"
#include "timeline/timeline.h"
#include "timeline/timeline_go.h"
#include "timeline/timeline_json.h"
#include "timeline/waits.h"
#include "timeline/waits_json.h"
#include "trace/trace.h"
#include "trace/trace_write.h"

/* A run's stack events and their index, in temporary files. */
struct evrun {
	struct evlog *log;
	struct evidx_writer *w;
	struct evidx *ix;
};

static int evrun_new(struct cli *c, struct evrun *e, struct oob_err *err)
{
	if (!(e->log = evlog_new(NULL, 0, err)) ||
	    !(e->w = evidx_writer_new(NULL, e->log, c->index_every, err)))
		return err->code;
	c->ro.on_event = evidx_event;
	c->ro.event_ctx = e->w;
	c->ro.on_batch = evidx_batch;
	c->ro.batch_ctx = e->w;
	return 0;
}

static int evrun_finish(struct cli *c, struct evrun *e, struct oob_err *err)
{
	if (evlog_finish(e->log, err) < 0 || evidx_writer_finish(e->w, err) < 0 ||
	    !(e->ix = evidx_writer_open(e->w, err)))
		return err->code;
	if (c->no_seek)
		evidx_noseek(e->ix);
	return 0;
}

static void evrun_free(struct evrun *e)
{
	evidx_free(e->ix);
	evidx_writer_free(e->w);
	evlog_free(e->log);
}

/* The profile of --window, cut from the stack events of the run that made p
 * (replaces p). */
static struct profile *window_of(struct cli *c, struct profile *p, struct evrun *e,
				 struct oob_err *err)
{
	struct profile *w = NULL;
	if (evrun_finish(c, e, err) == 0)
		timeline_profile_ix(e->log, e->ix, p, -1, c->win.from, c->win.to, &w, err);
	profile_free(p);
	return w;
}

/* A progress line on stderr, for a person at a terminal: shown once the
 * work took a second, redrawn at most 5 times a second, erased at the end. */
struct progress {
	uint64_t total; /* input bytes, 0 when unknown (a pipe) */
	double t0, last;
	int shown;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void progress_draw(void *ctx, uint64_t bytes, uint64_t insns)
{
	struct progress *g = ctx;
	double t = now_s(), dt = t - g->t0;
	if (dt < 1.0 || t - g->last < 0.2)
		return;
	g->last = t;
	g->shown = 1;
	fprintf(stderr, "\r\033[K");
	if (g->total && bytes < g->total) { /* all read ahead: no bar */
		double f = (double)bytes / (double)g->total;
		int bar = (int)(f * 30);
		fprintf(stderr, "[%-30.*s] %3.0f%%  ", bar, "##############################",
			100 * f);
		if (f > 0.01)
			fprintf(stderr, "ETA %.0f s  ", dt / f - dt);
	}
	fprintf(stderr, "%.1f M instructions, %.1f s", (double)insns / 1e6, dt);
}

static void progress_begin(struct cli *c, struct progress *g, int argc, char **argv)
{
	if (!isatty(STDERR_FILENO) || c->ro.progress)
		return;
	*g = (struct progress){.t0 = now_s()};
	for (int i = optind; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode))
			g->total += (uint64_t)st.st_size;
	}
	c->ro.progress = progress_draw;
	c->ro.progress_ctx = g;
}

static void progress_end(struct cli *c, struct progress *g)
{
	if (c->ro.progress_ctx != g)
		return;
	if (g->shown)
		fprintf(stderr, "\r\033[K");
	c->ro.progress = NULL;
	c->ro.progress_ctx = NULL;
}

struct profile *cli_reconstruct(struct cli *c, int argc, char **argv)
{
	struct profile *p;
	struct oob_err err = {0};
	struct evrun ev = {0};
	struct progress g;
	int own = c->windowed && !c->ro.on_event;
	if (own && evrun_new(c, &ev, &err) < 0) {
		fprintf(stderr, "oobprof: %s\n", err.msg);
		evrun_free(&ev);
		return NULL;
	}
	progress_begin(c, &g, argc, argv);
	int rc = recon_run(&c->ro, (const char *const *)argv + optind, (size_t)(argc - optind), &p,
			   &err);
	progress_end(c, &g);
	for (size_t i = 0; rc == 0 && i < profile_nwarnings(p); i++)
		fprintf(stderr, "oobprof: warning: %s\n", profile_warning(p, i)->message);
	if (rc == 0 && (profile_stats(p)->failed_walks || profile_stats(p)->truncated_walks))
		fprintf(stderr,
			"oobprof: %" PRIu64 " samples, of which %" PRIu64 " failed and %" PRIu64
			" truncated walks (kept under [walk failed] and [walk truncated])\n",
			profile_stats(p)->samples, profile_stats(p)->failed_walks,
			profile_stats(p)->truncated_walks);
	if (rc == 0 && own)
		p = window_of(c, p, &ev, &err);
	evrun_free(&ev);
	if (rc < 0 || !p) {
		fprintf(stderr, "oobprof: %s\n", err.msg);
		return NULL;
	}
	/* FirePerf logs have cycles only: make them the default metric there. */
	if (!c->metric_set && profile_stats(p)->instructions == 0 && profile_has_cycles(p))
		c->metric = PROFILE_CYCLES;
	return p;
}

int cli_cmd_fold(struct cli *c, int argc, char **argv)
{
	struct profile *p = cli_reconstruct(c, argc, argv);
	if (!p || cli_out_begin(c->out) < 0) {
		profile_free(p);
		return 1;
	}
	int rc = profile_write_folded(p, stdout, c->metric, c->annotate);
	profile_free(p);
	return rc < 0 || fflush(stdout) ? 1 : 0;
}

static double ipc(uint64_t insns, uint64_t cycles)
{
	return cycles ? (double)insns / (double)cycles : 0.0;
}

/* The API's shape (GET /api/v1/jobs/{id}/top), every function. */
static int top_json(const struct profile *p, const struct profile_func *v, size_t n,
		    enum profile_metric m)
{
	json_t *root = profile_top_json(p, v, n, n, m, profile_stats(p)->partial);
	int rc = json_dumpf(root, stdout, JSON_INDENT(1)) < 0 ? -EIO : 0;
	putchar('\n');
	json_decref(root);
	return rc;
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* pprof's -top layout: counts with their shares of the whole; the cycle
 * columns only when the trace has cycles. */
static void top_text(const struct profile *p, const struct profile_func *v, size_t n)
{
	const struct profile_node *root = profile_node(p, 0);
	uint64_t insns = root->total_insns, cycles = root->total_cycles;
	int cyc = profile_has_cycles(p);
	printf("%12s %14s %7s %14s %7s", "calls", "self_insns", "self%", "total_insns", "total%");
	if (cyc)
		printf(" %14s %7s %14s %6s", "self_cycles", "self%", "total_cycles", "ipc");
	printf("  function\n");
	for (size_t i = 0; i < n; i++) {
		const struct profile_func *f = &v[i];
		printf("%12" PRIu64 " %14" PRIu64 " %6.2f%% %14" PRIu64 " %6.2f%%", f->calls,
		       f->self_insns, share(f->self_insns, insns), f->total_insns,
		       share(f->total_insns, insns));
		if (cyc)
			printf(" %14" PRIu64 " %6.2f%% %14" PRIu64 " %6.3f", f->self_cycles,
			       share(f->self_cycles, cycles), f->total_cycles,
			       ipc(f->total_insns, f->total_cycles));
		printf("  %s\n", profile_frame(p, f->frame)->name);
	}
}

int cli_cmd_top(struct cli *c, int argc, char **argv)
{
	struct profile *p = cli_reconstruct(c, argc, argv);
	if (!p || cli_out_begin(c->out) < 0) {
		profile_free(p);
		return 1;
	}
	struct profile_func *v;
	size_t n = profile_functions(p, c->metric, &v);
	if (c->top_n && c->top_n < n)
		n = (size_t)c->top_n;
	int rc = 0;
	if (c->json)
		rc = top_json(p, v, n, c->metric);
	else
		top_text(p, v, n);
	free(v);
	profile_free(p);
	return rc < 0 || fflush(stdout) ? 1 : 0;
}

int cli_cmd_stats(struct cli *c, int argc, char **argv)
{
	struct profile *p = cli_reconstruct(c, argc, argv);
	if (!p || cli_out_begin(c->out) < 0) {
		profile_free(p);
		return 1;
	}
	const struct profile_stats *s = profile_stats(p);
	json_t *j = profile_stats_json(s);
	const char *key;
	json_t *val;
	json_object_foreach(j, key, val)
	{
		if (json_is_real(val)) { /* seconds: not to the last bit */
			printf("%s: %.6g\n", key, json_real_value(val));
			continue;
		}
		char *txt = json_dumps(val, JSON_ENCODE_ANY);
		printf("%s: %s\n", key, txt);
		free(txt);
	}
	json_decref(j);
	printf("nodes: %zu\nframes: %zu\n", profile_nnodes(p), profile_nframes(p));
	printf("minstr_per_s: %.1f\n",
	       s->seconds > 0 ? (double)s->instructions / s->seconds / 1e6 : 0.0);
	profile_free(p);
	return fflush(stdout) ? 1 : 0;
}

/* One process and, indented under it, its children (by pid). */
static void process_row(const struct profile *p, size_t i, unsigned depth, int cyc, char *seen)
{
	size_t n = profile_nprocesses(p);
	const struct profile_process *x = profile_process(p, i);
	seen[i] = 1;
	printf("%8" PRId64 " %8" PRId64 " %14" PRIu64 " %14" PRIu64, x->pid, x->ppid, x->insns_user,
	       x->insns_kernel);
	if (cyc)
		printf(" %14" PRIu64 " %14" PRIu64, x->cycles_user, x->cycles_kernel);
	printf("  %*s%s", (int)(2 * (depth < 20 ? depth : 20)), "",
	       x->comm && *x->comm ? x->comm : "[unnamed task]");
	if (x->nexecs)
		printf("  (exec %s)", x->execs[x->nexecs - 1].path);
	putchar('\n');
	for (size_t k = 0; k < n; k++)
		if (!seen[k] && x->pid >= 0 && profile_process(p, k)->ppid == x->pid)
			process_row(p, k, depth + 1, cyc, seen);
}

/* `ps -ef --forest` for the processes the trace showed. */
static void processes_text(const struct profile *p)
{
	size_t n = profile_nprocesses(p);
	const char *src = profile_process_source(p);
	if (!n) {
		puts("no processes: this trace gave no way to tell them apart (a vmlinux with "
		     "--elf, --events, or --tasks satp can)");
		return;
	}
	int cyc = profile_has_cycles(p);
	printf("%zu processes, told apart by %s; %" PRIu64 " task switches\n", n, src ? src : "?",
	       profile_switches(p));
	printf("%8s %8s %14s %14s", "pid", "ppid", "user_insns", "kernel_insns");
	if (cyc)
		printf(" %14s %14s", "user_cycles", "kernel_cycles");
	printf("  command\n");
	char *seen = oob_xcalloc(n, 1);
	/* Roots first: processes whose parent is not in the list. */
	for (size_t i = 0; i < n; i++) {
		int64_t pp = profile_process(p, i)->ppid;
		int orphan = 1;
		for (size_t k = 0; k < n && orphan; k++)
			orphan = !(k != i && pp >= 0 && profile_process(p, k)->pid == pp);
		if (orphan && !seen[i])
			process_row(p, i, 0, cyc, seen);
	}
	for (size_t i = 0; i < n; i++) /* cycles of parents, never expected */
		if (!seen[i])
			process_row(p, i, 0, cyc, seen);
	free(seen);
}

int cli_cmd_processes(struct cli *c, int argc, char **argv)
{
	struct profile *p = cli_reconstruct(c, argc, argv);
	if (!p || cli_out_begin(c->out) < 0) {
		profile_free(p);
		return 1;
	}
	int rc = 0;
	if (c->json) {
		json_t *root = profile_processes_json(p);
		rc = json_dumpf(root, stdout, JSON_INDENT(1)) < 0 ? -EIO : 0;
		putchar('\n');
		json_decref(root);
	} else {
		processes_text(p);
	}
	profile_free(p);
	return rc < 0 || fflush(stdout) ? 1 : 0;
}

/* The writers of a conversion: one, or with --per-hart one per hart seen. */
struct outs {
	const struct cli *c;
	struct trace_write_opts wo;
	struct trace_writer **w;
	size_t n, cap;
};

static struct trace_writer *out_for(struct outs *o, uint16_t hart, struct oob_err *err)
{
	size_t k = o->c->per_hart ? hart : 0;
	if (k >= o->n) {
		oob_xgrow((void **)&o->w, &o->cap, k + 1, sizeof(*o->w));
		memset(o->w + o->n, 0, (k + 1 - o->n) * sizeof(*o->w));
		o->n = k + 1;
	}
	if (!o->w[k]) {
		char path[4096];
		snprintf(path, sizeof(path), o->c->per_hart ? "%s-C%u" : "%s", o->c->out,
			 (unsigned)hart);
		o->w[k] = trace_writer_open(path, &o->wo, err);
	}
	return o->w[k];
}

static int outs_close(struct outs *o, int rc, struct oob_err *err)
{
	for (size_t k = 0; k < o->n; k++) {
		if (o->w[k] && rc < 0)
			trace_writer_abort(o->w[k]);
		else if (o->w[k])
			rc = trace_writer_close(o->w[k], err);
	}
	free(o->w);
	return rc;
}

static int convert(const char *in, const struct cli *c, enum trace_format to, struct oob_err *err)
{
	struct trace_reader *r = trace_open(in, &c->ro.trace, err);
	if (!r)
		return err->code;
	struct outs o = {.c = c,
			 .wo = {.format = to,
				.fields = trace_reader_fields(r),
				.lz4 = c->lz4,
				.oobt_sync_records = c->sync_every}};
	/* One file per hart keeps the trace's one time axis: without cycles, a
	 * record's index in the whole trace becomes its cycle. */
	uint64_t *index = NULL;
	if (c->per_hart && !(o.wo.fields & TRACE_F_CYCLE)) {
		o.wo.fields |= TRACE_F_CYCLE;
		index = oob_xmalloc(TRACE_BATCH_MAX * sizeof(*index));
	}
	const struct trace_batch *b;
	int rc;
	while ((rc = trace_next(r, &b, err)) > 0) {
		struct trace_batch timed = *b;
		if (index) {
			for (uint32_t i = 0; i < b->n; i++)
				index[i] = b->seq + i;
			timed.cycle = index;
		}
		struct trace_writer *w = out_for(&o, b->hart, err);
		if (!w || (rc = trace_writer_put(w, &timed, err)) < 0) {
			rc = w ? rc : err->code;
			break;
		}
	}
	free(index);
	if (rc == 0 && !o.n && !out_for(&o, 0, err)) /* an empty trace: an empty file */
		rc = err->code;
	rc = outs_close(&o, rc, err);
	trace_close(r);
	return rc;
}

int cli_cmd_convert(struct cli *c, int argc, char **argv)
{
	struct oob_err err = {0};
	enum trace_format to = TRACE_FMT_AUTO;
	if (c->to && trace_format_parse(c->to, &to) < 0) {
		cli_bad_value("--to", c->to);
		return 2;
	}
	if (!c->out || to == TRACE_FMT_AUTO || argc - optind != 1) {
		fputs("oobprof convert: needs --to FORMAT, -o OUT and one TRACE\n", stderr);
		return 2;
	}
	if (c->per_hart && !strcmp(c->out, "-")) {
		fputs("oobprof convert: --per-hart writes files: -o names them\n", stderr);
		return 2;
	}
	if (convert(argv[optind], c, to, &err) < 0) {
		fprintf(stderr, "oobprof: %s: %s\n", argv[optind], err.msg);
		return 1;
	}
	return 0;
}

/* Time-keeping exports count cycles when the trace has them; the others
 * weigh as `oobprof fold` does. */
static void export_metric(struct cli *c, const struct profile *p)
{
	c->ex.metric = c->metric;
	if (!c->metric_set && export_wants_events(&c->ex) && profile_has_cycles(p))
		c->ex.metric = PROFILE_CYCLES;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Checked before OUT is opened; written through an out_file (a file is
 * replaced only when the whole export is written). */
static int write_export(struct cli *c, const struct profile *p, struct evlog *log,
			struct oob_err *err)
{
	struct out_file o;
	FILE *f;
	int rc = export_check(p, log, &c->ex, err);
	if (rc < 0 || (rc = out_file_open(&o, c->out, err)) < 0)
		return rc;
	if (!(f = out_file_stream(&o, err)) || (rc = export_write(p, log, &c->ex, f, err)) < 0) {
		out_file_abort(&o);
		return rc < 0 ? rc : err->code;
	}
	return out_file_commit(&o, err);
}

/* The Go trace of --gotrace and its clock against the instruction traces
 * (argv from optind); 0, or 1 after printing why. */
static int go_overlay(struct cli *c, int argc, char **argv, struct gotrace **gt,
		      struct timeline_go *go, json_t **desc)
{
	struct oob_err err = {0};
	struct timeline_go_req q = {.insn = {(const char *const *)argv + optind,
					     (size_t)(argc - optind), c->ro.trace, NULL},
				    .elfs = c->elfs,
				    .nelfs = c->nelfs,
				    .have_hz = c->have_go_clock,
				    .hz = c->go_hz,
				    .offset = c->go_offset};
	if (!(*gt = gotrace_open(c->gotrace, NULL, &err)) ||
	    timeline_go_clock(*gt, &q, &go->clock, desc, &err) < 0) {
		fprintf(stderr, "oobprof timeline: %s\n", err.msg);
		return 1;
	}
	go->trace = *gt;
	go->clock_json = *desc;
	return 0;
}

int cli_cmd_export(struct cli *c, int argc, char **argv)
{
	struct oob_err err = {0};
	struct evlog *log = NULL;
	if (!c->to || export_format_parse(c->to, &c->ex.format) < 0 || !c->out) {
		fputs("oobprof export: needs --to speedscope|perfetto-pb|perfetto|pprof|folded|svg "
		      "and "
		      "-o OUT\n",
		      stderr);
		return 2;
	}
	c->ex.annotate = c->annotate;
	c->ex.name = c->name ? c->name : base_name(argv[optind]);
	c->ex.max_events = c->max_events;
	/* pprof's per-context form splits its samples per hart from the events */
	if (export_wants_events(&c->ex) || (c->ex.format == EXPORT_PPROF && !c->ro.pcs)) {
		/* One event past the bound is enough to know speedscope falls back. */
		uint64_t cap =
		    c->ex.format == EXPORT_SPEEDSCOPE && c->max_events ? c->max_events + 1 : 0;
		if (!(log = evlog_new(NULL, cap, &err))) {
			fprintf(stderr, "oobprof: %s\n", err.msg);
			return 1;
		}
		c->ro.on_event = evlog_record;
		c->ro.event_ctx = log;
	}
	struct profile *p = cli_reconstruct(c, argc, argv);
	struct gotrace *gt = NULL;
	struct timeline_go go = {0};
	json_t *desc = NULL;
	int rc = p ? 0 : 1;
	if (rc == 0 && c->gotrace && export_is_perfetto(c->ex.format) &&
	    (rc = go_overlay(c, argc, argv, &gt, &go, &desc)) == 0)
		c->ex.go = &go;
	if (rc == 0) {
		export_metric(c, p);
		if ((log && evlog_finish(log, &err) < 0) || write_export(c, p, log, &err) < 0) {
			fprintf(stderr, "oobprof export: %s\n", err.msg);
			rc = 1;
		} else if (c->ex.format == EXPORT_SPEEDSCOPE &&
			   export_speedscope_fell_back(log, &c->ex)) {
			fprintf(stderr,
				"oobprof export: note: more than %" PRIu64
				" stack events: speedscope gets the sampled form (weights per "
				"stack, no time); --max-events 0 keeps them all, or use --to "
				"perfetto-pb\n",
				c->max_events);
		}
	}
	json_decref(desc);
	gotrace_free(gt);
	profile_free(p);
	evlog_free(log);
	return rc;
}

int cli_cmd_flamegraph(struct cli *c, int argc, char **argv)
{
	struct oob_err err = {0};
	struct profile *p = cli_reconstruct(c, argc, argv);
	if (!p || cli_out_begin(c->out) < 0) {
		profile_free(p);
		return 1;
	}
	struct export_opts o = {.format = EXPORT_SVG,
				.metric = c->metric,
				.annotate = c->annotate,
				.width = c->width,
				.name = c->name ? c->name : base_name(argv[optind])};
	int rc = export_write(p, NULL, &o, stdout, &err);
	if (rc < 0)
		fprintf(stderr, "oobprof flamegraph: %s\n", err.msg);
	profile_free(p);
	return rc < 0 ? 1 : 0;
}

int cli_cmd_timeline(struct cli *c, int argc, char **argv)
{
	struct oob_err err = {0};
	struct timeline *t = NULL;
	struct gotrace *gt = NULL;
	struct timeline_go go = {0};
	json_t *desc = NULL;
	struct evrun ev = {0};
	c->win.hart = -1;
	c->win.min_dur = c->ex.min_duration;
	c->windowed = 0; /* the run's whole profile; the window cuts intervals */
	struct profile *p = evrun_new(c, &ev, &err) == 0 ? cli_reconstruct(c, argc, argv) : NULL;
	int rc = p ? 0 : 1;
	if (!p && err.code)
		fprintf(stderr, "oobprof timeline: %s\n", err.msg);
	if (rc == 0 && (evrun_finish(c, &ev, &err) < 0 ||
			timeline_harts_ix(ev.log, ev.ix, p, &c->win, &t, &err) < 0)) {
		fprintf(stderr, "oobprof timeline: %s\n", err.msg);
		rc = 1;
	}
	if (rc == 0 && c->gotrace)
		rc = go_overlay(c, argc, argv, &gt, &go, &desc);
	if (rc == 0 && cli_out_begin(c->out) < 0)
		rc = 1;
	if (rc == 0) {
		json_t *j = timeline_json(t, p, c->gotrace ? &go : NULL, &c->win,
					  c->tracks ? c->tracks : TIMELINE_T_ALL);
		rc = json_dumpf(j, stdout, JSON_COMPACT) < 0 || puts("") < 0;
		json_decref(j);
	}
	json_decref(desc);
	gotrace_free(gt);
	timeline_free(t);
	profile_free(p);
	evrun_free(&ev);
	return rc;
}

/* The run's waits (offcpu, path): the profile and the waits, or NULL. */
static struct profile *waits_run(struct cli *c, int argc, char **argv, const char *cmd,
				 struct evrun *ev, struct waits **w)
{
	struct oob_err err = {0};
	c->windowed = 0;
	struct profile *p = evrun_new(c, ev, &err) == 0 ? cli_reconstruct(c, argc, argv) : NULL;
	if (p && (evrun_finish(c, ev, &err) < 0 || waits_build(ev->log, p, w, &err) < 0)) {
		profile_free(p);
		p = NULL;
	}
	if (!p && err.code)
		fprintf(stderr, "oobprof %s: %s\n", cmd, err.msg);
	return p;
}

/* The process frame of --pid/--task (WAITS_NONE without one): a pid, or the
 * name of a task's root frame; -1 after saying so. */
static int task_of(const struct cli *c, const struct profile *p, const char *cmd, uint32_t *task)
{
	*task = WAITS_NONE;
	if (!c->task_name)
		return 0;
	*task = waits_task_named(p, c->task_name);
	if (*task == WAITS_NONE) {
		fprintf(stderr,
			"oobprof %s: no task %s in this run ('oobprof processes' lists "
			"them; a task without a pid by its name, as \"waits [task 21]\")\n",
			cmd, c->task_name);
		return -1;
	}
	return 0;
}

int cli_cmd_offcpu(struct cli *c, int argc, char **argv)
{
	struct oob_err err = {0};
	struct evrun ev = {0};
	struct waits *w = NULL;
	struct profile *p = waits_run(c, argc, argv, "offcpu", &ev, &w), *o = NULL;
	uint32_t task;
	int rc = p && task_of(c, p, "offcpu", &task) == 0 ? 0 : 1;
	if (rc == 0 && !c->json && !(o = waits_offcpu_profile(w, p, task, &err))) {
		fprintf(stderr, "oobprof offcpu: %s\n", err.msg);
		rc = 1;
	}
	if (rc == 0 && cli_out_begin(c->out) < 0)
		rc = 1;
	if (rc == 0 && c->json) {
		json_t *j = waits_json(w, p, task);
		rc = json_dumpf(j, stdout, JSON_COMPACT) < 0 || puts("") < 0;
		json_decref(j);
	} else if (rc == 0) {
		rc = profile_write_folded(o, stdout, PROFILE_INSNS, c->annotate) < 0;
	}
	profile_free(o);
	waits_free(w);
	profile_free(p);
	evrun_free(&ev);
	return rc;
}

int cli_cmd_path(struct cli *c, int argc, char **argv)
{
	struct oob_err err = {0};
	struct evrun ev = {0};
	struct waits *w = NULL;
	json_t *j = NULL;
	if (!c->task_name) {
		fprintf(stderr, "oobprof path: --task PID is needed ('oobprof processes' lists "
				"them)\n");
		return 2;
	}
	struct profile *p = waits_run(c, argc, argv, "path", &ev, &w);
	uint32_t task;
	int rc = p && task_of(c, p, "path", &task) == 0 ? 0 : 1;
	if (rc == 0 &&
	    waits_path_json(ev.log, w, p, task, c->win.from, c->win.to, 5, &j, &err) < 0) {
		fprintf(stderr, "oobprof path: %s\n", err.msg);
		rc = 1;
	}
	if (rc == 0 && cli_out_begin(c->out) < 0)
		rc = 1;
	if (rc == 0)
		rc = json_dumpf(j, stdout, JSON_COMPACT) < 0 || puts("") < 0;
	json_decref(j);
	waits_free(w);
	profile_free(p);
	evrun_free(&ev);
	return rc;
}
