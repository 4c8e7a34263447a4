/*
 * jobspec: the request that defines a job, parsed and checked in one place
 * for the API (which accepts it) and the worker (which runs it).
 *
 *   {"trace": 3,                      or "traces": [3, 4]: one file per hart
 *    "binaries": [1, {"id": 2, "base": "0x4000000000"}],
 *    "events": 5, "go_trace": 6, "pycode": 7,
 *    "options": {"format": "auto", "metric": "instructions", "inline": false,
 *                "tracerv": {"width": 1, "words": 2, "valid_bit": 63},
 *                "hart": 0, "max_insns": 0, "max_depth": 1048576, "tasks": "auto",
 *                "go_clock": {"hz": 1e9, "offset": 0}}}
 *
 * "go_trace" overlays a Go execution trace on the timeline; its clock is
 * fitted against the instruction trace unless "go_clock" gives it (trace
 * time units per second, and the trace time of Go tick 0). "pycode" adds the
 * frames of a CPython program (recon_opts.pycode) from its code map, an
 * upload of format pycode. "tasks": "satp" tells processes apart by address
 * space (recon.h).
 *
 * "binaries" items are ids or {"id", "base"}: base is the run-time address of
 * the binary's lowest PT_LOAD segment (integer or "0x..." string; absent or
 * null = its link address). "traces" are single-hart files of one run
 * (FireSim's TRACEFILE-C<n>), read in time order; the worker numbers the
 * harts by the traces' names (trace_merge_hart). Everything but "trace" or
 * "traces" is optional. Unknown keys are refused, so that a typo does not
 * silently change a job.
 *
 * Pure functions, thread-safe.
 */
#ifndef OOB_JOBSPEC_H
#define OOB_JOBSPEC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "catalog.h"
#include "util/oob_err.h"
#include "profile/profile.h"
#include "recon/recon.h"
#include "trace/trace.h"

#define JOBSPEC_MAX_BINARIES 64
#define JOBSPEC_MAX_TRACES   64

struct jobspec {
	int64_t trace; /* the first of traces */
	int64_t traces[JOBSPEC_MAX_TRACES];
	size_t ntraces;
	int64_t events;	   /* 0: none */
	int64_t go_trace;  /* a Go execution trace of the same run; 0: none */
	int64_t pycode;	   /* a CPython code map (recon_opts.pycode); 0: none */
	int have_go_clock; /* options.go_clock given: */
	double go_hz, go_offset;
	size_t nbins;
	struct catalog_job_binary bins[JOBSPEC_MAX_BINARIES];
	enum trace_format format;
	enum profile_metric metric;
	int inline_frames;
	int pcs; /* options.pcs: count per pc (annotate, pprof at the exact pc) */
	struct trace_tracerv_opts tracerv;
	unsigned hart;
	uint64_t max_insns;
	uint32_t max_depth; /* 0: recon's default */
	enum recon_tasks tasks;
};

/* Parses a request. -EINVAL naming the offending key. */
int jobspec_parse(const json_t *j, struct jobspec *out, struct oob_err *err);
/* Same from text. */
int jobspec_parse_text(const char *text, size_t n, struct jobspec *out, struct oob_err *err);
/* The reconstruction options the spec sets (format, TracerV layout, hart,
 * inline, max_insns, tasks); the rest of *o is zeroed. */
void jobspec_recon_opts(const struct jobspec *s, struct recon_opts *o);
/* The normalized form (every key present), new reference. */
json_t *jobspec_to_json(const struct jobspec *s);

#endif
