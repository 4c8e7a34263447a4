/*
 * oob_map: an open-addressing hash map from uint64_t keys to uint64_t values,
 * the one hash table of the core (code cache, block cache, frame interning,
 * calling-context tree). Linear probing, power-of-two capacity, grows at 50%
 * load; lookups never allocate. Every uint64_t is a valid key: the slot
 * marker OOB_MAP_EMPTY is itself stored beside the table, since a trace can
 * hold any pc (0xffffffffffffffff crashed the server when it was reserved).
 * Not thread-safe.
 */
#ifndef OOB_MAP_H
#define OOB_MAP_H

#include <stddef.h>
#include <stdint.h>

#define OOB_MAP_EMPTY UINT64_MAX

struct oob_map_slot {
	uint64_t key, val;
};

struct oob_map {
	struct oob_map_slot *slots;
	size_t mask;  /* capacity - 1 */
	size_t count; /* keys held, the out-of-table one included */
	int has_empty_key;
	uint64_t empty_key_val; /* the value of key OOB_MAP_EMPTY */
};

void oob_map_init(struct oob_map *m, size_t initial_capacity);
void oob_map_destroy(struct oob_map *m);
void oob_map_clear(struct oob_map *m);

/* Mixes a key into a well-distributed hash (the splitmix64 finalizer). */
static inline uint64_t oob_map_hash(uint64_t k)
{
	k ^= k >> 30;
	k *= 0xbf58476d1ce4e5b9ull;
	k ^= k >> 27;
	k *= 0x94d049bb133111ebull;
	k ^= k >> 31;
	return k;
}

/* Pointer to the value of key, or NULL if absent. Valid until the next insert. */
static inline uint64_t *oob_map_get(const struct oob_map *m, uint64_t key)
{
	if (__builtin_expect(key == OOB_MAP_EMPTY, 0))
		return m->has_empty_key ? (uint64_t *)&m->empty_key_val : NULL;
	for (size_t i = oob_map_hash(key) & m->mask;; i = (i + 1) & m->mask) {
		struct oob_map_slot *s = &m->slots[i];
		if (s->key == key)
			return &s->val;
		if (s->key == OOB_MAP_EMPTY)
			return NULL;
	}
}

/* Pointer to the value of key, inserting it with value 0 if absent (*inserted
 * says which; may be NULL). Valid until the next insert. */
uint64_t *oob_map_put(struct oob_map *m, uint64_t key, int *inserted);

/* Visits every key once, in no particular order: start with *pos = 0; returns
 * 0 when done. The map must not change during the walk. */
int oob_map_next(const struct oob_map *m, size_t *pos, uint64_t *key, uint64_t *val);

#endif
