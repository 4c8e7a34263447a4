/*
 * profile: the result of one reconstruction. A calling-context tree (CCT)
 * whose nodes carry exact counts, over a table of interned, symbolized
 * frames, plus the run's statistics. Built by recon; immutable afterwards, so
 * any number of threads may read one profile at the same time.
 *
 * Node 0 is the root (no frame, no weight of its own unless instructions ran
 * before any frame was known). Children are linked first_child/next_sibling.
 * Node ids are dense: 0 .. profile_nnodes - 1, parents before children.
 */
#ifndef OOB_PROFILE_H
#define OOB_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/oob_err.h"

#define PROFILE_NONE UINT32_MAX

enum profile_frame_kind {
	PROFILE_FRAME_USER = 0, /* user-space function */
	PROFILE_FRAME_KERNEL,	/* kernel (S/M mode) function */
	PROFILE_FRAME_MARKER,	/* [trap: ecall], [irq: timer], [unknown] */
	PROFILE_FRAME_PROCESS,	/* a process root ("prog 17") */
	PROFILE_FRAME_INLINE,	/* an inlined function (--inline) */
	PROFILE_FRAME_FIRMWARE, /* machine-mode code (OpenSBI, BBL) of no given ELF */
};

struct profile_frame {
	const char *name;   /* symbol, or 0x<addr> when unsymbolized; never NULL */
	const char *binary; /* basename of the binary, or NULL */
	const char *file;   /* source file, or NULL */
	uint32_t line;	    /* source line, or 0 */
	uint8_t kind;	    /* enum profile_frame_kind */
	uint64_t addr;	    /* function entry (run-time), 0 for markers */
};

struct profile_node {
	uint32_t parent;       /* PROFILE_NONE for the root */
	uint32_t frame;	       /* PROFILE_NONE for the root */
	uint32_t first_child;  /* PROFILE_NONE if a leaf */
	uint32_t next_sibling; /* PROFILE_NONE if last */
	uint64_t calls;	       /* times this context was entered */
	uint64_t self_insns, total_insns;
	uint64_t self_cycles, total_cycles;
};

struct profile_stats {
	const char *format; /* detected trace format name */
	unsigned harts;
	uint64_t instructions; /* retired instructions read */
	uint64_t cycles;       /* cycles spanned (0 if the trace has none) */
	uint64_t events;       /* control-flow events handled (calls, returns, traps...) */
	uint64_t calls, returns, tail_calls, traps, trap_returns, swaps;
	uint64_t repairs_unwind;     /* returns matched deeper in the shadow stack (longjmp) */
	uint64_t repairs_unknown;    /* returns that matched nothing: resynchronized */
	uint64_t repairs_depth;	     /* pushes dropped at the depth limit (max_depth) */
	uint64_t records_cut;	     /* last records cut short by an upload's end, dropped */
	uint64_t returns_above;	     /* returns above the trace's starting depth */
	uint64_t longjmps;	     /* landings at the return site of a live setjmp call */
	uint64_t eh_landings;	     /* C++ landing pads reached in the frame phase 2 walked to */
	uint64_t context_switches;   /* swapcontext/setcontext landings on a context (3.5) */
	uint64_t repairs_ambiguous;  /* non-local landings of several candidate frames */
	uint64_t sp_landings;	     /* landings decided by the stack pointer (register regime) */
	uint64_t unknown_pcs;	     /* instructions outside every known binary */
	uint64_t match_runs;	     /* pc-only traces: user runs given a binary by matching */
	uint64_t match_switches;     /* ... handed over to another candidate on evidence */
	uint64_t match_failed;	     /* ... where no candidate's code fits */
	uint64_t switch_resumes;     /* pc-only with a kernel: parked tasks resumed */
	uint64_t switch_new_tasks;   /* ... tasks first run (ret_from_fork), or unknown */
	uint64_t switch_undos;	     /* ... resumes given to another candidate by a return */
	uint64_t switch_user_fixes;  /* ... or by where the return to user space landed */
	uint64_t switch_clone_fixes; /* ... fork children given a sibling's frames by a return */
	uint64_t switch_lookalikes;  /* ... resumes among tasks with the same stack: pids unknown */
	uint64_t switch_misfits;     /* ... returns to user space that no candidate's stack fits */
	uint64_t maps, maps_skipped; /* sideband map events applied; naming no ELF given */
	uint64_t raw_bytes;	     /* input bytes read */
	/* Python frames (recon_opts.pycode, RECONSTRUCTION.md 17): frames started,
	 * identified by their opcodes alone, by their caller's call site, as the
	 * one generator alive; left ambiguous, of no code object of the map;
	 * ends planned where the stack had no Python frame on top */
	uint64_t py_frames, py_by_opcodes, py_by_call_site, py_by_generator;
	uint64_t py_ambiguous, py_unknown, py_mismatch;
	/* Sampled profiles (sample/sample.h): node weights are sample counts,
	 * kept in the instruction fields (metric "instructions", alias
	 * "samples"). samples counts every sample read, failed and truncated
	 * walks included (their partial stacks hang under a marker frame). */
	uint64_t samples;
	uint64_t failed_walks;	  /* the sampler said its stack walk failed */
	uint64_t truncated_walks; /* stacks cut at the tool's depth limit or the file's end */
	double seconds;		  /* wall time of the reconstruction */
	int partial;		  /* 1 if the input was still growing (streamed) */
	int sampled;		  /* 1: weights are samples of another tool, not exact */
};

/* The uint64 counters of profile_stats, for serializers. */
#define PROFILE_STAT_FIELDS(X)                                                                     \
	X(instructions)                                                                            \
	X(cycles)                                                                                  \
	X(events)                                                                                  \
	X(calls)                                                                                   \
	X(returns)                                                                                 \
	X(tail_calls)                                                                              \
	X(traps)                                                                                   \
	X(trap_returns)                                                                            \
	X(swaps)                                                                                   \
	X(repairs_unwind)                                                                          \
	X(repairs_unknown)                                                                         \
	X(repairs_depth)                                                                           \
	X(returns_above)                                                                           \
	X(longjmps)                                                                                \
	X(eh_landings)                                                                             \
	X(context_switches)                                                                        \
	X(repairs_ambiguous)                                                                       \
	X(sp_landings)                                                                             \
	X(unknown_pcs)                                                                             \
	X(match_runs)                                                                              \
	X(match_switches)                                                                          \
	X(match_failed)                                                                            \
	X(switch_resumes)                                                                          \
	X(switch_new_tasks)                                                                        \
	X(switch_undos)                                                                            \
	X(switch_user_fixes)                                                                       \
	X(switch_clone_fixes)                                                                      \
	X(switch_lookalikes)                                                                       \
	X(switch_misfits)                                                                          \
	X(maps)                                                                                    \
	X(maps_skipped)                                                                            \
	X(py_frames)                                                                               \
	X(py_by_opcodes)                                                                           \
	X(py_by_call_site)                                                                         \
	X(py_by_generator)                                                                         \
	X(py_ambiguous)                                                                            \
	X(py_unknown)                                                                              \
	X(py_mismatch)                                                                             \
	X(records_cut)                                                                             \
	X(raw_bytes)                                                                               \
	X(samples)                                                                                 \
	X(failed_walks)                                                                            \
	X(truncated_walks)

enum profile_metric { PROFILE_INSNS = 0, PROFILE_CYCLES, PROFILE_CALLS };

/*
 * Per-pc counts (recon_opts.pcs). A site is one run-time pc of one address
 * space with what the binary says of it; a row is what ran at a site under
 * one calling context (node), so a node's rows add up to its self counts
 * (without --inline: inline frames take their instructions from the node).
 * cycles of an instruction: from its retirement to the next one's on its
 * hart (the profile's convention: the last record of a hart has 0). calls:
 * the times a call instruction at the site ran (0 elsewhere). Rows are kept
 * per hart too (what pprof labels), so several rows may share (node, site).
 */
struct profile;

#define PROFILE_SITE_INLINES 4

struct profile_site {
	uint64_t pc;	      /* run-time */
	uint64_t link;	      /* the same in the binary (link-time), or pc without one */
	uint32_t space;	      /* address space (0 kernel, 1.. user) */
	uint32_t frame;	      /* the function containing pc, or PROFILE_NONE */
	const char *binary;   /* path of the ELF mapped at pc, or NULL */
	const char *build_id; /* that ELF's (sym_binary_build_id), or NULL */
	const char *file;     /* source file of the pc (innermost), or NULL */
	uint32_t line;	      /* its line, or 0 */
	uint32_t ninl;	      /* inline chain at pc, outermost first (truncated at
				 PROFILE_SITE_INLINES, innermost dropped) */
	struct {
		const char *name;      /* the inlined function */
		const char *call_file; /* where it was inlined, or NULL */
		uint32_t call_line;
	} inl[PROFILE_SITE_INLINES];
};

#define PROFILE_HART_UNKNOWN UINT32_MAX

struct profile_pc {
	uint32_t node; /* calling context */
	uint32_t site; /* index of profile_site */
	uint32_t hart; /* the hart that ran them, or PROFILE_HART_UNKNOWN (a
			  profile stored before rows had harts) */
	uint64_t insns, cycles, calls;
};

/* The times a calling context was entered on one hart: per hart, what the
 * node's calls count in total. */
struct profile_hart_calls {
	uint32_t node, hart;
	uint64_t calls;
};

/* Rows sorted by (node, pc, hart); sites by (space, pc); hart calls by
 * (node, hart). 0 rows when the run did not count per pc, 0 hart calls also
 * for a profile stored before they were kept. Borrowed, valid while p
 * lives. */
size_t profile_npcs(const struct profile *p);
const struct profile_pc *profile_pc(const struct profile *p, size_t i);
size_t profile_nhart_calls(const struct profile *p);
const struct profile_hart_calls *profile_hart_calls(const struct profile *p, size_t i);
size_t profile_nsites(const struct profile *p);
const struct profile_site *profile_site(const struct profile *p, uint32_t i);

struct profile;

/*
 * Builds a profile from its parts, e.g. as loaded back from storage. Copies
 * everything (strings included). Nodes must list parents before children with
 * node 0 the root; self counts and calls are taken, child links and totals are
 * derived again, so stored data cannot carry inconsistent totals. Returns NULL
 * and -EINVAL in err naming the first bad node or frame reference.
 */
struct profile *profile_new(const struct profile_node *nodes, size_t nnodes,
			    const struct profile_frame *frames, size_t nframes,
			    const struct profile_stats *st, struct oob_err *err);
void profile_free(struct profile *p);
/* Names distinct function frames that print alike as a reconstruction does
 * ("spin (signals.c)", else the binary, else "name@0x<entry>"). For a
 * profile built by profile_new from frames that may share names (sampled
 * stacks); run once: names it made unique stay so. */
void profile_disambiguate(struct profile *p);

size_t profile_nnodes(const struct profile *p);
const struct profile_node *profile_node(const struct profile *p, uint32_t id);
size_t profile_nframes(const struct profile *p);
const struct profile_frame *profile_frame(const struct profile *p, uint32_t id);
const struct profile_stats *profile_stats(const struct profile *p);
/* 1 if the profile has cycle counts. */
int profile_has_cycles(const struct profile *p);

/* "user", "kernel", "marker", "process" or "inline". */
const char *profile_frame_kind_name(unsigned kind);

/* Parses "instructions", "cycles", "calls" ("samples" is instructions, where
 * sampled profiles keep their counts); -EINVAL otherwise. */
int profile_metric_parse(const char *name, enum profile_metric *out);
const char *profile_metric_name(enum profile_metric m);
/* Self weight of a node under a metric (calls: the node's calls). */
uint64_t profile_node_self(const struct profile_node *n, enum profile_metric m);
uint64_t profile_node_total(const struct profile_node *n, enum profile_metric m);

/*
 * Brendan Gregg's folded stacks: one line per node with non-zero self weight,
 * frames root first joined by ';', a space, the weight. ';' inside names is
 * replaced by ':'. annotate adds "_[k]" to kernel frames, "_[i]" to inlined
 * ones. Returns 0 or -EIO.
 */
int profile_write_folded(const struct profile *p, FILE *f, enum profile_metric m, int annotate);

/* Processes (tasks) rebuilt out of band; empty when the trace gave no way
 * to tell them apart. Times are cycles, or instruction indices without. */
struct profile_exec {
	const char *path;
	uint64_t when;
};

struct profile_process {
	int64_t pid;  /* -1 if unknown */
	int64_t ppid; /* -1 if unknown */
	const char *comm;
	uint32_t frame; /* its root frame */
	uint64_t start, end;
	uint64_t insns_user, insns_kernel, cycles_user, cycles_kernel;
	const struct profile_exec *execs;
	size_t nexecs;
	const uint64_t *satps; /* address spaces (satp values) its user code ran in */
	size_t nsatps;
};

size_t profile_nprocesses(const struct profile *p);
const struct profile_process *profile_process(const struct profile *p, size_t i);
/* How processes were told apart: "events" (sideband), "derived" (kernel
 * functions and registers in the trace), "satp" (address spaces), "matched"
 * (user binaries), or NULL when they were not. */
const char *profile_process_source(const struct profile *p);
uint64_t profile_switches(const struct profile *p);
/* Replaces the process list (copied, strings included); for profiles loaded
 * back from storage. */
void profile_set_processes(struct profile *p, const struct profile_process *v, size_t n,
			   const char *source, uint64_t switches);
/* The process list of src, copied into dst (profiles of one run). */
void profile_copy_processes(struct profile *dst, const struct profile *src);

/* What a user should know before trusting the profile: code that ran in no
 * given ELF, a binary whose bits are not what ran, ... (recon's checks).
 * kind is a short stable word ("no_elf", "no_vmlinux", "firmware",
 * "bits_mismatch"), message a sentence saying what to do. */
struct profile_warning {
	const char *kind;
	const char *message;
};

#define PROFILE_WARNINGS_MAX 16

/* Adds a warning (copied; at most PROFILE_WARNINGS_MAX are kept). */
void profile_add_warning(struct profile *p, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
size_t profile_nwarnings(const struct profile *p);
const struct profile_warning *profile_warning(const struct profile *p, size_t i);

/* Per-function totals (by frame), the rows of `oobprof top`. Recursion is
 * counted once in totals (a frame's total excludes nested instances). */
struct profile_func {
	uint32_t frame;
	uint64_t calls;
	uint64_t self_insns, total_insns;
	uint64_t self_cycles, total_cycles;
};
/* Fills *out (malloc'd, caller frees) sorted by self weight of m, descending. */
size_t profile_functions(const struct profile *p, enum profile_metric m, struct profile_func **out);

#endif
