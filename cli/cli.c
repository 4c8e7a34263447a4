/*
 * oobprof: the command line face of the core (DESIGN.md 5). The forms below
 * are a contract used by the server, the tests and people's scripts:
 *
 *   oobprof fold    [options] TRACE...   folded stacks on stdout
 *   oobprof top     [options] TRACE...   per-function table (--json for JSON)
 *   oobprof stats   [options] TRACE...   counts and throughput
 *   oobprof annotate FUNC [--source|--disasm] [options] TRACE...
 *                                        exact counts per line or instruction
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
#include "cli_opts.h"
#include "util/oob_err.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"
#include "profile/profile.h"
#include "recon/recon.h"
#include "timeline/timeline.h"
#include "timeline/timeline_json.h"
#include "trace/trace.h"
#include "trace/trace_write.h"

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
		if (parse_pair("--window", val, u64_num, &c->win.from, &c->win.to) < 0)
			return -EINVAL;
		if (c->win.to && c->win.to <= c->win.from) {
			fprintf(stderr,
				"oobprof: --window %s: TO must be above FROM (or empty: the "
				"end)\n",
				val);
			return -EINVAL;
		}
		return 0;
	case OPT_INDEX_EVERY:
		return parse_u64(val, &c->index_every) < 0 || !c->index_every
			   ? cli_bad_value("--index-every", val)
			   : 0;
	case OPT_NO_SEEK:
		c->no_seek = 1;
		return 0;
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

static int parse_opt(struct cli *c, unsigned bit, int opt, char *val)
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
	case OPT_PYCODE:
		c->ro.pycode = val;
		return 0;
	case OPT_JSON:
		c->json = 1;
		return 0;
	case OPT_PCS:
		c->ro.pcs = 1;
		return 0;
	case OPT_SOURCE:
	case OPT_DISASM:
		c->annot_disasm = opt == OPT_DISASM;
		return 0;
	case OPT_EVENTS:
		c->ro.events_path = val;
		return 0;
	case OPT_TASKS:
		return recon_tasks_parse(val, &c->ro.tasks) < 0 ? cli_bad_value("--tasks", val) : 0;
	case OPT_NONLOCAL:
		return recon_nonlocal_parse(val, &c->ro.nonlocal) < 0
			   ? cli_bad_value("--nonlocal", val)
			   : 0;
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
	case OPT_SYNC_EVERY:
		return parse_number_opt("--sync-every", val, 1u << 30, &c->sync_every);
	case OPT_LZ4_THREADS:
		return parse_number_opt("--lz4-threads", val, 64, &t->in.threads);
	case OPT_THREADS:
		if (!strcmp(val, "auto")) {
			c->ro.threads = RECON_THREADS_AUTO;
			return 0;
		}
		return parse_number_opt("--threads", val, 256, &c->ro.threads) < 0 || !c->ro.threads
			   ? cli_bad_value("--threads", val)
			   : 0;
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
	case OPT_PID: /* sample: the emulator's; offcpu: a guest task's */
		if (bit == CLI_SAMPLE)
			return cli_sample_opt(c, opt, val);
		/* fall through */
	case OPT_TASK: /* a pid, or the name of a task without one ("waits [task 21]") */
		c->task_name = val;
		return 0;
	case OPT_WINDOW:
	case OPT_INDEX_EVERY:
	case OPT_NO_SEEK:
	case OPT_TRACKS:
	case OPT_GOTRACE:
	case OPT_GOCLOCK:
		return parse_timeline_opt(c, opt, val);
	case OPT_HZ:
	case OPT_DURATION:
	case OPT_MAX_SAMPLES:
	case OPT_UNWIND:
	case OPT_INSTRET:
	case OPT_ONE_THREAD:
	case OPT_TIMEOUT:
		return cli_sample_opt(c, opt, val);
	case OPT_AT:
		c->at_csv = val;
		return 0;
	case OPT_AT_FILE:
		c->at_path = val;
		return 0;
	case OPT_LOG:
		if (oob_log_parse_level(val, &lvl) < 0)
			return cli_bad_value("--log-level", val);
		oob_log_set_level(lvl);
		return 0;
	case 'o':
		c->out = val;
		return 0;
	case 'n':
		return parse_u64(val, &c->top_n) < 0 || !c->top_n ? cli_bad_value("-n", val) : 0;
	default: /* OPT_WIDTH */
		return parse_number_opt("--width", val, 10000000, &c->width) < 0 || c->width < 100
			   ? cli_bad_value("--width", val)
			   : 0;
	}
}

/* One line and a hint for an option that is unknown or not this command's. */
static int refuse_opt(const char *cmd, const char *what, const char *opt)
{
	fprintf(stderr, "oobprof %s: %s '%s' ('oobprof %s --help' lists the options)\n", cmd, what,
		opt, cmd);
	return -EINVAL;
}

/* 0 when the command may run, 1 after --help, -EINVAL on a usage error. */
static int parse_args(struct cli *c, int argc, char **argv)
{
	const char *cmd = argv[1];
	unsigned bit = cli_cmd_bit(cmd);
	int opt;
	optind = 2; /* argv[1] is the command */
	opterr = 0; /* our own one-line messages */
	while ((opt = getopt_long(argc, argv, ":o:hn:", cli_long_opts(), NULL)) != -1) {
		if (opt == '?')
			return refuse_opt(cmd, "unknown option", argv[optind - 1]);
		if (opt == ':')
			return refuse_opt(cmd, "a value is missing after", argv[optind - 1]);
		if (opt == 'h') {
			cli_usage(stdout, cmd);
			return 1;
		}
		if (!cli_opt_takes(bit, opt))
			return refuse_opt(
			    cmd, "no such option for this command:", cli_opt_spelling(opt));
		if (parse_opt(c, bit, opt, optarg) < 0)
			return -EINVAL;
	}
	if (optind >= argc) {
		fprintf(stderr, "oobprof %s: no %s given ('oobprof %s --help' for usage)\n", cmd,
			bit == CLI_SAMPLE ? "target" : "trace", cmd);
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
	} cmds[] = {{"fold", cli_cmd_fold},	      {"top", cli_cmd_top},
		    {"stats", cli_cmd_stats},	      {"processes", cli_cmd_processes},
		    {"convert", cli_cmd_convert},     {"export", cli_cmd_export},
		    {"timeline", cli_cmd_timeline},   {"flamegraph", cli_cmd_flamegraph},
		    {"diff", cli_cmd_diff},	      {"sample", cli_cmd_sample},
		    {"offcpu", cli_cmd_offcpu},	      {"path", cli_cmd_path},
		    {"stacks-at", cli_cmd_stacks_at}, {"annotate", cli_cmd_annotate}};
	struct cli c = {.ro.trace.format = TRACE_FMT_AUTO,
			.ro.threads = RECON_THREADS_AUTO,
			.max_events = 5000000};
	if (argc < 2) {
		cli_usage(stderr, NULL);
		return 2;
	}
	if (strcmp(argv[1], "gotrace") == 0)
		return cli_out_end(cli_gotrace(argc - 1, argv + 1));
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[1], cmds[i].name) != 0)
			continue;
		int rc = parse_args(&c, argc, argv);
		rc = rc < 0 ? 2 : rc > 0 ? 0 : cli_out_end(cmds[i].fn(&c, argc, argv));
		free(c.elfs);
		free(c.maps);
		return rc;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		cli_usage(stdout, argc > 2 ? argv[2] : NULL);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("oobprof %s\n", OOB_VERSION);
		return 0;
	}
	fprintf(stderr, "oobprof: unknown command '%s' ('oobprof --help' lists them)\n", argv[1]);
	return 2;
}
