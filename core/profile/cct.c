#include "profile/cct.h"

#include <stdlib.h>
#include <string.h>

#include "profile/frame.h"
#include "util/oob_mem.h"

static uint32_t node_add(struct cct *c, uint32_t parent, uint32_t frame)
{
	oob_xgrow((void **)&c->v, &c->cap, c->n + 1, sizeof(*c->v));
	c->v[c->n] = (struct cct_node){
	    .parent = parent, .frame = frame, .memo_frame = {FRAME_NONE, FRAME_NONE}};
	return (uint32_t)c->n++;
}

void cct_init(struct cct *c)
{
	memset(c, 0, sizeof(*c));
	oob_map_init(&c->index, 1024);
	node_add(c, UINT32_MAX, FRAME_NONE);
}

void cct_destroy(struct cct *c)
{
	oob_map_destroy(&c->index);
	free(c->v);
	memset(c, 0, sizeof(*c));
}

uint32_t cct_child_slow(struct cct *c, uint32_t parent, uint32_t frame)
{
	int inserted;
	uint64_t *slot = oob_map_put(&c->index, (uint64_t)parent << 32 | frame, &inserted);
	if (inserted)
		*slot = node_add(c, parent, frame);
	uint32_t id = (uint32_t)*slot;
	struct cct_node *p = &c->v[parent];
	p->memo_frame[1] = p->memo_frame[0];
	p->memo_child[1] = p->memo_child[0];
	p->memo_frame[0] = frame;
	p->memo_child[0] = id;
	return id;
}
