/*
 * timeline_go: puts a Go execution trace on a run's time axis, the one step
 * the CLI (`oobprof timeline --gotrace`) and the server's jobs ("go_trace")
 * share. The clock is given (trace time units per second and the trace time
 * of Go tick 0) or fitted by goclock_align against the instruction trace,
 * with the first of the run's ELFs that holds the runtime's trace-event
 * function.
 *
 * The outcome is described by a JSON object, stored with a job's results:
 *   {"ok": true, "source": "given" | "fit", "a", "b", "x0", "axis",
 *    "anchors", "rms", "max_abs", "tolerance", "func", "go_events", "entries"}
 * or {"ok": false, "source", "error": "..."} when the fit is refused.
 */
#ifndef OOB_TIMELINE_GO_H
#define OOB_TIMELINE_GO_H

#include <jansson.h>

#include "go/goclock.h"
#include "go/gotrace.h"
#include "util/oob_err.h"
#include "recon/recon.h"

/* The Go side of a timeline or an export: a parsed trace and the model that
 * maps it. clock_json (borrowed) describes the model (the object below). */
struct timeline_go {
	const struct gotrace *trace;
	struct goclock clock;
	const json_t *clock_json;
};

/* Trace time of a Go timestamp under g's model, rounded, 0 below 0. */
uint64_t timeline_go_time(const struct timeline_go *g, uint64_t ticks);

struct timeline_go_req {
	struct goclock_traces insn; /* the instruction trace of the run */
	const struct recon_elf *elfs;
	size_t nelfs;
	int have_hz; /* a given clock: */
	double hz, offset;
};

/*
 * Maps gt: fills *clock and returns the description (new reference) in
 * *desc. Returns 0 when the model holds; otherwise -EINVAL (the fit is
 * refused, or the given clock is not valid), -ENOENT (no ELF with the
 * function) or the instruction trace's read errors, with *desc saying why
 * ("ok": false, "error"; a refused fit keeps its figures: how far off).
 */
int timeline_go_clock(const struct gotrace *gt, const struct timeline_go_req *q,
		      struct goclock *clock, json_t **desc, struct oob_err *err);

/* Reads a description back into a clock; -EINVAL if it is not "ok" (err
 * carries its "error") or malformed. */
int timeline_go_clock_load(const json_t *desc, struct goclock *clock, struct oob_err *err);

#endif
