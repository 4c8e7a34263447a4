/*
 * gotrace: Go execution traces (the files runtime/trace writes, read by
 * `go tool trace`) parsed in C, with no Go at run time (DESIGN.md 3.5).
 *
 * Two wire formats, one model:
 *   v1  headers "go 1.7 trace" .. "go 1.21 trace" (Go 1.7-1.21; Go 1.20
 *       writes the 1.19 header): per-P batches without lengths, implicit
 *       P/G context, per-goroutine sequence numbers, the frequency and the
 *       stack table at the end of the file.
 *   v2  headers "go 1.22 trace", "go 1.23 trace" (also written by 1.24),
 *       "go 1.25 trace", "go 1.26 trace": per-M batches in generations, with
 *       per-generation string/stack tables, GoStatus/ProcStatus re-seeding
 *       state each generation and P/G sequence numbers.
 * Both are decoded into one list of normalised events in a consistent global
 * order (the order Go's own parsers establish: per-P (v1) or per-M (v2)
 * streams merged by time, subject to the goroutine/P state machine), and a
 * model built from them: per-goroutine, per-P and per-M state intervals,
 * syscalls, GC/STW/sweep/assist ranges, user tasks, regions and logs, CPU
 * samples and stacks symbolized from the trace's own stack table.
 *
 * Time: every timestamp is in the trace's own ticks, absolute, as the runtime
 * wrote them (v1: cputicks()/16 on riscv64 and arm64, /64 on amd64; v2 on
 * Linux: CLOCK_MONOTONIC ns / 64). gotrace_info.freq is ticks per second;
 * gotrace_ns converts. Raw ticks are kept because they are what an
 * instruction trace is aligned against (goclock.h).
 *
 * Limits: the whole file is read into memory (v1 has its frequency at the
 * end); input size is capped by gotrace_opts.max_bytes. Memory is about 120
 * bytes per event. Thread-safety: a struct gotrace is immutable once
 * gotrace_open returns; any number of threads may read it.
 */
#ifndef OOB_GOTRACE_H
#define OOB_GOTRACE_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"

/* "no goroutine / P / M / stack" in every id field below. */
#define GOTRACE_NONE UINT64_MAX

/*
 * Normalised event kinds. args[] meanings are given per kind; `g`, `p`, `m`
 * of struct gotrace_event are the context the event happened in. The
 * goroutine state words (runnable, running, waiting, syscall) are those of
 * enum gotrace_gstate.
 */
enum gotrace_kind {
	GOTRACE_EV_NONE = 0,
	GOTRACE_EV_PROCS,	      /* GOMAXPROCS: args[0] = procs */
	GOTRACE_EV_PROC_START,	      /* P p starts running on M m. v1: args[0] = m.id; v2:
					 args[0] = P, args[1] = P seq */
	GOTRACE_EV_PROC_STOP,	      /* the context's P stops */
	GOTRACE_EV_PROC_STEAL,	      /* v2: args[0] = P stolen, args[1] = P seq, args[2] = the M
					 it was taken from */
	GOTRACE_EV_PROC_STATUS,	      /* v2: args[0] = P, args[1] = pstatus (v2 wire values) */
	GOTRACE_EV_GC_START,	      /* args[0] = GC seq */
	GOTRACE_EV_GC_DONE,	      /* args[0] = GC seq (v2), 0 (v1) */
	GOTRACE_EV_GC_ACTIVE,	      /* v2: a GC was running at generation start */
	GOTRACE_EV_STW_START,	      /* str = kind ("mark termination", ...) */
	GOTRACE_EV_STW_DONE,	      /* */
	GOTRACE_EV_SWEEP_START,	      /* per P */
	GOTRACE_EV_SWEEP_DONE,	      /* args[0] = swept, args[1] = reclaimed */
	GOTRACE_EV_SWEEP_ACTIVE,      /* v2: args[0] = P sweeping at generation start */
	GOTRACE_EV_GO_CREATE,	      /* args[0] = new g, args[1] = its start stack; -> runnable */
	GOTRACE_EV_GO_CREATE_BLOCKED, /* v2 1.23: like GO_CREATE, -> waiting */
	GOTRACE_EV_GO_CREATE_SYSCALL, /* v2: args[0] = g created in a syscall (cgo callback) */
	GOTRACE_EV_GO_START,	   /* args[0] = g, args[1] = seq; runnable -> running. g = args[0];
				      str = label (v1 GoStartLabel) */
	GOTRACE_EV_GO_END,	   /* the context's G exits (v1 GoEnd, v2 GoDestroy) */
	GOTRACE_EV_GO_END_SYSCALL, /* v2 GoDestroySyscall */
	GOTRACE_EV_GO_YIELD,	   /* running -> runnable (v1 GoSched/GoPreempt, v2 GoStop);
				      str = reason */
	GOTRACE_EV_GO_BLOCK,	   /* running -> waiting; str = reason ("sleep", "chan receive",
				      "forever", ...) */
	GOTRACE_EV_GO_UNBLOCK,	   /* args[0] = g, args[1] = seq; waiting -> runnable */
	GOTRACE_EV_GO_SYSCALL,	   /* syscall entry. v1: an instant, the G keeps running; v2:
				      running -> syscall, args[0] = P seq */
	GOTRACE_EV_GO_SYSCALL_END, /* v2: syscall -> running (fast return, P kept) */
	GOTRACE_EV_GO_SYSCALL_BLOCK,  /* v1: the syscall blocked, G leaves its P (-> syscall) */
	GOTRACE_EV_GO_SYSCALL_EXIT,   /* syscall -> runnable after losing the P. v1: args[0] = g,
					 args[1] = seq, args[2] = real return ticks (0 unknown);
					 v2 GoSyscallEndBlocked: the context's G */
	GOTRACE_EV_GO_STATUS,	      /* args[0] = g, args[1] = M (or GOTRACE_NONE), args[2] =
					 enum gotrace_gstate. v1 GoWaiting/GoInSyscall, v2 GoStatus */
	GOTRACE_EV_GO_SWITCH,	      /* v2 1.23: args[0] = next g, args[1] = seq; the context's G
					 -> waiting, next g -> running */
	GOTRACE_EV_GO_SWITCH_DESTROY, /* same, the context's G exits */
	GOTRACE_EV_GO_LABEL,	      /* v2: str = label of the context's G */
	GOTRACE_EV_HEAP_ALLOC,	      /* args[0] = bytes */
	GOTRACE_EV_HEAP_GOAL,	      /* args[0] = bytes */
	GOTRACE_EV_ASSIST_START,      /* GC mark assist of the context's G */
	GOTRACE_EV_ASSIST_DONE,	      /* */
	GOTRACE_EV_ASSIST_ACTIVE,     /* v2: args[0] = g assisting at generation start */
	GOTRACE_EV_TASK_BEGIN,	      /* args[0] = task, args[1] = parent; str = name */
	GOTRACE_EV_TASK_END,	      /* args[0] = task */
	GOTRACE_EV_REGION_BEGIN,      /* args[0] = task; str = name */
	GOTRACE_EV_REGION_END,	      /* args[0] = task; str = name */
	GOTRACE_EV_LOG,		      /* args[0] = task; str = key, str2 = value */
	GOTRACE_EV_CPU_SAMPLE,	      /* profiling sample; stack = sampled stack */
	GOTRACE_EV_FUTILE_WAKEUP,     /* v1, unused by Go >= 1.6 runtimes */
	GOTRACE_EV_OTHER,	      /* experimental and unknown-but-skippable events */
	GOTRACE_EV_COUNT
};

/* Goroutine states (also the model's state of G spans). The values equal v2's
 * gstatus wire values. */
enum gotrace_gstate {
	GOTRACE_G_UNKNOWN = 0,
	GOTRACE_G_RUNNABLE = 1,
	GOTRACE_G_RUNNING = 2,
	GOTRACE_G_SYSCALL = 3,
	GOTRACE_G_WAITING = 4,
	GOTRACE_G_DEAD = 5,
};

struct gotrace_event {
	uint64_t ticks;	  /* when it happened (emission time; see GO_SYSCALL_EXIT) */
	uint64_t off;	  /* byte offset of the event in the (decompressed) file */
	uint64_t g, p, m; /* context: goroutine, P, M; GOTRACE_NONE when absent. m is the OS
			     thread id in v2 and the runtime's m.id in v1 (from ProcStart) */
	uint64_t args[3]; /* per kind, see enum gotrace_kind */
	uint32_t stack;	  /* stack id (gotrace_stack), 0 = none */
	uint32_t gen;	  /* v2 generation, 0 in v1 */
	uint16_t kind;	  /* enum gotrace_kind */
	uint8_t type;	  /* wire event type of the trace's version (gotrace_type_name) */
	const char *str;  /* name, label, reason, log key; NULL if none */
	const char *str2; /* log value; NULL if none */
};

struct gotrace_frame {
	uint64_t pc;
	const char *func; /* never NULL ("" if the trace did not name it) */
	const char *file; /* never NULL */
	uint64_t line;
};

struct gotrace_stack {
	const struct gotrace_frame *frames; /* innermost first */
	uint32_t n;
};

/* --- model ------------------------------------------------------------ */

/* A state interval of one entity (a G, a P or an M): [start, end) in ticks.
 * G spans: state = enum gotrace_gstate (never DEAD); p/m say where it ran
 * (RUNNING, SYSCALL) or GOTRACE_NONE; reason is the block/yield reason
 * (WAITING, RUNNABLE) or NULL; stack the stack of the event that began the
 * span. P spans: state RUNNING (p = id, m = thread, g = GOTRACE_NONE) or
 * SYSCALL (v2: its G is in a syscall). M spans: state RUNNING while it holds a
 * P, SYSCALL while a goroutine sits in a blocking syscall on it without one. */
struct gotrace_span {
	uint64_t start, end;
	uint64_t g, p, m;
	const char *reason;
	uint32_t stack;
	uint8_t state;
	uint8_t open; /* 1: still in this state when the trace ended (end = last tick) */
};

struct gotrace_goroutine {
	uint64_t id;
	const char *name;	/* start function (top frame of its start stack), or NULL */
	uint32_t create_stack;	/* stack of the GoCreate, 0 if created before the trace */
	uint32_t start_stack;	/* one-frame stack of its start function, 0 if unknown */
	uint64_t created;	/* ticks of GoCreate, 0 if it existed at trace start */
	uint64_t ended;		/* ticks of its end, 0 if still alive */
	const char *label;	/* last label (GC workers), or NULL */
	uint64_t running_ticks; /* sum of its RUNNING spans */
	size_t span0, nspans;	/* its spans: model.gspans[span0 .. span0 + nspans) */
};

struct gotrace_proc {
	uint64_t id;
	size_t span0, nspans; /* model.pspans */
};

struct gotrace_thread {
	uint64_t id;
	size_t span0, nspans; /* model.mspans */
};

struct gotrace_syscall {
	uint64_t g, p, m;
	uint64_t start; /* GoSysCall / GoSyscallBegin */
	uint64_t end;	/* return (v1: the real return ticks of GoSysExit); == start for
			   v1 syscalls that did not block (v1 does not record their end) */
	uint32_t stack;
	uint8_t blocked; /* the P was lost (v1 GoSysBlock, v2 GoSyscallEndBlocked) */
	uint8_t open;	 /* still in the syscall when the trace ended */
};

enum gotrace_range_kind {
	GOTRACE_R_GC = 1,      /* global */
	GOTRACE_R_STW,	       /* global; name = kind */
	GOTRACE_R_SWEEP,       /* per P */
	GOTRACE_R_MARK_ASSIST, /* per G */
};

struct gotrace_range {
	uint64_t start, end;
	uint64_t g, p, m; /* where it ran (per kind) */
	const char *name; /* STW kind, or NULL */
	uint64_t arg[2];  /* sweep: swept, reclaimed bytes */
	uint8_t kind;	  /* enum gotrace_range_kind */
	uint8_t open;	  /* never ended (end = last tick); a range already running when
			     the trace began (v2 *Active) starts at the first tick */
};

struct gotrace_task {
	uint64_t id, parent;
	const char *name;
	uint64_t start, end; /* 0 if not seen */
};

struct gotrace_region {
	uint64_t g, task;
	const char *name;
	uint64_t start, end;
	uint32_t depth; /* 0 = outermost on its goroutine */
	uint32_t stack;
	uint8_t open;
};

struct gotrace_log {
	uint64_t ticks, g, task;
	const char *key, *value;
};

struct gotrace_model {
	const struct gotrace_goroutine *gs; /* sorted by id */
	size_t ngs;
	const struct gotrace_proc *ps; /* sorted by id */
	size_t nps;
	const struct gotrace_thread *ms; /* sorted by id */
	size_t nms;
	const struct gotrace_span *gspans, *pspans, *mspans; /* grouped by entity, by time */
	size_t ngspans, npspans, nmspans;
	const struct gotrace_syscall *syscalls; /* by start */
	size_t nsyscalls;
	const struct gotrace_range *ranges; /* by start */
	size_t nranges;
	const struct gotrace_task *tasks; /* by id */
	size_t ntasks;
	const struct gotrace_region *regions; /* by start */
	size_t nregions;
	const struct gotrace_log *logs; /* by time */
	size_t nlogs;
	const struct gotrace_event *const *samples; /* CPU samples, by time */
	size_t nsamples;
};

/* --- the trace ---------------------------------------------------------- */

struct gotrace_info {
	int format;		  /* 1 (v1) or 2 (v2) */
	int version;		  /* from the header: 1007..1021, 1022, 1023, 1025, 1026 */
	uint64_t freq;		  /* ticks per second (v2: of the first generation) */
	uint64_t min_ticks;	  /* earliest timestamp (v1: incl. GoSysExit real times) */
	uint64_t max_ticks;	  /* latest */
	uint64_t bytes;		  /* input size */
	uint64_t batches;	  /* batch headers read */
	uint64_t generations;	  /* v2; 0 in v1 */
	uint64_t strings, stacks; /* table entries read */
	uint64_t timed_events;	  /* events with a timestamp: what runtime.traceEventLocked
				     (v1) writes, one call each; excludes CPU samples */
	/* v2 1.25+: the first ClockSnapshot (0 if none) */
	uint64_t clock_ticks, clock_mono_ns, clock_wall_s, clock_wall_ns;
};

struct gotrace_opts {
	uint64_t max_bytes; /* input cap (decompressed), 0 = 1 GiB; over it -> -EFBIG */
};

struct gotrace;

/*
 * Reads and parses a Go execution trace (an LZ4 frame around it is accepted)
 * and builds its model. opts may be NULL. Returns the trace (free with
 * gotrace_free) or NULL with err filled:
 *   -ENOENT/-EIO   the file cannot be read
 *   -ENOTSUP       a Go trace of a version we do not read (1.5/1.6), or not a Go trace
 *                  at all ("not a Go execution trace (first bytes: ...)")
 *   -EINVAL        corrupt or truncated: the message names the byte offset and what
 *                  was expected, or the event (offset, time) that broke the state
 *                  machine ("no consistent ordering", "g 7 is not waiting ...")
 *   -EFBIG         over opts->max_bytes
 */
struct gotrace *gotrace_open(const char *path, const struct gotrace_opts *opts,
			     struct oob_err *err);
/* The same over a buffer (borrowed for the call only). name is used in errors. */
struct gotrace *gotrace_open_mem(const void *buf, size_t n, const char *name,
				 const struct gotrace_opts *opts, struct oob_err *err);
void gotrace_free(struct gotrace *t);

/* Borrowed from t, valid until gotrace_free. */
const struct gotrace_info *gotrace_info(const struct gotrace *t);
/* Every decoded event (timed events and CPU samples) in the global order. */
const struct gotrace_event *gotrace_events(const struct gotrace *t, size_t *n);
const struct gotrace_model *gotrace_model(const struct gotrace *t);
/* Stack by id; NULL for 0 or an unknown id. */
const struct gotrace_stack *gotrace_stack(const struct gotrace *t, uint32_t id);
/* Number of events of each wire type (index = type, 256 entries), as read. */
const uint64_t *gotrace_type_counts(const struct gotrace *t);

/* Name of a wire event type of t's version ("GoStartLocal", "GoSyscallBegin"),
 * "" for types the version does not have. Static strings. */
const char *gotrace_type_name(const struct gotrace *t, unsigned type);
/* Name of a normalised kind ("GoStart", ...) or of a goroutine state. Static. */
const char *gotrace_kind_name(unsigned kind);
const char *gotrace_gstate_name(unsigned state);

/* ticks -> nanoseconds since the trace's first event (as `go tool trace`). */
double gotrace_ns(const struct gotrace *t, uint64_t ticks);

#endif
