/*
 * oobprof: the command line face of the core (DESIGN.md 5). The forms below
 * are a contract used by the server, the tests and people's scripts:
 *
 *   oobprof fold    [options] TRACE...   folded stacks on stdout
 *   oobprof top     [options] TRACE...   per-function table (--json for JSON)
 *   oobprof stats   [options] TRACE...   counts and throughput
 *   oobprof convert --to oobt|tracerv-bin TRACE -o OUT
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_go.h"
#include "oob_err.h"
#include "oob_log.h"
#include "oob_mem.h"
#include "profile.h"
#include "recon.h"
#include "trace.h"
#include "trace_write.h"

struct cli {
	struct recon_opts ro;
	struct recon_elf *elfs;
	size_t nelfs, cap_elfs;
	const char **maps;
	size_t nmaps, cap_maps;
	enum profile_metric metric;
	int metric_set;
	int annotate, json;
	enum trace_format to;
	const char *out;
};

static void usage(FILE *f)
{
	fputs("usage: oobprof fold|top|stats|processes [options] TRACE...\n"
	      "       oobprof gotrace [--json] [--align TRACE --elf PROG] GOTRACE\n"
	      "       oobprof convert --to oobt|tracerv-bin TRACE -o OUT\n"
	      "options:\n"
	      "  --format F            trace format (auto, tracerv-bin, tracerv-text, fireperf,\n"
	      "                        spike, qemu, oobt); default: detect from content\n"
	      "  --elf PATH[@BASE]     an ELF (program, library, vmlinux); BASE = run-time\n"
	      "                        address of its lowest segment (PIE, shared libraries)\n"
	      "  --map perf-PID.map    JIT symbol map\n"
	      "  --metric M            instructions (default), cycles or calls\n"
	      "  --annotate            fold: add _[k] to kernel frames\n"
	      "  --inline              add inlined functions as frames\n"
	      "  --json                top: JSON output\n"
	      "  --events F            sideband process events (JSON Lines)\n"
	      "  --hart N              hart of a single-hart trace file (default 0)\n"
	      "  --tracerv-width N     TracerV binary: retire width (default: detect)\n"
	      "  --tracerv-words N     TracerV binary: 64-bit words per record\n"
	      "  --tracerv-valid-bit N TracerV binary: valid bit, 40 or 63\n"
	      "  --max-insns N         stop after N instructions\n"
	      "  --log-level L         error, warn (default), info, debug\n",
	      f);
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int add_elf(struct cli *c, char *arg)
{
	char *at = strrchr(arg, '@');
	struct recon_elf e = {.path = arg, .base = RECON_BASE_LINK};
	if (at) {
		*at = '\0';
		if (parse_u64(at + 1, &e.base) < 0) {
			fprintf(stderr, "oobprof: --elf %s@%s: bad base address\n", arg, at + 1);
			return -EINVAL;
		}
	}
	oob_xgrow((void **)&c->elfs, &c->cap_elfs, c->nelfs + 1, sizeof(*c->elfs));
	c->elfs[c->nelfs++] = e;
	return 0;
}

enum {
	OPT_FORMAT = 256,
	OPT_ELF,
	OPT_MAP,
	OPT_METRIC,
	OPT_ANNOTATE,
	OPT_INLINE,
	OPT_JSON,
	OPT_EVENTS,
	OPT_HART,
	OPT_TV_WIDTH,
	OPT_TV_WORDS,
	OPT_TV_VALID,
	OPT_MAX,
	OPT_TO,
	OPT_LOG,
};

static const struct option long_opts[] = {
    {"format", required_argument, NULL, OPT_FORMAT},
    {"elf", required_argument, NULL, OPT_ELF},
    {"map", required_argument, NULL, OPT_MAP},
    {"metric", required_argument, NULL, OPT_METRIC},
    {"annotate", no_argument, NULL, OPT_ANNOTATE},
    {"inline", no_argument, NULL, OPT_INLINE},
    {"json", no_argument, NULL, OPT_JSON},
    {"events", required_argument, NULL, OPT_EVENTS},
    {"hart", required_argument, NULL, OPT_HART},
    {"tracerv-width", required_argument, NULL, OPT_TV_WIDTH},
    {"tracerv-words", required_argument, NULL, OPT_TV_WORDS},
    {"tracerv-valid-bit", required_argument, NULL, OPT_TV_VALID},
    {"max-insns", required_argument, NULL, OPT_MAX},
    {"to", required_argument, NULL, OPT_TO},
    {"log-level", required_argument, NULL, OPT_LOG},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int bad_value(const char *opt, const char *val)
{
	fprintf(stderr, "oobprof: %s: bad value '%s'\n", opt, val);
	return -EINVAL;
}

static int parse_number_opt(const char *name, const char *val, unsigned max, unsigned *out)
{
	uint64_t v;
	if (parse_u64(val, &v) < 0 || v > max)
		return bad_value(name, val);
	*out = (unsigned)v;
	return 0;
}

static int parse_opt(struct cli *c, int opt, char *val)
{
	struct trace_opts *t = &c->ro.trace;
	unsigned u;
	enum oob_log_level lvl;
	switch (opt) {
	case OPT_FORMAT:
		return trace_format_parse(val, &t->format) < 0 ? bad_value("--format", val) : 0;
	case OPT_ELF:
		return add_elf(c, val);
	case OPT_MAP:
		oob_xgrow((void **)&c->maps, &c->cap_maps, c->nmaps + 1, sizeof(*c->maps));
		c->maps[c->nmaps++] = val;
		return 0;
	case OPT_METRIC:
		c->metric_set = 1;
		return profile_metric_parse(val, &c->metric) < 0 ? bad_value("--metric", val) : 0;
	case OPT_ANNOTATE:
		c->annotate = 1;
		return 0;
	case OPT_INLINE:
		c->ro.inline_frames = 1;
		return 0;
	case OPT_JSON:
		c->json = 1;
		return 0;
	case OPT_EVENTS:
		c->ro.events_path = val;
		return 0;
	case OPT_HART:
		if (parse_number_opt("--hart", val, 65535, &u) < 0)
			return -EINVAL;
		t->hart = (uint16_t)u;
		return 0;
	case OPT_TV_WIDTH:
		return parse_number_opt("--tracerv-width", val, 64, &t->tracerv.width);
	case OPT_TV_WORDS:
		return parse_number_opt("--tracerv-words", val, 64, &t->tracerv.words);
	case OPT_TV_VALID:
		return parse_number_opt("--tracerv-valid-bit", val, 63, &t->tracerv.valid_bit);
	case OPT_MAX:
		return parse_u64(val, &c->ro.max_insns) < 0 ? bad_value("--max-insns", val) : 0;
	case OPT_TO:
		return trace_format_parse(val, &c->to) < 0 ? bad_value("--to", val) : 0;
	case OPT_LOG:
		if (oob_log_parse_level(val, &lvl) < 0)
			return bad_value("--log-level", val);
		oob_log_set_level(lvl);
		return 0;
	case 'o':
		c->out = val;
		return 0;
	case 'h':
		usage(stdout);
		exit(0);
	default:
		usage(stderr);
		return -EINVAL;
	}
}

static int parse_args(struct cli *c, int argc, char **argv)
{
	int opt;
	optind = 2; /* argv[1] is the command */
	while ((opt = getopt_long(argc, argv, "o:h", long_opts, NULL)) != -1)
		if (parse_opt(c, opt, optarg) < 0)
			return -EINVAL;
	if (optind >= argc) {
		fputs("oobprof: no trace given\n", stderr);
		usage(stderr);
		return -EINVAL;
	}
	c->ro.elfs = c->elfs;
	c->ro.nelfs = c->nelfs;
	c->ro.perfmaps = c->maps;
	c->ro.nperfmaps = c->nmaps;
	return 0;
}

static struct profile *reconstruct(struct cli *c, int argc, char **argv)
{
	struct profile *p;
	struct oob_err err = {0};
	if (recon_run(&c->ro, (const char *const *)argv + optind, (size_t)(argc - optind), &p,
		      &err) < 0) {
		fprintf(stderr, "oobprof: %s\n", err.msg);
		return NULL;
	}
	/* FirePerf logs have cycles only: make them the default metric there. */
	if (!c->metric_set && profile_stats(p)->instructions == 0 && profile_has_cycles(p))
		c->metric = PROFILE_CYCLES;
	return p;
}

static int cmd_fold(struct cli *c, int argc, char **argv)
{
	struct profile *p = reconstruct(c, argc, argv);
	if (!p)
		return 1;
	int rc = profile_write_folded(p, stdout, c->metric, c->annotate);
	profile_free(p);
	return rc < 0 || fflush(stdout) ? 1 : 0;
}

static double ipc(uint64_t insns, uint64_t cycles)
{
	return cycles ? (double)insns / (double)cycles : 0.0;
}

static json_t *stats_json(const struct profile_stats *s)
{
	return json_pack("{s:s?, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
			 "s:I, s:I, s:f, s:b}",
			 "format", s->format, "harts", (json_int_t)s->harts, "instructions",
			 (json_int_t)s->instructions, "cycles", (json_int_t)s->cycles, "events",
			 (json_int_t)s->events, "calls", (json_int_t)s->calls, "returns",
			 (json_int_t)s->returns, "tail_calls", (json_int_t)s->tail_calls, "traps",
			 (json_int_t)s->traps, "trap_returns", (json_int_t)s->trap_returns, "swaps",
			 (json_int_t)s->swaps, "repairs_unwind", (json_int_t)s->repairs_unwind,
			 "repairs_unknown", (json_int_t)s->repairs_unknown, "returns_above",
			 (json_int_t)s->returns_above, "unknown_pcs", (json_int_t)s->unknown_pcs,
			 "raw_bytes", (json_int_t)s->raw_bytes, "seconds", s->seconds, "partial",
			 s->partial);
}

static json_t *func_json(const struct profile *p, const struct profile_func *f)
{
	const struct profile_frame *fr = profile_frame(p, f->frame);
	return json_pack("{s:s, s:s?, s:s?, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:f}", "name",
			 fr->name, "binary", fr->binary, "file", fr->file, "line",
			 (json_int_t)fr->line, "addr", (json_int_t)fr->addr, "kind",
			 fr->kind == PROFILE_FRAME_KERNEL   ? "kernel"
			 : fr->kind == PROFILE_FRAME_USER   ? "user"
			 : fr->kind == PROFILE_FRAME_INLINE ? "inline"
							    : "marker",
			 "calls", (json_int_t)f->calls, "self_instructions",
			 (json_int_t)f->self_insns, "total_instructions",
			 (json_int_t)f->total_insns, "self_cycles", (json_int_t)f->self_cycles,
			 "total_cycles", (json_int_t)f->total_cycles, "ipc",
			 ipc(f->total_insns, f->total_cycles));
}

static int top_json(const struct profile *p, const struct profile_func *v, size_t n)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, func_json(p, &v[i]));
	json_t *root =
	    json_pack("{s:o, s:o}", "functions", arr, "stats", stats_json(profile_stats(p)));
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

static int cmd_top(struct cli *c, int argc, char **argv)
{
	struct profile *p = reconstruct(c, argc, argv);
	if (!p)
		return 1;
	struct profile_func *v;
	size_t n = profile_functions(p, c->metric, &v);
	int rc = 0;
	if (c->json)
		rc = top_json(p, v, n);
	else
		top_text(p, v, n);
	free(v);
	profile_free(p);
	return rc < 0 || fflush(stdout) ? 1 : 0;
}

static int cmd_stats(struct cli *c, int argc, char **argv)
{
	struct profile *p = reconstruct(c, argc, argv);
	if (!p)
		return 1;
	const struct profile_stats *s = profile_stats(p);
	json_t *j = stats_json(s);
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

static json_t *process_json(const struct profile *p, const struct profile_process *pr)
{
	json_t *execs = json_array(), *children = json_array();
	for (size_t e = 0; e < pr->nexecs; e++)
		json_array_append_new(execs, json_pack("{s:s, s:I}", "path", pr->execs[e].path,
						       "cycle", (json_int_t)pr->execs[e].when));
	for (size_t k = 0; k < profile_nprocesses(p); k++) {
		const struct profile_process *c = profile_process(p, k);
		if (pr->pid >= 0 && c->ppid == pr->pid)
			json_array_append_new(children, json_integer(c->pid));
	}
	return json_pack("{s:I, s:I, s:s, s:o, s:I, s:I, s:{s:I, s:I}, s:{s:I, s:I}, s:o}", "pid",
			 (json_int_t)pr->pid, "ppid", (json_int_t)pr->ppid, "comm", pr->comm,
			 "exec", execs, "start_cycle", (json_int_t)pr->start, "end_cycle",
			 (json_int_t)pr->end, "instructions", "user", (json_int_t)pr->insns_user,
			 "kernel", (json_int_t)pr->insns_kernel, "cycles", "user",
			 (json_int_t)pr->cycles_user, "kernel", (json_int_t)pr->cycles_kernel,
			 "children", children);
}

static int cmd_processes(struct cli *c, int argc, char **argv)
{
	struct profile *p = reconstruct(c, argc, argv);
	if (!p)
		return 1;
	json_t *arr = json_array();
	for (size_t k = 0; k < profile_nprocesses(p); k++)
		json_array_append_new(arr, process_json(p, profile_process(p, k)));
	json_t *root =
	    json_pack("{s:o, s:I, s:s?}", "processes", arr, "switches",
		      (json_int_t)profile_switches(p), "source", profile_process_source(p));
	int rc = json_dumpf(root, stdout, JSON_INDENT(1)) < 0 ? -EIO : 0;
	putchar('\n');
	json_decref(root);
	profile_free(p);
	return rc < 0 || fflush(stdout) ? 1 : 0;
}

static int convert(const char *in, const struct cli *c, struct oob_err *err)
{
	struct trace_reader *r = trace_open(in, &c->ro.trace, err);
	if (!r)
		return err->code;
	struct trace_write_opts wo = {.format = c->to, .fields = trace_reader_fields(r)};
	struct trace_writer *w = trace_writer_open(c->out, &wo, err);
	int rc = w ? 0 : err->code;
	const struct trace_batch *b;
	while (rc >= 0 && (rc = trace_next(r, &b, err)) > 0)
		rc = trace_writer_put(w, b, err);
	if (w && rc < 0)
		trace_writer_abort(w);
	else if (w)
		rc = trace_writer_close(w, err);
	trace_close(r);
	return rc;
}

static int cmd_convert(struct cli *c, int argc, char **argv)
{
	struct oob_err err = {0};
	if (!c->out || c->to == TRACE_FMT_AUTO || argc - optind != 1) {
		fputs("oobprof convert: needs --to FORMAT, -o OUT and one TRACE\n", stderr);
		return 2;
	}
	if (convert(argv[optind], c, &err) < 0) {
		fprintf(stderr, "oobprof: %s: %s\n", argv[optind], err.msg);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(struct cli *, int, char **);
	} cmds[] = {{"fold", cmd_fold},
		    {"top", cmd_top},
		    {"stats", cmd_stats},
		    {"processes", cmd_processes},
		    {"convert", cmd_convert}};
	struct cli c = {.ro.trace.format = TRACE_FMT_AUTO};
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "gotrace") == 0)
		return cli_gotrace(argc - 1, argv + 1);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[1], cmds[i].name) != 0)
			continue;
		int rc = parse_args(&c, argc, argv) < 0 ? 2 : cmds[i].fn(&c, argc, argv);
		free(c.elfs);
		free(c.maps);
		return rc;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "oobprof: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
