/*
 * cli_cmds: the oobprof commands over a reconstruction: fold, top, stats,
 * processes, convert, export and timeline (usage and options in cli.c).
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
#include "trace/trace.h"
#include "trace/trace_write.h"

/* The profile of --window, cut from the stack events of the run that made p
 * (replaces p). */
static struct profile *window_of(struct cli *c, struct profile *p, struct evlog *log,
				 struct oob_err *err)
{
	struct profile *w = NULL;
	if (evlog_finish(log, err) == 0)
		timeline_profile(log, p, -1, c->win.from, c->win.to, &w, err);
	profile_free(p);
	return w;
}

static struct profile *reconstruct(struct cli *c, int argc, char **argv)
{
	struct profile *p;
	struct oob_err err = {0};
	struct evlog *log = NULL;
	if (c->windowed && !c->ro.on_event) {
		if (!(log = evlog_new(NULL, 0, &err))) {
			fprintf(stderr, "oobprof: %s\n", err.msg);
			return NULL;
		}
		c->ro.on_event = evlog_record;
		c->ro.event_ctx = log;
	}
	int rc = recon_run(&c->ro, (const char *const *)argv + optind, (size_t)(argc - optind), &p,
			   &err);
	if (rc == 0 && log)
		p = window_of(c, p, log, &err);
	evlog_free(log);
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
	struct profile *p = reconstruct(c, argc, argv);
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

static void top_text(const struct profile *p, const struct profile_func *v, size_t n)
{
	printf("%12s %14s %14s %14s %14s %6s  %s\n", "calls", "self_insns", "total_insns",
	       "self_cycles", "total_cycles", "ipc", "function");
	for (size_t i = 0; i < n; i++) {
		const struct profile_func *f = &v[i];
		printf("%12" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64
		       " %6.3f  %s\n",
		       f->calls, f->self_insns, f->total_insns, f->self_cycles, f->total_cycles,
		       ipc(f->total_insns, f->total_cycles), profile_frame(p, f->frame)->name);
	}
}

int cli_cmd_top(struct cli *c, int argc, char **argv)
{
	struct profile *p = reconstruct(c, argc, argv);
	if (!p || cli_out_begin(c->out) < 0) {
		profile_free(p);
		return 1;
	}
	struct profile_func *v;
	size_t n = profile_functions(p, c->metric, &v);
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
	struct profile *p = reconstruct(c, argc, argv);
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

int cli_cmd_processes(struct cli *c, int argc, char **argv)
{
	struct profile *p = reconstruct(c, argc, argv);
	if (!p || cli_out_begin(c->out) < 0) {
		profile_free(p);
		return 1;
	}
	json_t *root = profile_processes_json(p);
	int rc = json_dumpf(root, stdout, JSON_INDENT(1)) < 0 ? -EIO : 0;
	putchar('\n');
	json_decref(root);
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
			 .wo = {.format = to, .fields = trace_reader_fields(r), .lz4 = c->lz4}};
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
		fputs("oobprof export: needs --to speedscope|perfetto|pprof|folded and -o OUT\n",
		      stderr);
		return 2;
	}
	c->ex.annotate = c->annotate;
	c->ex.name = c->name ? c->name : base_name(argv[optind]);
	c->ex.max_events = c->max_events;
	if (export_wants_events(&c->ex)) {
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
	struct profile *p = reconstruct(c, argc, argv);
	struct gotrace *gt = NULL;
	struct timeline_go go = {0};
	json_t *desc = NULL;
	int rc = p ? 0 : 1;
	if (rc == 0 && c->gotrace && c->ex.format == EXPORT_PERFETTO &&
	    (rc = go_overlay(c, argc, argv, &gt, &go, &desc)) == 0)
		c->ex.go = &go;
	if (rc == 0) {
		export_metric(c, p);
		if ((log && evlog_finish(log, &err) < 0) || write_export(c, p, log, &err) < 0) {
			fprintf(stderr, "oobprof export: %s\n", err.msg);
			rc = 1;
		}
	}
	json_decref(desc);
	gotrace_free(gt);
	profile_free(p);
	evlog_free(log);
	return rc;
}

int cli_cmd_timeline(struct cli *c, int argc, char **argv)
{
	struct oob_err err = {0};
	struct timeline *t = NULL;
	struct gotrace *gt = NULL;
	struct timeline_go go = {0};
	json_t *desc = NULL;
	struct evlog *log = evlog_new(NULL, 0, &err);
	c->win.hart = -1;
	c->win.min_dur = c->ex.min_duration;
	c->ro.on_event = evlog_record;
	c->ro.event_ctx = log;
	c->windowed = 0; /* the run's whole profile; the window cuts intervals */
	struct profile *p = log ? reconstruct(c, argc, argv) : NULL;
	int rc = p ? 0 : 1;
	if (rc == 0 &&
	    (evlog_finish(log, &err) < 0 || timeline_harts(log, p, &c->win, &t, &err) < 0)) {
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
	evlog_free(log);
	return rc;
}
