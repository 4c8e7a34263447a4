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
	m->has_empty_key = 0;
	m->empty_key_val = 0;
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
	m->has_empty_key = 0;
	m->empty_key_val = 0;
}

static void rehash(struct oob_map *m)
{
	struct oob_map_slot *old = m->slots;
	size_t oldcap = m->mask + 1, count = m->count;
	int has_empty_key = m->has_empty_key;
	uint64_t empty_key_val = m->empty_key_val;
	alloc_slots(m, oldcap * 2);
	m->has_empty_key = has_empty_key;
	m->empty_key_val = empty_key_val;
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
	if (key == OOB_MAP_EMPTY) {
		m->has_empty_key = 1;
		m->empty_key_val = 0;
		m->count++;
		if (inserted)
			*inserted = 1;
		return &m->empty_key_val;
	}
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

int oob_map_next(const struct oob_map *m, size_t *pos, uint64_t *key, uint64_t *val)
{
	/* Positions 0..mask are the table; mask + 1 is the out-of-table key. */
	for (; *pos <= m->mask; (*pos)++) {
		const struct oob_map_slot *s = &m->slots[*pos];
		if (s->key != OOB_MAP_EMPTY) {
			*key = s->key;
			*val = s->val;
			(*pos)++;
			return 1;
		}
	}
	if (*pos == m->mask + 1 && m->has_empty_key) {
		*key = OOB_MAP_EMPTY;
		*val = m->empty_key_val;
		(*pos)++;
		return 1;
	}
	return 0;
}
