#include "profile/frame.h"

#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"

void frame_table_init(struct frame_table *t)
{
	memset(t, 0, sizeof(*t));
	oob_map_init(&t->by_name, 64);
	t->arena = oob_arena_new();
}

void frame_table_destroy(struct frame_table *t)
{
	for (unsigned i = 0; i < t->nspaces; i++)
		oob_map_destroy(&t->by_addr[i]);
	free(t->by_addr);
	oob_map_destroy(&t->by_name);
	oob_arena_free(t->arena);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

static uint32_t frame_add(struct frame_table *t, const struct frame *f)
{
	oob_xgrow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v));
	t->v[t->n] = *f;
	return (uint32_t)t->n++;
}

uint32_t frame_func(struct frame_table *t, unsigned space, uint64_t entry, unsigned kind)
{
	if (space >= t->nspaces) {
		t->by_addr = oob_xrealloc(t->by_addr, (space + 1) * sizeof(*t->by_addr));
		for (unsigned i = t->nspaces; i <= space; i++)
			oob_map_init(&t->by_addr[i], 1024);
		t->nspaces = space + 1;
	}
	int inserted;
	uint64_t *slot = oob_map_put(&t->by_addr[space], entry, &inserted);
	if (inserted) {
		struct frame f = {.kind = (uint8_t)kind,
				  .space = (uint16_t)space,
				  .addr = entry,
				  .next = FRAME_NONE};
		*slot = frame_add(t, &f);
	}
	return (uint32_t)*slot;
}

/* FNV-1a over the kind and the name: named frames are few and long-lived,
 * the hash only has to spread them. */
static uint64_t name_hash(unsigned kind, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull ^ kind;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return h == OOB_MAP_EMPTY ? 0 : h;
}

uint32_t frame_named(struct frame_table *t, unsigned kind, const char *name)
{
	int inserted;
	uint64_t *slot = oob_map_put(&t->by_name, name_hash(kind, name), &inserted);
	uint32_t first = inserted ? FRAME_NONE : (uint32_t)*slot;
	for (uint32_t id = first; id != FRAME_NONE; id = t->v[id].next)
		if (t->v[id].kind == kind && strcmp(t->v[id].name, name) == 0)
			return id;
	struct frame f = {
	    .kind = (uint8_t)kind, .name = oob_arena_strdup(t->arena, name), .next = first};
	uint32_t id = frame_add(t, &f);
	*slot = id; /* the new frame heads its hash chain */
	return id;
}
