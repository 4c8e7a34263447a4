/* cli_go: `oobprof gotrace` (see cli_go.h). */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_go.h"
#include "go/goclock.h"
#include "go/gotrace.h"
#include "util/oob_log.h"

#define ALIGN_MAX 64 /* --align files: one per hart */

struct opts {
	int json;
	const char *align[ALIGN_MAX], *elf, *func, *gotrace, *out;
	size_t nalign;
	struct goclock_align_opts ao;
	struct trace_opts trace;
	double hz, offset;
	int have_clock;
};

static void usage(FILE *f)
{
	fputs("usage: oobprof gotrace [--json] GOTRACE\n"
	      "       oobprof gotrace [--json] --align INSN_TRACE --elf PROG [options] GOTRACE\n"
	      "options:\n"
	      "  --json                 JSON output (every interval, syscall, range, region)\n"
	      "  --align INSN_TRACE     fit the Go clock to the instruction trace of the same run\n"
	      "                         (repeated: one file per hart, TRACEFILE-C<n>)\n"
	      "  --elf PROG             the Go program (symbols: runtime.traceEventLocked)\n"
	      "  --func NAME            the trace-event function to use instead\n"
	      "  --tolerance N          refuse a fit with a residual over N trace units\n"
	      "  --tolerance-rel F      ... over F times the anchors' span (default 0.02)\n"
	      "  --go-clock HZ[:OFF]    check this model (trace clock HZ, offset OFF) instead\n"
	      "  --format F             instruction trace format (default: detect)\n"
	      "  --log-level L          error, warn (default), info, debug\n"
	      "  -o OUT                 write to OUT instead of stdout (replaced on success)\n",
	      f);
}

static json_t *id_json(uint64_t v)
{
	return v == GOTRACE_NONE ? json_null() : json_integer((json_int_t)v);
}

static json_t *str_json(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *spans_json(const struct gotrace *t, const struct gotrace_span *s, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(
		    a, json_pack("{s:I, s:I, s:f, s:f, s:s, s:o, s:o, s:o, s:o, s:b}", "start",
				 (json_int_t)s[i].start, "end", (json_int_t)s[i].end, "start_ns",
				 gotrace_ns(t, s[i].start), "end_ns", gotrace_ns(t, s[i].end),
				 "state", gotrace_gstate_name(s[i].state), "g", id_json(s[i].g),
				 "p", id_json(s[i].p), "m", id_json(s[i].m), "reason",
				 str_json(s[i].reason), "open", s[i].open));
	return a;
}

static json_t *entities_json(const struct gotrace *t)
{
	const struct gotrace_model *m = gotrace_model(t);
	json_t *gs = json_array(), *ps = json_array(), *ms = json_array();
	for (size_t i = 0; i < m->ngs; i++) {
		const struct gotrace_goroutine *g = &m->gs[i];
		json_array_append_new(
		    gs,
		    json_pack("{s:I, s:o, s:o, s:I, s:I, s:f, s:o}", "id", (json_int_t)g->id,
			      "name", str_json(g->name), "label", str_json(g->label), "created",
			      (json_int_t)g->created, "ended", (json_int_t)g->ended, "running_ns",
			      (double)g->running_ticks * 1e9 / (double)gotrace_info(t)->freq,
			      "spans", spans_json(t, m->gspans + g->span0, g->nspans)));
	}
	for (size_t i = 0; i < m->nps; i++)
		json_array_append_new(
		    ps, json_pack("{s:o, s:o}", "id", id_json(m->ps[i].id), "spans",
				  spans_json(t, m->pspans + m->ps[i].span0, m->ps[i].nspans)));
	for (size_t i = 0; i < m->nms; i++)
		json_array_append_new(
		    ms, json_pack("{s:o, s:o}", "id", id_json(m->ms[i].id), "spans",
				  spans_json(t, m->mspans + m->ms[i].span0, m->ms[i].nspans)));
	return json_pack("{s:o, s:o, s:o}", "goroutines", gs, "procs", ps, "threads", ms);
}

static const char *range_name(unsigned k)
{
	static const char *const n[] = {"", "gc", "stw", "sweep", "mark_assist"};
	return k < 5 ? n[k] : "";
}

static json_t *extras_json(const struct gotrace *t)
{
	const struct gotrace_model *m = gotrace_model(t);
	json_t *sc = json_array(), *rg = json_array(), *tk = json_array(), *re = json_array(),
	       *lg = json_array();
	for (size_t i = 0; i < m->nsyscalls; i++) {
		const struct gotrace_syscall *s = &m->syscalls[i];
		json_array_append_new(sc, json_pack("{s:o, s:o, s:o, s:I, s:I, s:b, s:b}", "g",
						    id_json(s->g), "p", id_json(s->p), "m",
						    id_json(s->m), "start", (json_int_t)s->start,
						    "end", (json_int_t)s->end, "blocked",
						    s->blocked, "open", s->open));
	}
	for (size_t i = 0; i < m->nranges; i++) {
		const struct gotrace_range *r = &m->ranges[i];
		json_array_append_new(
		    rg, json_pack("{s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:b}", "kind",
				  range_name(r->kind), "start", (json_int_t)r->start, "end",
				  (json_int_t)r->end, "g", id_json(r->g), "p", id_json(r->p), "m",
				  id_json(r->m), "name", str_json(r->name), "open", r->open));
	}
	for (size_t i = 0; i < m->ntasks; i++)
		json_array_append_new(tk, json_pack("{s:I, s:I, s:o, s:I, s:I}", "id",
						    (json_int_t)m->tasks[i].id, "parent",
						    (json_int_t)m->tasks[i].parent, "name",
						    str_json(m->tasks[i].name), "start",
						    (json_int_t)m->tasks[i].start, "end",
						    (json_int_t)m->tasks[i].end));
	for (size_t i = 0; i < m->nregions; i++) {
		const struct gotrace_region *r = &m->regions[i];
		json_array_append_new(re, json_pack("{s:o, s:I, s:o, s:I, s:I, s:i, s:b}", "g",
						    id_json(r->g), "task", (json_int_t)r->task,
						    "name", str_json(r->name), "start",
						    (json_int_t)r->start, "end", (json_int_t)r->end,
						    "depth", (int)r->depth, "open", r->open));
	}
	for (size_t i = 0; i < m->nlogs; i++)
		json_array_append_new(
		    lg, json_pack("{s:I, s:o, s:I, s:o, s:o}", "ticks",
				  (json_int_t)m->logs[i].ticks, "g", id_json(m->logs[i].g), "task",
				  (json_int_t)m->logs[i].task, "key", str_json(m->logs[i].key),
				  "value", str_json(m->logs[i].value)));
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:I}", "syscalls", sc, "ranges", rg, "tasks",
			 tk, "regions", re, "logs", lg, "cpu_samples", (json_int_t)m->nsamples);
}

static json_t *counts_json(const struct gotrace *t)
{
	json_t *c = json_object();
	const uint64_t *n = gotrace_type_counts(t);
	for (unsigned i = 0; i < 256; i++)
		if (n[i])
			json_object_set_new(c, gotrace_type_name(t, i),
					    json_integer((json_int_t)n[i]));
	return c;
}

static json_t *summary_json(const struct gotrace *t)
{
	const struct gotrace_info *in = gotrace_info(t);
	size_t nev;
	gotrace_events(t, &nev);
	char ver[16];
	snprintf(ver, sizeof(ver), "1.%d", in->version - 1000);
	json_t *j = json_pack(
	    "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "format",
	    in->format == 1 ? "v1" : "v2", "version", ver, "frequency", (json_int_t)in->freq,
	    "bytes", (json_int_t)in->bytes, "batches", (json_int_t)in->batches, "generations",
	    (json_int_t)in->generations, "events", (json_int_t)nev, "timed_events",
	    (json_int_t)in->timed_events, "strings", (json_int_t)in->strings, "stacks",
	    (json_int_t)in->stacks, "min_ticks", (json_int_t)in->min_ticks, "max_ticks",
	    (json_int_t)in->max_ticks, "duration_ns", gotrace_ns(t, in->max_ticks));
	if (in->clock_ticks)
		json_object_set_new(j, "clock_snapshot",
				    json_pack("{s:I, s:I, s:I, s:I}", "ticks",
					      (json_int_t)in->clock_ticks, "mono_ns",
					      (json_int_t)in->clock_mono_ns, "wall_s",
					      (json_int_t)in->clock_wall_s, "wall_ns",
					      (json_int_t)in->clock_wall_ns));
	json_object_set_new(j, "counts", counts_json(t));
	return j;
}

static void summary_text(const struct gotrace *t)
{
	const struct gotrace_info *in = gotrace_info(t);
	const struct gotrace_model *m = gotrace_model(t);
	const uint64_t *c = gotrace_type_counts(t);
	size_t nev, blocked = 0;
	gotrace_events(t, &nev);
	printf("format: %s (go 1.%d trace)\nfrequency: %" PRIu64 " ticks/s\n",
	       in->format == 1 ? "v1" : "v2", in->version - 1000, in->freq);
	printf("duration: %.3f ms\nevents: %zu (timed %" PRIu64 "), batches %" PRIu64
	       ", generations %" PRIu64 ", strings %" PRIu64 ", stacks %" PRIu64 "\ncounts:",
	       gotrace_ns(t, in->max_ticks) / 1e6, nev, in->timed_events, in->batches,
	       in->generations, in->strings, in->stacks);
	for (unsigned i = 0; i < 256; i++)
		if (c[i])
			printf(" %s %" PRIu64, gotrace_type_name(t, i), c[i]);
	printf("\ngoroutines: %zu\n", m->ngs);
	for (size_t i = 0; i < m->ngs; i++)
		printf("  G%" PRIu64 " %s: running %.3f ms, %zu intervals\n", m->gs[i].id,
		       m->gs[i].name ? m->gs[i].name : "?",
		       (double)m->gs[i].running_ticks * 1e3 / (double)in->freq, m->gs[i].nspans);
	for (size_t i = 0; i < m->nsyscalls; i++)
		blocked += m->syscalls[i].blocked;
	printf("procs: %zu, threads: %zu\nsyscalls: %zu (%zu blocked), ranges: %zu, tasks: %zu, "
	       "regions: %zu, logs: %zu, cpu samples: %zu\n",
	       m->nps, m->nms, m->nsyscalls, blocked, m->nranges, m->ntasks, m->nregions, m->nlogs,
	       m->nsamples);
}

static json_t *fit_json(const struct goclock_fit *f)
{
	return json_pack("{s:f, s:f, s:I, s:I, s:f, s:f, s:f, s:f, s:I}", "a", f->clock.a, "b",
			 f->clock.b, "x0", (json_int_t)f->clock.x0, "anchors", (json_int_t)f->n,
			 "span", f->span, "rms", f->rms, "max_abs", f->max_abs, "tolerance",
			 f->tolerance, "worst", (json_int_t)f->worst);
}

static json_t *align_json(const struct goclock_alignment *al, int ok, const char *why)
{
	json_t *an = json_array(), *th = json_array();
	for (size_t i = 0; i < al->nanchors; i++) {
		const struct goclock_anchor *a = &al->anchors[i];
		json_array_append_new(
		    an, json_pack("{s:s, s:I, s:I, s:o, s:I, s:I, s:s, s:f}", "kind",
				  a->kind == GOCLOCK_ANCHOR_EMIT ? "emit" : "syscall", "go",
				  (json_int_t)a->go, "trace", (json_int_t)a->trace, "go_m",
				  id_json(a->go_m), "hart", (json_int_t)a->hart, "go_off",
				  (json_int_t)a->go_off, "event", gotrace_kind_name(a->go_kind),
				  "residual", al->resid[i]));
	}
	for (size_t i = 0; i < al->nthreads; i++)
		json_array_append_new(
		    th, json_pack("{s:I, s:I, s:I, s:I}", "go_m", (json_int_t)al->threads[i].go_m,
				  "hart", (json_int_t)al->threads[i].hart, "anchors",
				  (json_int_t)al->threads[i].anchors, "other_hart",
				  (json_int_t)al->threads[i].other));
	return json_pack("{s:b, s:o, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:f, s:f, "
			 "s:o, s:I, s:o}",
			 "ok", ok, "error", why ? json_string(why) : json_null(), "time_axis",
			 al->cycles ? "cycle" : "instruction index", "func", al->func, "func_addr",
			 (json_int_t)al->func_addr, "go_events", (json_int_t)al->go_events,
			 "entries", (json_int_t)al->entries, "ecalls", (json_int_t)al->ecalls,
			 "instructions", (json_int_t)al->insns, "harts", (json_int_t)al->harts,
			 "model", fit_json(&al->fit), "syscall_anchors", (json_int_t)al->nsys,
			 "syscall_mean", al->sys_mean, "syscall_max_abs", al->sys_max_abs,
			 "threads", th, "thread_mismatch", (json_int_t)al->thread_mismatch,
			 "anchors", an);
}

static void align_text(const struct goclock_alignment *al)
{
	const struct goclock_fit *f = &al->fit;
	const char *unit = al->cycles ? "cycle" : "insn";
	printf("alignment: %s at 0x%" PRIx64 ": %" PRIu64 " entries, %" PRIu64
	       " Go timed events; %" PRIu64 " instructions, %u harts\n",
	       al->func, al->func_addr, al->entries, al->go_events, al->insns, al->harts);
	printf("model: %s = %.9g * (go_ticks - %" PRIu64 ") + %.3f   [time axis: %s]\n", unit,
	       f->clock.a, f->clock.x0, f->clock.b,
	       al->cycles ? "cycles" : "global instruction index");
	printf("anchors: %zu; residual rms %.1f, max %.1f %ss (anchor %zu); tolerance %.1f "
	       "(span %.0f)\n",
	       f->n, f->rms, f->max_abs, unit, f->worst, f->tolerance, f->span);
	printf("syscall anchors: %zu; residual mean %.1f, max %.1f %ss\n", al->nsys, al->sys_mean,
	       al->sys_max_abs, unit);
	printf("threads:");
	for (size_t i = 0; i < al->nthreads; i++)
		printf(" M%" PRIu64 "->hart%u(%zu/%zu)", al->threads[i].go_m, al->threads[i].hart,
		       al->threads[i].anchors - al->threads[i].other, al->threads[i].anchors);
	printf("\nthread mismatches: %zu\n", al->thread_mismatch);
}

static int emit_json(json_t *j)
{
	int rc = json_dumpf(j, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER) < 0 ? -EIO : 0;
	putchar('\n');
	json_decref(j);
	return rc;
}

static int run_align(const struct opts *o, const struct gotrace *t)
{
	struct goclock_alignment *al = NULL;
	struct oob_err err = {0};
	struct goclock clk;
	struct goclock_align_opts ao = o->ao;
	if (o->have_clock) {
		if (goclock_from_hz(o->hz, o->offset, gotrace_info(t)->freq, &clk, &err) < 0) {
			fprintf(stderr, "oobprof gotrace: %s\n", err.msg);
			return 1;
		}
		ao.given = &clk;
	}
	ao.elf = o->elf;
	ao.func = o->func;
	struct goclock_traces insn = {o->align, o->nalign, o->trace, NULL};
	int rc = goclock_align(t, &insn, &ao, &al, &err);
	if (rc < 0)
		fprintf(stderr, "oobprof gotrace: %s\n", err.msg);
	if (al && o->json) {
		json_t *j = summary_json(t);
		json_object_set_new(j, "alignment",
				    align_json(al, rc == 0, rc < 0 ? err.msg : NULL));
		emit_json(j);
	} else if (al) {
		align_text(al);
	}
	goclock_alignment_free(al);
	return rc < 0 ? 1 : 0;
}

static int parse_num(const char *opt, const char *s, double *out)
{
	char *end;
	*out = strtod(s, &end);
	if (end == s || *end || !isfinite(*out)) {
		fprintf(stderr, "oobprof gotrace: %s: bad number '%s'\n", opt, s);
		return -1;
	}
	return 0;
}

static int parse_clock(struct opts *o, char *s)
{
	char *colon = strchr(s, ':');
	if (colon)
		*colon = '\0';
	o->have_clock = 1;
	return parse_num("--go-clock", s, &o->hz) < 0 ||
		       (colon && parse_num("--go-clock", colon + 1, &o->offset) < 0)
		   ? -1
		   : 0;
}

enum { O_JSON = 256, O_ALIGN, O_ELF, O_FUNC, O_TOL, O_TOLREL, O_CLOCK, O_FORMAT, O_LOG };

static int parse_opt(struct opts *o, int c, char *arg)
{
	enum oob_log_level lvl;
	switch (c) {
	case O_JSON:
		o->json = 1;
		return 0;
	case O_ALIGN:
		if (o->nalign < ALIGN_MAX) {
			o->align[o->nalign++] = arg;
			return 0;
		}
		fprintf(stderr, "oobprof gotrace: at most %d --align files\n", ALIGN_MAX);
		return -1;
	case O_ELF:
		o->elf = arg;
		return 0;
	case O_FUNC:
		o->func = arg;
		return 0;
	case O_TOL:
		return parse_num("--tolerance", arg, &o->ao.fit.max_residual);
	case O_TOLREL:
		return parse_num("--tolerance-rel", arg, &o->ao.fit.max_residual_rel);
	case O_CLOCK:
		return parse_clock(o, arg);
	case O_FORMAT:
		if (trace_format_parse(arg, &o->trace.format) == 0)
			return 0;
		fprintf(stderr, "oobprof gotrace: --format: unknown format '%s'\n", arg);
		return -1;
	case O_LOG:
		if (oob_log_parse_level(arg, &lvl) == 0) {
			oob_log_set_level(lvl);
			return 0;
		}
		fprintf(stderr, "oobprof gotrace: --log-level: bad value '%s'\n", arg);
		return -1;
	case 'o':
		o->out = arg;
		return 0;
	default:
		return -1;
	}
}

static int parse_args(struct opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
	    {"json", no_argument, NULL, O_JSON},
	    {"align", required_argument, NULL, O_ALIGN},
	    {"elf", required_argument, NULL, O_ELF},
	    {"func", required_argument, NULL, O_FUNC},
	    {"tolerance", required_argument, NULL, O_TOL},
	    {"tolerance-rel", required_argument, NULL, O_TOLREL},
	    {"go-clock", required_argument, NULL, O_CLOCK},
	    {"format", required_argument, NULL, O_FORMAT},
	    {"log-level", required_argument, NULL, O_LOG},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", lo, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (parse_opt(o, c, optarg) < 0) {
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc - 1 || (o->nalign && !o->elf) || (o->elf && !o->nalign)) {
		fputs("oobprof gotrace: needs one GOTRACE, and --align and --elf together\n",
		      stderr);
		usage(stderr);
		return -1;
	}
	o->gotrace = argv[optind];
	return 0;
}

int cli_gotrace(int argc, char **argv)
{
	struct opts o = {0};
	struct oob_err err = {0};
	int rc = parse_args(&o, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	struct gotrace *t = gotrace_open(o.gotrace, NULL, &err);
	if (!t) {
		fprintf(stderr, "oobprof gotrace: %s\n", err.msg);
		return 1;
	}
	if (cli_out_begin(o.out) < 0) {
		gotrace_free(t);
		return 1;
	}
	if (o.nalign) {
		rc = run_align(&o, t);
	} else if (o.json) {
		json_t *j = summary_json(t);
		json_object_update_new(j, entities_json(t));
		json_object_update_new(j, extras_json(t));
		rc = emit_json(j) < 0;
	} else {
		summary_text(t);
	}
	gotrace_free(t);
	return rc || fflush(stdout) ? 1 : 0;
}
