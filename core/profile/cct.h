/*
 * cct: the calling-context tree being built during a reconstruction. A node
 * is keyed by (parent node, frame); it carries the exact number of times the
 * context was entered and the instructions and cycles spent in it (self).
 * Totals are derived at the end (profile.c). Memory grows with the number of
 * distinct stacks, never with trace length.
 *
 * cct_child is on the hot path (every call): each node remembers its last
 * two looked-up children, so a loop calling the same functions skips the
 * hash.
 * Not thread-safe: one tree per reconstruction.
 */
#ifndef OOB_CCT_H
#define OOB_CCT_H

#include <stdint.h>

#include "util/oob_map.h"

#define CCT_ROOT 0u

struct cct_node {
	uint32_t parent, frame;
	/* the last two cct_child answers from this node, latest first: a
	 * function that calls two others in turn (push, pop) skips the hash */
	uint32_t memo_frame[2], memo_child[2];
	uint64_t calls, insns, cycles;
};

struct cct {
	struct cct_node *v;
	size_t n, cap;
	struct oob_map index; /* (parent << 32 | frame) -> node id */
};

/* Creates the tree with its root (node 0, no frame). */
void cct_init(struct cct *c);
void cct_destroy(struct cct *c);

uint32_t cct_child_slow(struct cct *c, uint32_t parent, uint32_t frame);

/* The child of parent for frame, created (with zero counts) if new. */
static inline uint32_t cct_child(struct cct *c, uint32_t parent, uint32_t frame)
{
	struct cct_node *p = &c->v[parent];
	if (p->memo_frame[0] == frame)
		return p->memo_child[0];
	if (p->memo_frame[1] == frame) {
		uint32_t id = p->memo_child[1];
		p->memo_frame[1] = p->memo_frame[0];
		p->memo_child[1] = p->memo_child[0];
		p->memo_frame[0] = frame;
		p->memo_child[0] = id;
		return id;
	}
	return cct_child_slow(c, parent, frame);
}

#endif
