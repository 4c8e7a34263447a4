/* The reconstruction's data structures: hash map, frame interning, CCT,
 * shadow stack. Checked against naive reference implementations. */
#include "profile/cct.h"
#include "profile/frame.h"
#include "util/oob_map.h"
#include "oobtest.h"
#include "flow/stack.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void map_matches_reference(void)
{
	enum { N = 20000 };
	static uint64_t keys[N], vals[N];
	struct oob_map m;
	oob_map_init(&m, 4);
	for (int i = 0; i < N; i++) {
		/* small key range: many repeats overwrite */
		keys[i] = next_rand() % 7000;
		int ins;
		*oob_map_put(&m, keys[i], &ins) = (uint64_t)i;
		vals[i] = (uint64_t)i;
	}
	size_t distinct = 0;
	for (uint64_t k = 0; k < 7000; k++) {
		int last = -1;
		for (int i = 0; i < N; i++)
			if (keys[i] == k)
				last = i;
		uint64_t *v = oob_map_get(&m, k);
		if (last < 0) {
			CHECK(v == NULL);
		} else {
			distinct++;
			CHECK(v != NULL);
			CHECK_EQ(*v, vals[last]);
		}
	}
	CHECK_EQ(m.count, distinct);
	oob_map_clear(&m);
	CHECK(oob_map_get(&m, keys[0]) == NULL);
	oob_map_destroy(&m);
}

/* A trace can hold any pc, so every uint64_t must be a key, the slot marker
 * included (pc 0xffffffffffffffff used to come back as an empty slot). */
static void map_takes_every_key(void)
{
	static const uint64_t edge[] = {OOB_MAP_EMPTY, OOB_MAP_EMPTY - 1, 0, 1, 1ull << 63};
	struct oob_map m;
	oob_map_init(&m, 2);
	CHECK(oob_map_get(&m, OOB_MAP_EMPTY) == NULL);
	for (uint64_t i = 0; i < 5; i++) {
		int ins;
		*oob_map_put(&m, edge[i], &ins) = 100 + i;
		CHECK_EQ(ins, 1);
	}
	for (uint64_t i = 0; i < 3000; i++) /* rehashes keep the marker key */
		*oob_map_put(&m, 1000 + i, NULL) = i;
	CHECK_EQ(m.count, 3005);
	for (uint64_t i = 0; i < 5; i++) {
		uint64_t *v = oob_map_get(&m, edge[i]);
		CHECK(v != NULL && *v == 100 + i);
	}
	size_t pos = 0, seen = 0;
	uint64_t k, v, sum = 0, marker = 0;
	while (oob_map_next(&m, &pos, &k, &v)) {
		seen++;
		sum += v;
		marker += k == OOB_MAP_EMPTY;
	}
	CHECK_EQ(seen, 3005);
	CHECK_EQ(marker, 1);
	CHECK_EQ(sum, 100 + 101 + 102 + 103 + 104 + 2999ull * 3000 / 2);
	oob_map_clear(&m);
	CHECK(oob_map_get(&m, OOB_MAP_EMPTY) == NULL);
	CHECK_EQ(m.count, 0);
	oob_map_destroy(&m);
}

static void frames_intern_once(void)
{
	struct frame_table t;
	frame_table_init(&t);
	uint32_t a = frame_func(&t, 0, 0x10000, PROFILE_FRAME_USER);
	uint32_t b = frame_func(&t, 0, 0x10040, PROFILE_FRAME_USER);
	uint32_t a2 = frame_func(&t, 0, 0x10000, PROFILE_FRAME_USER);
	uint32_t other_space = frame_func(&t, 3, 0x10000, PROFILE_FRAME_USER);
	uint32_t m = frame_named(&t, PROFILE_FRAME_MARKER, "[trap: ecall]");
	uint32_t m2 = frame_named(&t, PROFILE_FRAME_MARKER, "[trap: ecall]");
	uint32_t k = frame_named(&t, PROFILE_FRAME_KERNEL, "[trap: ecall]");
	CHECK(a != b);
	CHECK_EQ(a, a2);
	CHECK(other_space != a);
	CHECK_EQ(m, m2);
	CHECK(k != m);
	CHECK_STR(frame_get(&t, m)->name, "[trap: ecall]");
	CHECK_EQ(frame_get(&t, other_space)->space, 3);
	for (int i = 0; i < 5000; i++) {
		char name[32];
		snprintf(name, sizeof(name), "label%d", i % 1000);
		uint32_t id = frame_named(&t, PROFILE_FRAME_KERNEL, name);
		CHECK_STR(frame_get(&t, id)->name, name);
	}
	CHECK_EQ(t.n, 3 + 2 + 1000); /* 3 functions, 2 named, 1000 labels */
	frame_table_destroy(&t);
}

static void cct_children_are_unique(void)
{
	struct cct c;
	cct_init(&c);
	uint32_t x = cct_child(&c, CCT_ROOT, 5);
	uint32_t y = cct_child(&c, x, 6);
	CHECK_EQ(cct_child(&c, CCT_ROOT, 5), x);
	CHECK_EQ(cct_child(&c, x, 6), y);
	uint32_t z = cct_child(&c, x, 7); /* memo now points at 7 */
	CHECK_EQ(cct_child(&c, x, 6), y); /* and back: the hash answers */
	CHECK(z != y);
	CHECK_EQ(c.v[y].parent, x);
	CHECK_EQ(c.n, 4);
	/* parents are always created before children */
	for (size_t i = 1; i < c.n; i++)
		CHECK(c.v[i].parent < i);
	cct_destroy(&c);
}

static void stack_segments(void)
{
	struct stack s;
	stack_init(&s);
	for (uint32_t i = 0; i < 100; i++)
		stack_push(&s, i, i, 0x1000 + i, 0);
	CHECK_EQ(stack_find_ret(&s, 0x1000 + 42), 42);
	stack_push(&s, 500, 500, STACK_RET_NONE, 1); /* trap marker */
	stack_push(&s, 501, 501, STACK_RET_NONE, 0);
	stack_push(&s, 502, 502, 0x2000, 0);
	CHECK_EQ(stack_last_marker(&s), 100);
	CHECK_EQ(stack_segment_base(&s), 101);
	CHECK_EQ(stack_find_ret(&s, 0x2000), 102);
	/* returns never look below the marker */
	CHECK_EQ(stack_find_ret(&s, 0x1000 + 42), -1);
	CHECK_EQ(stack_top(&s)->frame, 502);
	stack_destroy(&s);
}

int main(void)
{
	OOBTEST_BEGIN("test_recon_parts");
	RUN(map_matches_reference);
	RUN(map_takes_every_key);
	RUN(frames_intern_once);
	RUN(cct_children_are_unique);
	RUN(stack_segments);
	return OOBTEST_END();
}
