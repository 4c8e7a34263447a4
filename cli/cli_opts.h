/*
 * cli_opts: the table of oobprof's commands and options, the one place both
 * the parser (getopt_long) and the help texts (oobprof --help, oobprof CMD
 * --help) are made from, so that they cannot disagree. Each option row says
 * which commands take it; an option another command takes is refused with
 * a one-line hint rather than silently ignored.
 */
#ifndef OOB_CLI_OPTS_H
#define OOB_CLI_OPTS_H

#include <getopt.h>
#include <stdio.h>

/* The commands, as bits of an option row's mask. */
enum cli_cmd_bit {
	CLI_FOLD = 1u << 0,
	CLI_TOP = 1u << 1,
	CLI_STATS = 1u << 2,
	CLI_PROCESSES = 1u << 3,
	CLI_TIMELINE = 1u << 4,
	CLI_CONVERT = 1u << 5,
	CLI_EXPORT = 1u << 6,
	CLI_FLAMEGRAPH = 1u << 7,
	CLI_DIFF = 1u << 8,
	CLI_SAMPLE = 1u << 9,
	CLI_OFFCPU = 1u << 10,
	CLI_PATH = 1u << 11,
	CLI_STACKS_AT = 1u << 12,
	CLI_ANNOTATE = 1u << 13,
};

/* Every command that reconstructs stacks from traces. */
#define CLI_RECON                                                                                  \
	(CLI_FOLD | CLI_TOP | CLI_STATS | CLI_PROCESSES | CLI_TIMELINE | CLI_EXPORT |              \
	 CLI_FLAMEGRAPH | CLI_DIFF | CLI_OFFCPU | CLI_PATH | CLI_STACKS_AT | CLI_ANNOTATE)
#define CLI_ALL (CLI_RECON | CLI_CONVERT)

/* Option ids past the short options' characters. */
enum cli_opt_id {
	OPT_FORMAT = 256,
	OPT_ELF,
	OPT_MAP,
	OPT_METRIC,
	OPT_ANNOTATE,
	OPT_INLINE,
	OPT_PYCODE,
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
	OPT_PROGRESS,
	OPT_WIDTH,
	OPT_NONLOCAL,
	OPT_INDEX_EVERY,
	OPT_NO_SEEK,
	OPT_LZ4,
	OPT_SYNC_EVERY,
	OPT_LZ4_THREADS,
	OPT_HZ,
	OPT_DURATION,
	OPT_MAX_SAMPLES,
	OPT_UNWIND,
	OPT_INSTRET,
	OPT_ONE_THREAD,
	OPT_TIMEOUT,
	OPT_PID,
	OPT_TASK,
	OPT_THREADS,
	OPT_AT,
	OPT_AT_FILE,
	OPT_SOURCE,
	OPT_PCS,
	OPT_DISASM,
};

/* The command named name: its bit, or 0 for none. */
unsigned cli_cmd_bit(const char *name);

/* getopt_long's table, built once from the rows (static storage). */
const struct option *cli_long_opts(void);

/* Whether the command (bit) takes the option id. */
int cli_opt_takes(unsigned cmd, int id);

/* The spelling of option id ("--window", "-n"), for messages. */
const char *cli_opt_spelling(int id);

/* The help of one command (name), or with name NULL the global one. */
void cli_usage(FILE *f, const char *name);

#endif
