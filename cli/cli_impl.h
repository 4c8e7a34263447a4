/*
 * cli internals shared by cli.c (usage, options, -o, dispatch) and
 * cli_cmds.c (the commands over a reconstruction). Not a public header.
 */
#ifndef OOB_CLI_IMPL_H
#define OOB_CLI_IMPL_H

#include <stdint.h>

#include "export/export.h"
#include "profile/profile.h"
#include "recon/recon.h"
#include "sample/sampler.h"
#include "timeline/timeline.h"

struct cli {
	struct recon_opts ro;
	struct recon_elf *elfs;
	size_t nelfs, cap_elfs;
	const char **maps;
	size_t nmaps, cap_maps;
	enum profile_metric metric;
	int metric_set;
	int annotate, json;
	int annot_disasm; /* annotate --disasm */
	const char *to;	  /* convert: a trace format; export: an export format */
	const char *out;
	int per_hart;	     /* convert: OUT-C<n> for each hart n */
	int lz4;	     /* convert --to tracerv-bin: LZ4 frames (oobt always has them) */
	unsigned sync_every; /* convert --to oobt: records between sync points, 0 = default */
	struct export_opts ex;
	uint64_t max_events;
	const char *name;
	/* fold, top: a time window; timeline: the window and its tracks */
	int windowed;
	struct timeline_opts win;
	uint64_t index_every; /* records between the event index's checkpoints */
	int no_seek;	      /* windows replay the whole log (tests compare) */
	unsigned tracks;
	const char *gotrace;
	int have_go_clock;
	double go_hz, go_offset;
	uint64_t top_n; /* top -n: 0 = all */
	unsigned width; /* flamegraph --width: 0 = the default */

	struct sampler_opts so; /* sample: the sampler's options */
	int unwind_set;		/* sample: --unwind given (else by --elf) */
	const char *task_name;	/* offcpu --pid, path --task: a pid or a task's name */
	const char *at_csv;	/* stacks-at --at: "N,N,..." */
	const char *at_path;	/* stacks-at --at-file */
};

/* Prints "oobprof: OPT: bad value 'VAL'" on stderr; returns -EINVAL. */
int cli_bad_value(const char *opt, const char *val);

/* Reconstructs (or reads, for sampled files) argv[optind..argc) with c's
 * options; prints warnings and walk failures on stderr, errors too (NULL). */
struct profile *cli_reconstruct(struct cli *c, int argc, char **argv);

/* The commands of main's table: c holds the parsed options, argv[optind..]
 * the traces. They return the exit status (0, 1 failure, 2 usage). */
int cli_cmd_fold(struct cli *c, int argc, char **argv);
int cli_cmd_top(struct cli *c, int argc, char **argv);
int cli_cmd_stats(struct cli *c, int argc, char **argv);
int cli_cmd_processes(struct cli *c, int argc, char **argv);
int cli_cmd_convert(struct cli *c, int argc, char **argv);
int cli_cmd_export(struct cli *c, int argc, char **argv);
int cli_cmd_timeline(struct cli *c, int argc, char **argv);
int cli_cmd_flamegraph(struct cli *c, int argc, char **argv);
int cli_cmd_diff(struct cli *c, int argc, char **argv);
int cli_cmd_sample(struct cli *c, int argc, char **argv);

/* sample's own options (OPT_HZ .. OPT_TIMEOUT) into c->so. */
int cli_sample_opt(struct cli *c, int opt, const char *val);
int cli_cmd_offcpu(struct cli *c, int argc, char **argv);
int cli_cmd_path(struct cli *c, int argc, char **argv);
int cli_cmd_stacks_at(struct cli *c, int argc, char **argv);
int cli_cmd_annotate(struct cli *c, int argc, char **argv);

#endif
