/*
 * gotrace_v2 internals shared by gotrace_v2.c (batches and generations),
 * gotrace_v2_events.c (tables and event decoding) and gotrace_v2_order.c
 * (the scheduler state machine that orders a generation). Not a public
 * header.
 */
#ifndef OOB_GOTRACE_V2_IMPL_H
#define OOB_GOTRACE_V2_IMPL_H

#include "go/gotrace_impl.h"

enum {
	V2_EVENT_BATCH = 1,
	V2_STACKS,
	V2_STACK,
	V2_STRINGS,
	V2_STRING,
	V2_CPU_SAMPLES,
	V2_CPU_SAMPLE,
	V2_FREQUENCY,
	V2_PROCS_CHANGE,
	V2_PROC_START,
	V2_PROC_STOP,
	V2_PROC_STEAL,
	V2_PROC_STATUS,
	V2_GO_CREATE,
	V2_GO_CREATE_SYSCALL,
	V2_GO_START,
	V2_GO_DESTROY,
	V2_GO_DESTROY_SYSCALL,
	V2_GO_STOP,
	V2_GO_BLOCK,
	V2_GO_UNBLOCK,
	V2_GO_SYSCALL_BEGIN,
	V2_GO_SYSCALL_END,
	V2_GO_SYSCALL_END_BLOCKED,
	V2_GO_STATUS,
	V2_STW_BEGIN,
	V2_STW_END,
	V2_GC_ACTIVE,
	V2_GC_BEGIN,
	V2_GC_END,
	V2_SWEEP_ACTIVE,
	V2_SWEEP_BEGIN,
	V2_SWEEP_END,
	V2_ASSIST_ACTIVE,
	V2_ASSIST_BEGIN,
	V2_ASSIST_END,
	V2_HEAP_ALLOC,
	V2_HEAP_GOAL,
	V2_GO_LABEL,
	V2_TASK_BEGIN,
	V2_TASK_END,
	V2_REGION_BEGIN,
	V2_REGION_END,
	V2_LOG,
	V2_GO_SWITCH,
	V2_GO_SWITCH_DESTROY,
	V2_GO_CREATE_BLOCKED,
	V2_GO_STATUS_STACK,
	V2_EXPERIMENTAL_BATCH,
	V2_SYNC,
	V2_CLOCK_SNAPSHOT,
	V2_END_OF_GENERATION,
	V2_COUNT
};

struct batch {
	uint64_t gen, m, time;
	size_t hdr, pay, len; /* header offset, payload offset and length */
};

struct cursor {
	uint64_t m;
	struct gotrace_vec idx; /* uint32 event indexes in file order */
	size_t pos;
};

struct v2 {
	struct gotrace *t;
	const uint8_t *p;
	size_t n;
	int ver;
	struct gotrace_vec batches; /* struct batch, the whole file */
	/* per generation */
	uint64_t gen;
	struct oob_map strs, stks; /* id -> index in strv / dense stack id */
	struct gotrace_vec strv;
	struct gotrace_vec cursors; /* struct cursor */
	struct oob_map curmap;	    /* M -> cursor index */
	struct gotrace_vec samples; /* uint32 event indexes */
	uint64_t freq;
	/* ordering state, across generations */
	uint64_t initial_gen;
	struct oob_map gmap, pmap, mmap; /* id -> index */
	struct gotrace_vec gv, pv, mv;
	int gc_state; /* 0 undetermined, 1 not running, 2 running */
	uint64_t gc_seq;
};

/* The error of a failed gotrace_uv (GOTRACE_UV_*) in what at offset off. */
int gotrace_v2_uv_err(int rc, size_t off, const char *what, struct oob_err *err);

/* Generation tables: Strings, Stacks, and the Frequency/Sync batch. */
int gotrace_v2_strings_batch(struct v2 *v, const struct batch *b, struct oob_err *err);
int gotrace_v2_stacks_batch(struct v2 *v, const struct batch *b, struct oob_err *err);
int gotrace_v2_sync_batch(struct v2 *v, const struct batch *b, struct oob_err *err);

/* Decodes an event batch (onto its M's cursor) or a CPUSamples batch (onto
 * v->samples), appending to t->ev in file order. */
int gotrace_v2_event_batch(struct v2 *v, const struct batch *b, struct oob_err *err);
int gotrace_v2_samples_batch(struct v2 *v, const struct batch *b, struct oob_err *err);

/* Puts the generation's events (from index first on) in order, CPU samples
 * merged in by time. */
int gotrace_v2_finish_gen(struct v2 *v, size_t first, struct oob_err *err);

#endif
