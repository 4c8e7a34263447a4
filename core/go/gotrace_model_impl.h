/*
 * gotrace_model internals shared by gotrace_model.c (dispatch, finishing,
 * publishing), gotrace_model_sched.c (goroutines, Ps, Ms, syscalls) and
 * gotrace_model_ranges.c (GC/STW/sweep/assist ranges, user tasks, regions,
 * logs, CPU samples). Not a public header.
 */
#ifndef OOB_GOTRACE_MODEL_IMPL_H
#define OOB_GOTRACE_MODEL_IMPL_H

#include "go/gotrace_impl.h"

struct gm { /* a goroutine being modelled */
	struct gotrace_goroutine pub;
	uint64_t since, p, m;
	const char *reason;
	uint32_t stack;
	uint8_t state;
	size_t sys;		    /* index of its last syscall, SIZE_MAX if none */
	size_t assist;		    /* open mark assist range, SIZE_MAX if none */
	struct gotrace_vec regions; /* size_t indexes of its open regions */
};

struct pm {
	struct gotrace_proc pub;
	uint64_t since, m;
	uint8_t state; /* 0 idle, RUNNING, SYSCALL */
	size_t sweep;  /* open sweep range, SIZE_MAX if none */
};

struct mm {
	struct gotrace_thread pub;
	uint64_t since, p, sysg;
	uint8_t state; /* 0 idle, RUNNING (holds a P), SYSCALL (blocked in one, no P) */
};

struct model {
	struct gotrace *t;
	struct oob_map gmap, pmap, mmap, tmap;
	struct gotrace_vec g, p, m; /* struct gm / pm / mm */
	struct gotrace_vec gspans, pspans, mspans, sys, ranges, tasks, regions, logs, samples;
	size_t gc, stw; /* open global ranges, SIZE_MAX if none */
	uint64_t now;
};

/* The index in v of entity id (elem bytes), appended zeroed if *fresh. */
size_t gotrace_model_entity(struct model *md, struct oob_map *map, struct gotrace_vec *v,
			    size_t elem, uint64_t id, int *fresh);
/* Goroutine, P by id, made on first use. */
struct gm *gotrace_model_gget(struct model *md, uint64_t id);
struct pm *gotrace_model_pget(struct model *md, uint64_t id);
/* The goroutine an event acts on: its context G (NULL if none). */
struct gm *gotrace_model_cur(struct model *md, const struct gotrace_event *e);

/* Event handlers (gotrace_model.c dispatches by kind). */
void gotrace_model_on_create(struct model *md, const struct gotrace_event *e);
void gotrace_model_on_status(struct model *md, const struct gotrace_event *e);
void gotrace_model_on_switch(struct model *md, const struct gotrace_event *e);
void gotrace_model_on_goroutine(struct model *md, const struct gotrace_event *e);
void gotrace_model_on_proc(struct model *md, const struct gotrace_event *e);
void gotrace_model_on_range(struct model *md, const struct gotrace_event *e);
void gotrace_model_on_annotation(struct model *md, const struct gotrace_event *e);

/* Ends the open regions of g at ts (the goroutine ended). */
void gotrace_model_regions_close_all(struct model *md, struct gm *g, uint64_t ts);

/* At the end of the trace: closes the spans of every goroutine, P and M
 * and the open syscalls (gotrace_model_sched.c), then the open ranges and
 * regions (gotrace_model_ranges.c). */
void gotrace_model_close_entities(struct model *md);
void gotrace_model_close_ranges(struct model *md);

#endif
