/*
 * result: a finished (or partial) profile as the server keeps it, so that
 * the API can answer without re-running the reconstruction and results
 * survive restarts.
 *
 * A job turns the struct profile that recon_run returned into a compact JSON
 * document (result_json_from_profile) and stores it as
 * DATA/results/<job>/profile.json:
 *
 *   {"format": "oobprof-profile", "version": 1, "partial": false,
 *    "has_cycles": true,
 *    "stats": {"format": "spike", "harts": 1, "instructions": 123, ...},
 *    "frames": [[name, binary|null, file|null, line, kind, "0xaddr"], ...],
 *    "nodes":  [[parent, frame, calls, self_insns, self_cycles], ...],
 *    "processes": {as GET .../processes, each process with its root "frame"},
 *    "pcs": per-pc counts when the job asked for them (options.pcs; the
 *           shape of profile_pcs_json)}
 *
 * Node 0 is the root (parent and frame -1); parents come before children;
 * totals are not stored but summed again at load, so a file cannot carry
 * inconsistent totals. kind is enum profile_frame_kind; addr is a hex string
 * because kernel addresses do not fit a JSON integer.
 *
 * The loaded form reuses profile.h's node, frame and stats structs, and its
 * folded-stack and per-function views follow profile_write_folded and
 * profile_functions exactly, so that the server and the CLI agree.
 *
 * Beside it, the job's other result files (result_path names them all):
 * folded.txt (folded stacks in the job's metric), events.evl (the stack
 * events of the run, core/recon/evlog.h, whose frame ids are this profile's)
 * and go.json (the Go clock model of a job with a Go trace).
 *
 * A struct result is immutable once loaded: any number of threads may read it.
 */
#ifndef OOB_RESULT_H
#define OOB_RESULT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "util/oob_err.h"
#include "profile/profile.h"

#define RESULT_VERSION 1

/* Stack events a job keeps at most (about 6 bytes each on disk): a longer
 * run keeps a capped log, which the time-keeping views refuse (evlog.h). */
#define RESULT_MAX_EVENTS 200000000ull

/* The largest result file (profile JSON, folded stacks) a job writes: a
 * hostile trace of 1 KB can ask for gigabytes of folded text (deep stacks
 * times many leaves); past this the job fails saying so. */
#define RESULT_MAX_BYTES (1ull << 30)

/* The files of a job's result, under DATA/results/<job>/. */
enum result_file {
	RESULT_DIR,	/* the folder itself */
	RESULT_PROFILE, /* profile.json */
	RESULT_FOLDED,	/* folded.txt */
	RESULT_EVENTS,	/* events.evl */
	RESULT_GO,	/* go.json */
	RESULT_INDEX,	/* events.idx: the index of events.evl (evidx.h); jobs of
			   older oobprofds have none and are replayed whole */
	RESULT_LOD,	/* events.lod: the timeline's summaries (timeline_lod.h);
			   without it coarse timelines replay the log */
};

/* The path of job's file f relative to the data folder ("results/<job>/...")
 * into buf; the one place those paths are spelled. */
void result_path(int64_t job, enum result_file f, char *buf, size_t n);

struct result;

/* JSON text of p (malloc'd, NUL-terminated, caller frees); partial is stored
 * as the document's "partial" flag, whatever p's stats say. */
char *result_json_from_profile(const struct profile *p, int partial, size_t *len);

/* Parses a document made by result_json_from_profile. -EINVAL naming what is
 * malformed (a node whose parent follows it, a frame index out of range...).
 * The result owns all its strings; release with result_free. */
struct result *result_parse(const char *text, size_t n, struct oob_err *err);
/* Reads and parses a file; -ENOENT if it does not exist. */
struct result *result_load(const char *path, struct oob_err *err);
void result_free(struct result *r);

size_t result_nnodes(const struct result *r);
const struct profile_node *result_node(const struct result *r, uint32_t id);
size_t result_nframes(const struct result *r);
const struct profile_frame *result_frame(const struct result *r, uint32_t id);
const struct profile_stats *result_stats(const struct result *r);
int result_has_cycles(const struct result *r);
int result_partial(const struct result *r);
/* The loaded profile (borrowed, valid while r lives). */
const struct profile *result_profile(const struct result *r);

/* As profile_write_folded. Returns 0 or -EIO. */
int result_write_folded(const struct result *r, FILE *f, enum profile_metric m, int annotate);
/* As profile_functions: *out malloc'd, sorted by self weight of m descending. */
size_t result_functions(const struct result *r, enum profile_metric m, struct profile_func **out);

#endif
