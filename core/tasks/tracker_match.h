/*
 * tracker_match: which user binary runs, for the trackers that do not know
 * (private to the trackers of tasks/; DESIGN.md 4.3).
 *
 * Without instruction bits or registers, a user pc does not say which of the
 * candidate binaries mapped there is running. Each return to user space
 * starts a run; the run is given to the binary chosen last on this hart if it
 * has code there, else to the first that has. While the run goes on, any
 * control flow that the chosen binary's code cannot produce (a straight-line
 * run leaving early, a direct branch or call landing off its target) rules
 * that binary out for the run, and the next candidate takes over from there.
 * The match tracker gives each binary a task of its own (its root frame is
 * the binary's name); park keeps the running task and changes its user code.
 */
#ifndef OOB_TRACKER_MATCH_H
#define OOB_TRACKER_MATCH_H

#include "tasks/tracker.h"

/* The candidate binary (user space id) for a user run at pc, or 0 if none
 * is left; excl: the spaces ruled out for the run (bit k: space k). */
unsigned tracker_match_pick(struct tracker_run *r, struct tracker_hart *h, uint64_t excl,
			    uint64_t pc);
/* A user run starts at pc: its candidate, or 0 (*excl: reset). */
unsigned tracker_match_begin(struct tracker_run *r, struct tracker_hart *h, uint64_t *excl,
			     uint64_t pc);
/* The running binary's code cannot have led to nb: rules it out for the
 * run (in *excl) and returns the next candidate (the span up to i
 * charged), or 0. */
unsigned tracker_match_next(struct tracker_run *r, struct tracker_hart *h, uint64_t *excl,
			    struct code_block *nb, uint32_t i);

/*
 * The first return to user space in an address space: which user binary
 * runs there, by the instruction bits the trace shows from record i on,
 * compared with each candidate ELF's bytes at the same addresses (the
 * binaries may be linked at the same address). Looks ahead in the batch
 * while the hart stays in user space; records no candidate holds (the vDSO)
 * say nothing. The choice holds for the task's life (an exec makes a new
 * address space). Returns the block of the chosen binary.
 */
struct code_block *tracker_space_enter(struct tracker_run *r, struct tracker_hart *h,
				       struct code_block *nb, uint32_t i);

#endif
