/*
 * frame: the interned frames a reconstruction refers to. A frame is either
 * a function of an address space, identified by its run-time entry address
 * (symbolized once, at the end, not per event), or a named frame (trap
 * markers, process roots, FirePerf labels). Interning gives dense uint32 ids
 * so that stacks and calling-context-tree keys stay small.
 * Not thread-safe: one table per reconstruction.
 */
#ifndef OOB_FRAME_H
#define OOB_FRAME_H

#include <stdint.h>

#include "util/oob_map.h"
#include "profile/profile.h"

#define FRAME_NONE UINT32_MAX

struct frame {
	uint8_t kind;	  /* enum profile_frame_kind */
	uint16_t space;	  /* address space of a function frame */
	uint64_t addr;	  /* run-time function entry; 0 for named frames */
	const char *name; /* named frames: the name (arena copy); functions: NULL */
	uint32_t next;	  /* named frames: next frame with the same name hash */
};

struct frame_table {
	struct frame *v;
	size_t n, cap;
	struct oob_map *by_addr; /* one map per address space: entry -> id */
	unsigned nspaces;
	struct oob_map by_name; /* hash of (kind, name) -> first id */
	struct oob_arena *arena;
};

void frame_table_init(struct frame_table *t);
void frame_table_destroy(struct frame_table *t);

/* The function frame with this entry in this address space (created if new).
 * kind is PROFILE_FRAME_USER or PROFILE_FRAME_KERNEL. */
uint32_t frame_func(struct frame_table *t, unsigned space, uint64_t entry, unsigned kind);
/* The named frame (created if new); name is copied. */
uint32_t frame_named(struct frame_table *t, unsigned kind, const char *name);

static inline const struct frame *frame_get(const struct frame_table *t, uint32_t id)
{
	return &t->v[id];
}

#endif
