/*
 * goclock: the clock model that puts Go execution-trace time on an
 * instruction trace's time axis (DESIGN.md 4.5), per clock domain:
 *
 *     trace_time = a * (go_ticks - x0) + b
 *
 * trace_time is the instruction trace's own time: cycles when the trace has a
 * cycle counter (FireSim TracerV, Spike), otherwise the instruction index
 * (QEMU user mode traces have no cycles: the axis is then the global record
 * index of the trace, "insn = a * go_ticks + b", and every residual and
 * tolerance below is in instructions). One model per clock domain: a caller
 * with harts in several domains fits each on its own anchors.
 *
 * The model is given (goclock_from_hz: the trace clock's rate and an offset,
 * as a job's "go_clock": {"hz", "offset"} says) or fitted by least squares on
 * anchors: pairs (Go ticks, trace time) of the same moment. goclock_align
 * finds them in a real run: every timed Go event is written by one call of the
 * runtime's trace-event function (runtime.traceEventLocked up to Go 1.21,
 * runtime.traceWriter.event after), so the N-th timed event in time order is
 * the N-th entry into that function in the instruction trace. A fit that does
 * not hold (too few anchors, slope not positive, a residual over the
 * tolerance) is refused with a message that says which anchor and by how much.
 *
 * Thread-safety: plain functions on caller-owned data; goclock_align reads
 * its inputs only (a gotrace is immutable) and may run in parallel.
 */
#ifndef OOB_GOCLOCK_H
#define OOB_GOCLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "go/gotrace.h"
#include "util/oob_err.h"
#include "trace/trace.h"

struct goclock {
	double a;    /* trace time units per Go tick (> 0) */
	double b;    /* trace time at go_ticks == x0 */
	uint64_t x0; /* reference tick (keeps the arithmetic exact for large ticks) */
};

/* Trace time of a Go timestamp. */
double goclock_map(const struct goclock *c, uint64_t go_ticks);
/* Go ticks of a trace time (the inverse; rounded to the nearest tick, 0 below 0). */
uint64_t goclock_unmap(const struct goclock *c, double trace_time);

/* A model from the trace clock's rate: a = hz / go_freq, b = offset (the trace
 * time of Go tick 0). -EINVAL if hz or go_freq is not positive and finite. */
int goclock_from_hz(double hz, double offset, uint64_t go_freq, struct goclock *out,
		    struct oob_err *err);

enum goclock_anchor_kind {
	GOCLOCK_ANCHOR_EMIT = 1, /* trace-event emission: entry into the trace-event function */
	GOCLOCK_ANCHOR_SYSCALL,	 /* syscall entry: the first ecall of that thread after the
				    emission of a GoSysCall / GoSyscallBegin event */
};

struct goclock_anchor {
	uint64_t go;	  /* Go ticks */
	uint64_t trace;	  /* trace time (instruction index or cycle) */
	uint64_t go_m;	  /* Go thread of the event (v2: OS tid; v1: m.id), GOTRACE_NONE */
	uint64_t go_off;  /* byte offset of the Go event in its file */
	uint32_t hart;	  /* hart (QEMU user: guest thread) of the instruction */
	uint8_t kind;	  /* enum goclock_anchor_kind */
	uint16_t go_kind; /* enum gotrace_kind of the event */
};

struct goclock_fit_opts {
	size_t min_anchors;	 /* fewer -> refused; 0 = 3 */
	double max_residual;	 /* tolerance in trace units; 0 = use max_residual_rel */
	double max_residual_rel; /* tolerance as a fraction of the anchors' trace-time span;
				    0 = 0.02 (2 %) */
};

struct goclock_fit {
	struct goclock clock;
	size_t n;	  /* anchors used */
	double span;	  /* trace-time span of the anchors (max - min) */
	double rms;	  /* root mean square residual, trace units */
	double max_abs;	  /* largest |residual| */
	size_t worst;	  /* index of that anchor */
	double tolerance; /* the bound max_abs was held to */
};

/*
 * Least-squares fit of trace = a * go + b over anchors a[0..n). Fills *out
 * (also when refusing, so the numbers can be reported) and resid[i] (trace
 * units, model minus observation; resid may be NULL). Returns 0, or -EINVAL
 * with err saying why the fit is refused: fewer than min_anchors anchors, all
 * at one Go time, a slope that is not positive, or a residual over the
 * tolerance (naming the anchor, its Go offset and the size).
 */
int goclock_fit(const struct goclock_anchor *a, size_t n, const struct goclock_fit_opts *o,
		struct goclock_fit *out, double *resid, struct oob_err *err);

/* Residuals of a given model over anchors, summarised in *out like a fit
 * (out->clock = *c); same refusal rule for the tolerance. */
int goclock_check(const struct goclock *c, const struct goclock_anchor *a, size_t n,
		  const struct goclock_fit_opts *o, struct goclock_fit *out, double *resid,
		  struct oob_err *err);

/* --- alignment of a real run ------------------------------------------------- */

/* The default tolerance of goclock_align: 2 % of the anchors' span when the
 * trace counts cycles, 10 % when its time axis is the instruction index (QEMU
 * user mode: the guest runs at whatever rate the host lets it, so the index
 * is only roughly proportional to time; measured on our demo run under a
 * loaded 2-core host: max residual 2.5 %, rms 0.7 % of the span). */
#define GOCLOCK_TOL_CYCLES 0.02
#define GOCLOCK_TOL_INSNS  0.10

struct goclock_align_opts {
	const char *elf;	     /* the Go program that wrote the trace */
	uint64_t elf_bias;	     /* run-time minus link-time addresses (PIE); 0 for static */
	const char *func;	     /* trace-event function; NULL = try runtime.traceEventLocked,
					then runtime.traceWriter.event */
	struct goclock_fit_opts fit; /* tolerance 0: the defaults above */
	const struct goclock *given; /* check this model instead of fitting one (NULL: fit) */
};

/* Which hart each Go thread's events ran on (anchors of that M). */
struct goclock_thread {
	uint64_t go_m;
	uint32_t hart;	       /* the hart most of its anchors are on */
	size_t anchors, other; /* its anchors; how many were on another hart */
};

struct goclock_alignment {
	struct goclock_fit fit;		/* over the emission anchors */
	struct goclock_anchor *anchors; /* emission anchors, then syscall anchors */
	double *resid;			/* per anchor, model minus observation */
	size_t nanchors, nemit, nsys;
	double sys_max_abs, sys_mean;	/* residuals of the syscall anchors (not fitted) */
	const char *func;		/* the function whose entries were used */
	uint64_t func_addr;		/* its run-time entry */
	uint64_t go_events;		/* timed events in the Go trace */
	uint64_t entries;		/* entries into func in the instruction trace (not
					   counting the restart after a stack split) */
	uint64_t ecalls;		/* ecall instructions seen */
	uint64_t insns;			/* instructions read */
	unsigned harts;			/* harts seen */
	int cycles;			/* 1: trace time is the trace's cycle counter;
					   0: the global instruction (record) index */
	struct goclock_thread *threads; /* per Go thread, by go_m */
	size_t nthreads;
	size_t thread_mismatch; /* anchors on another hart than their thread's */
};

/* The instruction trace of the run: one file, or one per hart (read in time
 * order: trace_merge_open_run). */
struct goclock_traces {
	const char *const *paths;
	size_t n;
	struct trace_opts opts; /* how to read each */
	const uint16_t *harts;	/* of several files, each one's hart (NULL: by name) */
};

/*
 * Reads the instruction trace insn once (streamed), collects the
 * entries into the trace-event function and the ecalls, pairs the N-th Go
 * timed event (by time) with the N-th entry, adds syscall anchors, and fits
 * (or checks opts->given). Returns:
 *   0        the model holds; *out set (free with goclock_alignment_free)
 *   -EINVAL  the anchors were paired but the fit is refused (*out set, err says
 *            why); or they cannot be paired: the counts differ (err gives both),
 *            or several files lack cycles (no common time), *out NULL
 *   -ENOENT  the function is not in the ELF (stripped, or not a Go program)
 *   other    errors of trace_open/trace_next/sym_binary_open, *out NULL
 * Memory grows with the number of entries and ecalls, not with trace length.
 */
int goclock_align(const struct gotrace *gt, const struct goclock_traces *insn,
		  const struct goclock_align_opts *opts, struct goclock_alignment **out,
		  struct oob_err *err);
void goclock_alignment_free(struct goclock_alignment *al);

/* Trace time of a Go timestamp by the anchors themselves: exact at every
 * emission anchor, linear between the two around it, the fitted model
 * outside them. This is the mapping a timeline should use: it follows an
 * emulator's uneven pace where a single line cannot. */
double goclock_align_map(const struct goclock_alignment *al, uint64_t go_ticks);

#endif
