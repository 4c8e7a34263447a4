/*
 * oobprof: the command line face of the core (DESIGN.md 5). The forms below
 * are a contract used by the server, the tests and people's scripts:
 *
 *   oobprof fold    [options] TRACE...   folded stacks on stdout
 *   oobprof top     [options] TRACE...   per-function table (--json for JSON)
 *   oobprof stats   [options] TRACE...   counts and throughput
 *   oobprof convert --to oobt|tracerv-bin TRACE -o OUT
 *   oobprof export  --to speedscope|perfetto|pprof|folded [options] TRACE... -o OUT
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/export.h"
#include "cli_go.h"
#include "cli_impl.h"
#include "util/oob_err.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"
#include "profile/profile.h"
#include "recon/recon.h"
#include "timeline/timeline.h"
#include "timeline/timeline_json.h"
#include "trace/trace.h"
#include "trace/trace_write.h"

/* The --format line, its names from the format table, wrapped at 80
 * columns under the descriptions' column. */
static void usage_formats(FILE *f)
{
	char names[512], text[640];
	trace_format_list(names, sizeof(names), TRACE_FORMATS_READ, ", ");
	snprintf(text, sizeof(text), "trace format (%s); default: detect from content", names);
	int col = fprintf(f, "  --format F           ");
	for (char *w = strtok(text, " "); w; w = strtok(NULL, " ")) {
		if (col + 1 + (int)strlen(w) > 80)
			col = fprintf(f, "\n%23s", "");
		col += fprintf(f, " %s", w);
	}
	fputc('\n', f);
}

static void usage(FILE *f)
{
	fputs("usage: oobprof fold|top|stats|processes [options] TRACE...\n"
	      "       oobprof timeline [options] [--gotrace F [--go-clock HZ[:OFF]]] TRACE...\n"
	      "       oobprof convert --to oobt|tracerv-bin [--per-hart] TRACE -o OUT\n"
	      "       oobprof export --to speedscope|perfetto|pprof|folded [options] TRACE... -o "
	      "OUT\n"
	      "options:\n",
	      f);
	usage_formats(f);
	fputs("  --elf PATH[@BASE]     an ELF (program, library, vmlinux); BASE = run-time\n"
	      "                        address of its lowest segment (PIE, shared libraries)\n"
	      "  --map perf-PID.map    JIT symbol map\n"
	      "  --metric M            instructions (default), cycles or calls\n"
	      "  --annotate            fold: add _[k] to kernel frames\n"
	      "  --inline              add inlined functions as frames\n"
	      "  --json                top: JSON output\n"
	      "  --events F            sideband process events (JSON Lines)\n"
	      "  --tasks auto|satp     tell processes apart by sideband events, else the\n"
	      "                        kernel's own functions (auto), or by address space\n"
	      "                        (satp writes in the trace)\n"
	      "  --hart N              hart of a single-hart trace file (default 0)\n"
	      "  --lz4                 convert --to tracerv-bin: write LZ4 frames that\n"
	      "                        readers decompress in parallel\n"
	      "  --per-hart            convert: one file per hart, OUT-C0, OUT-C1 ... (as\n"
	      "                        FireSim names them); without cycles in TRACE, a\n"
	      "                        record's index in the whole trace is its cycle\n"
	      "  --tracerv-width N     TracerV binary: retire width (default: detect)\n"
	      "  --tracerv-words N     TracerV binary: 64-bit words per record\n"
	      "  --tracerv-valid-bit N TracerV binary: valid bit, 40 or 63\n"
	      "  --max-insns N         stop after N instructions\n"
	      "  --lz4-threads N       LZ4 input: decompress on N threads (frames that\n"
	      "                        declare their size, as oobprof convert writes)\n"
	      "  --max-depth N         keep at most N frames per stack (default 1048576;\n"
	      "                        deeper pushes are dropped, counted as repairs_depth)\n"
	      "  --window FROM:TO      fold, top, timeline: only [FROM, TO) of the trace's time\n"
	      "                        axis (cycles, else the record index; TO empty: the end)\n"
	      "timeline options (JSON of per-hart intervals and Go tracks):\n"
	      "  --min-duration D      merge intervals shorter than D (axis units)\n"
	      "  --tracks LIST         harts,goroutines,procs,threads,gc (default: all)\n"
	      "  --gotrace F           a Go execution trace of the same run\n"
	      "  --go-clock HZ[:OFF]   its clock: trace time units per second and the trace\n"
	      "                        time of Go tick 0 (default: fitted, see gotrace --align)\n"
	      "export options (OUT may be - for stdout):\n"
	      "  --clock-hz HZ         speedscope, perfetto: cycles per second; times in ns\n"
	      "  --min-duration NS     perfetto: leave out frames shorter than NS ns (without\n"
	      "                        --clock-hz, 1 ns stands for one cycle or instruction)\n"
	      "  --max-events N        speedscope: sampled form above N stack events\n"
	      "                        (default 5000000; 0: no bound)\n"
	      "  --sampled             speedscope: sampled form (weights per stack)\n"
	      "  --name NAME           the profile's name (default: the trace's file name)\n"
	      "  --gotrace F           perfetto: add a Go execution trace of the run (its clock:\n"
	      "                        --go-clock, or fitted as for `oobprof timeline`)\n"
	      "  --metric M            speedscope, perfetto: time in cycles (default when the\n"
	      "                        trace has them) or instructions; folded: the weight;\n"
	      "                        pprof: the default sample type\n"
	      "  --log-level L         error, warn (default), info, debug\n"
	      "  -o OUT                fold, top, stats, processes, timeline: write to OUT\n"
	      "                        instead of stdout. Every OUT that is a file is\n"
	      "                        replaced whole on success and left as it was on\n"
	      "                        failure; -, a pipe or a device is written through\n",
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
	OPT_MAX_DEPTH,
	OPT_TO,
	OPT_LOG,
	OPT_CLOCK,
	OPT_MIN_DUR,
	OPT_MAX_EVENTS,
	OPT_SAMPLED,
	OPT_NAME,
	OPT_WINDOW,
	OPT_TRACKS,
	OPT_GOTRACE,
	OPT_GOCLOCK,
	OPT_TASKS,
	OPT_PER_HART,
	OPT_LZ4_THREADS,
	OPT_LZ4,
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
    {"lz4-threads", required_argument, NULL, OPT_LZ4_THREADS},
    {"lz4", no_argument, NULL, OPT_LZ4},
    {"max-depth", required_argument, NULL, OPT_MAX_DEPTH},
    {"to", required_argument, NULL, OPT_TO},
    {"log-level", required_argument, NULL, OPT_LOG},
    {"clock-hz", required_argument, NULL, OPT_CLOCK},
    {"min-duration", required_argument, NULL, OPT_MIN_DUR},
    {"max-events", required_argument, NULL, OPT_MAX_EVENTS},
    {"sampled", no_argument, NULL, OPT_SAMPLED},
    {"name", required_argument, NULL, OPT_NAME},
    {"window", required_argument, NULL, OPT_WINDOW},
    {"tracks", required_argument, NULL, OPT_TRACKS},
    {"gotrace", required_argument, NULL, OPT_GOTRACE},
    {"go-clock", required_argument, NULL, OPT_GOCLOCK},
    {"tasks", required_argument, NULL, OPT_TASKS},
    {"per-hart", no_argument, NULL, OPT_PER_HART},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int cli_bad_value(const char *opt, const char *val)
{
	fprintf(stderr, "oobprof: %s: bad value '%s'\n", opt, val);
	return -EINVAL;
}

static int parse_number_opt(const char *name, const char *val, unsigned max, unsigned *out)
{
	uint64_t v;
	if (parse_u64(val, &v) < 0 || v > max)
		return cli_bad_value(name, val);
	*out = (unsigned)v;
	return 0;
}

/* "A:B" into two numbers (B may be empty: 0); "HZ[:OFF]" likewise. */
static int parse_pair(const char *opt, char *val, int (*num)(const char *, void *), void *a,
		      void *b)
{
	char *colon = strchr(val, ':');
	if (colon)
		*colon = '\0';
	int bad = num(val, a) < 0 || (colon && colon[1] && num(colon + 1, b) < 0);
	if (colon)
		*colon = ':';
	return bad ? cli_bad_value(opt, val) : 0;
}

static int u64_num(const char *s, void *out)
{
	return parse_u64(s, out);
}

static int double_num(const char *s, void *out)
{
	char *end;
	*(double *)out = strtod(s, &end);
	return end == s || *end ? -EINVAL : 0;
}

static int parse_timeline_opt(struct cli *c, int opt, char *val)
{
	struct oob_err err = {0};
	switch (opt) {
	case OPT_WINDOW:
		c->windowed = 1;
		return parse_pair("--window", val, u64_num, &c->win.from, &c->win.to);
	case OPT_TRACKS:
		if (timeline_tracks_parse(val, &c->tracks, &err) < 0)
			fprintf(stderr, "oobprof: --tracks: %s\n", err.msg);
		return err.code;
	case OPT_GOTRACE:
		c->gotrace = val;
		return 0;
	default: /* OPT_GOCLOCK */
		c->have_go_clock = 1;
		return parse_pair("--go-clock", val, double_num, &c->go_hz, &c->go_offset);
	}
}

static int parse_opt(struct cli *c, int opt, char *val)
{
	struct trace_opts *t = &c->ro.trace;
	unsigned u;
	enum oob_log_level lvl;
	switch (opt) {
	case OPT_FORMAT:
		return trace_format_parse(val, &t->format) < 0 ? cli_bad_value("--format", val) : 0;
	case OPT_ELF:
		return add_elf(c, val);
	case OPT_MAP:
		oob_xgrow((void **)&c->maps, &c->cap_maps, c->nmaps + 1, sizeof(*c->maps));
		c->maps[c->nmaps++] = val;
		return 0;
	case OPT_METRIC:
		c->metric_set = 1;
		return profile_metric_parse(val, &c->metric) < 0 ? cli_bad_value("--metric", val)
								 : 0;
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
	case OPT_TASKS:
		return recon_tasks_parse(val, &c->ro.tasks) < 0 ? cli_bad_value("--tasks", val) : 0;
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
	case OPT_LZ4:
		c->lz4 = 1;
		return 0;
	case OPT_LZ4_THREADS:
		return parse_number_opt("--lz4-threads", val, 64, &t->in.threads);
	case OPT_MAX:
		return parse_u64(val, &c->ro.max_insns) < 0 ? cli_bad_value("--max-insns", val) : 0;
	case OPT_MAX_DEPTH:
		return parse_number_opt("--max-depth", val, UINT32_MAX, &c->ro.max_depth) < 0 ||
			       !c->ro.max_depth
			   ? cli_bad_value("--max-depth", val)
			   : 0;
	case OPT_TO:
		c->to = val;
		return 0;
	case OPT_PER_HART:
		c->per_hart = 1;
		return 0;
	case OPT_CLOCK:
		return parse_u64(val, &c->ex.clock_hz) < 0 || !c->ex.clock_hz
			   ? cli_bad_value("--clock-hz", val)
			   : 0;
	case OPT_MIN_DUR:
		return parse_u64(val, &c->ex.min_duration) < 0
			   ? cli_bad_value("--min-duration", val)
			   : 0;
	case OPT_MAX_EVENTS:
		return parse_u64(val, &c->max_events) < 0 ? cli_bad_value("--max-events", val) : 0;
	case OPT_SAMPLED:
		c->ex.sampled = 1;
		return 0;
	case OPT_NAME:
		c->name = val;
		return 0;
	case OPT_WINDOW:
	case OPT_TRACKS:
	case OPT_GOTRACE:
	case OPT_GOCLOCK:
		return parse_timeline_opt(c, opt, val);
	case OPT_LOG:
		if (oob_log_parse_level(val, &lvl) < 0)
			return cli_bad_value("--log-level", val);
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

/* The one output of -o (see cli_go.h): stdout is moved onto it while the
 * command prints, and moved back by cli_out_end. */
static struct {
	struct out_file f;
	int saved; /* the real stdout, or -1 */
	int open;
} cli_out = {.saved = -1};

int cli_out_begin(const char *path)
{
	struct oob_err err = {0};
	if (!path || cli_out.open)
		return 0;
	if (out_file_open(&cli_out.f, path, &err) < 0) {
		fprintf(stderr, "oobprof: %s\n", err.msg);
		return -1;
	}
	fflush(stdout);
	if ((cli_out.saved = dup(STDOUT_FILENO)) < 0 || dup2(cli_out.f.fd, STDOUT_FILENO) < 0) {
		fprintf(stderr, "oobprof: %s: %s\n", path, strerror(errno));
		if (cli_out.saved >= 0)
			close(cli_out.saved);
		cli_out.saved = -1;
		out_file_abort(&cli_out.f);
		return -1;
	}
	cli_out.open = 1;
	return 0;
}

int cli_out_end(int rc)
{
	struct oob_err err = {0};
	if (!cli_out.open)
		return rc;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "oobprof: writing %s: %s\n", cli_out.f.path, strerror(errno));
		rc = rc ? rc : 1;
	}
	clearerr(stdout);
	dup2(cli_out.saved, STDOUT_FILENO);
	close(cli_out.saved);
	cli_out.saved = -1;
	cli_out.open = 0;
	if (rc) {
		out_file_abort(&cli_out.f);
	} else if (out_file_commit(&cli_out.f, &err) < 0) {
		fprintf(stderr, "oobprof: %s\n", err.msg);
		rc = 1;
	}
	return rc;
}
int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(struct cli *, int, char **);
	} cmds[] = {{"fold", cli_cmd_fold},	   {"top", cli_cmd_top},
		    {"stats", cli_cmd_stats},	   {"processes", cli_cmd_processes},
		    {"convert", cli_cmd_convert},  {"export", cli_cmd_export},
		    {"timeline", cli_cmd_timeline}};
	struct cli c = {.ro.trace.format = TRACE_FMT_AUTO, .max_events = 5000000};
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "gotrace") == 0)
		return cli_out_end(cli_gotrace(argc - 1, argv + 1));
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[1], cmds[i].name) != 0)
			continue;
		int rc =
		    parse_args(&c, argc, argv) < 0 ? 2 : cli_out_end(cmds[i].fn(&c, argc, argv));
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
