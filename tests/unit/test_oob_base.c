#include "util/oob_err.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"
#include "oobtest.h"

static void err_set_and_prefix(void)
{
	struct oob_err e;
	oob_err_clear(&e);
	CHECK_EQ(oob_err_set(&e, -EINVAL, "line %d: bad", 7), -EINVAL);
	CHECK_STR(e.msg, "line 7: bad");
	oob_err_prefix(&e, "trace %s", "x.log");
	CHECK_STR(e.msg, "trace x.log: line 7: bad");
	CHECK_EQ(oob_err_set(NULL, -ENOENT, "ignored"), -ENOENT);
}

static void err_http_mapping(void)
{
	CHECK_EQ(oob_err_http_status(-EINVAL), 400);
	CHECK_EQ(oob_err_http_status(-ENOENT), 404);
	CHECK_EQ(oob_err_http_status(-EFBIG), 413);
	CHECK_EQ(oob_err_http_status(-ENOSPC), 507);
	CHECK_EQ(oob_err_http_status(-EIO), 500);
	CHECK_STR(oob_err_code_name(-ENOENT), "not_found");
}

static void arena_alignment_and_big_blocks(void)
{
	struct oob_arena *a = oob_arena_new();
	for (int i = 1; i < 5000; i += 37) {
		char *p = oob_arena_alloc(a, (size_t)i);
		CHECK(((uintptr_t)p % _Alignof(max_align_t)) == 0);
		memset(p, 0xab, (size_t)i);
	}
	char *big = oob_arena_zalloc(a, 1 << 20);
	CHECK(big[0] == 0 && big[(1 << 20) - 1] == 0);
	CHECK_STR(oob_arena_strndup(a, "hello world", 5), "hello");
	CHECK(oob_arena_used(a) >= (1 << 20));
	oob_arena_free(a);
}

static void xgrow_grows_geometrically(void)
{
	int *v = NULL;
	size_t cap = 0;
	for (int i = 0; i < 1000; i++) {
		oob_xgrow((void **)&v, &cap, (size_t)i + 1, sizeof(*v));
		v[i] = i;
	}
	CHECK(cap >= 1000 && cap < 4000);
	CHECK_EQ(v[999], 999);
	free(v);
}

static void log_levels_parse(void)
{
	enum oob_log_level l;
	CHECK_EQ(oob_log_parse_level("debug", &l), 0);
	CHECK_EQ(l, OOB_LOG_DEBUG);
	CHECK_EQ(oob_log_parse_level("loud", &l), -EINVAL);
}

int main(void)
{
	OOBTEST_BEGIN("test_oob_base");
	RUN(err_set_and_prefix);
	RUN(err_http_mapping);
	RUN(arena_alignment_and_big_blocks);
	RUN(xgrow_grows_geometrically);
	RUN(log_levels_parse);
	return OOBTEST_END();
}
