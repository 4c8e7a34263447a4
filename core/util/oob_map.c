#include "util/oob_map.h"

#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"

static void alloc_slots(struct oob_map *m, size_t cap)
{
	m->slots = oob_xmalloc(cap * sizeof(*m->slots));
	/* OOB_MAP_EMPTY is all ones in both fields, so one memset marks every slot free. */
	memset(m->slots, 0xff, cap * sizeof(*m->slots));
	m->mask = cap - 1;
	m->count = 0;
}

void oob_map_init(struct oob_map *m, size_t initial_capacity)
{
	size_t cap = 16;
	while (cap < initial_capacity)
		cap *= 2;
	alloc_slots(m, cap);
}

void oob_map_destroy(struct oob_map *m)
{
	free(m->slots);
	m->slots = NULL;
	m->mask = 0;
	m->count = 0;
}

void oob_map_clear(struct oob_map *m)
{
	memset(m->slots, 0xff, (m->mask + 1) * sizeof(*m->slots));
	m->count = 0;
}

static void rehash(struct oob_map *m)
{
	struct oob_map_slot *old = m->slots;
	size_t oldcap = m->mask + 1, count = m->count;
	alloc_slots(m, oldcap * 2);
	for (size_t i = 0; i < oldcap; i++) {
		if (old[i].key == OOB_MAP_EMPTY)
			continue;
		size_t j = oob_map_hash(old[i].key) & m->mask;
		while (m->slots[j].key != OOB_MAP_EMPTY)
			j = (j + 1) & m->mask;
		m->slots[j] = old[i];
	}
	m->count = count;
	free(old);
}

uint64_t *oob_map_put(struct oob_map *m, uint64_t key, int *inserted)
{
	if (inserted)
		*inserted = 0;
	uint64_t *v = oob_map_get(m, key);
	if (v)
		return v;
	if ((m->count + 1) * 2 > m->mask + 1)
		rehash(m);
	size_t i = oob_map_hash(key) & m->mask;
	while (m->slots[i].key != OOB_MAP_EMPTY)
		i = (i + 1) & m->mask;
	m->slots[i].key = key;
	m->slots[i].val = 0;
	m->count++;
	if (inserted)
		*inserted = 1;
	return &m->slots[i].val;
}
