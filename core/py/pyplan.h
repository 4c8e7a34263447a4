/*
 * pyplan: where Python frames start and end in a pc-only trace of CPython
 * 3.11 (docs/RECONSTRUCTION.md 17). A pass over the trace before the
 * reconstruction follows the eval loop's labels (frame starts, opcode
 * dispatches, exception unwinding), matches each frame's executed opcodes
 * against the code map (pycode.h), and decides which code object each frame
 * ran once the whole run is known. The result is a plan: at given records
 * (each one the dispatch of an opcode), pop so many Python frames and push
 * a named one; the reconstruction applies it (recon's py hooks).
 */
#ifndef OOB_PYPLAN_H
#define OOB_PYPLAN_H

#include <stdint.h>

#include "py/pycode.h"
#include "trace/trace.h"
#include "util/oob_err.h"

#define PYPLAN_NONE UINT32_MAX

/* The interpreter's places the plan follows, from its ELF. */
struct pyeval {
	uint64_t lo, hi;       /* _PyEval_EvalFrameDefault */
	uint64_t targets[256]; /* opcode_targets: the handler label of each opcode */
	uint64_t start_frame;  /* DWARF labels in the eval function */
	uint64_t error;	       /* an exception in the running frame (exception_unwind,
				  where the handler is looked up, has no pc in DWARF) */
	uint64_t exit_unwind;
};

/* 0, or a negative errno: -ENOENT when the ELF is no CPython 3.11 with
 * computed gotos and DWARF (err says what is missing). bias is added to
 * every address (where the ELF is loaded minus its link address). */
int pyeval_find(const char *elf, uint64_t bias, struct pyeval *out, struct oob_err *err);

struct pyplan_event {
	uint64_t seq;  /* record index on the plan's hart: an opcode dispatch */
	uint32_t npop; /* Python frames that ended since (inside the same eval call) */
	uint32_t name; /* the frame that starts here (an index of names), or PYPLAN_NONE */
};

struct pyplan_stats {
	uint64_t frames;       /* Python frames started (start_frame, generator throws) */
	uint64_t by_opcodes;   /* identified by their executed opcodes alone */
	uint64_t by_call_site; /* of several code objects with those opcodes, the one
				  the caller's call site names */
	uint64_t by_generator; /* a generator resumed: the one code object of the
				  candidates with a generator alive */
	uint64_t ambiguous;    /* still several code objects (named with all of them) */
	uint64_t unknown;      /* no code object of the map ran those opcodes */
	uint64_t throws;       /* frames entered by a throw into a generator */
	uint64_t dispatches;   /* opcode dispatches followed */
};

struct pyplan {
	unsigned hart;
	struct pyplan_event *ev;
	size_t nev;
	char **names;
	uint32_t nnames;
	struct pyplan_stats st;
};

/* Reads the trace files (one hart) and makes the plan. */
int pyplan_build(const char *const *traces, size_t ntraces, const struct trace_opts *topts,
		 const struct pyeval *ev, const struct pycode *map, struct pyplan **out,
		 struct oob_err *err);
void pyplan_free(struct pyplan *p);

/* The follower itself, fed records in order (tests feed it pcs). */
struct pyfollow;
struct pyfollow *pyfollow_new(const struct pyeval *ev, const struct pycode *map);
void pyfollow_pc(struct pyfollow *f, uint64_t seq, uint64_t pc);
/* Ends the run and decides every frame; the follower is freed. */
struct pyplan *pyfollow_finish(struct pyfollow *f);

#endif
