/* recon_look: reading batches ahead hands out the same batches, in the same
 * order, as the merge itself (compared with a second reader of the same
 * files), shows the following ones unchanged, and ends the way the merge
 * ends: a real trace cut short gives the same batches, then the same
 * error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oobtest.h"
#include "recon/recon_impl.h"
#include "trace/trace_merge.h"
#include "trace/trace_write.h"
#include "util/oob_mem.h"

/* A batch as the merge handed it out, copied. */
struct kept {
	struct trace_batch b;
	uint64_t *pc, *cycle;
	struct trace_extra *x;
};

static void keep(struct kept *k, const struct trace_batch *b)
{
	k->b = *b;
	k->pc = oob_xmalloc(b->n * sizeof(*k->pc));
	memcpy(k->pc, b->pc, b->n * sizeof(*k->pc));
	k->cycle = b->cycle ? oob_xmalloc(b->n * sizeof(*k->cycle)) : NULL;
	if (b->cycle)
		memcpy(k->cycle, b->cycle, b->n * sizeof(*k->cycle));
	k->x = oob_xmalloc((b->nx ? b->nx : 1) * sizeof(*k->x));
	memcpy(k->x, b->x, b->nx * sizeof(*k->x));
}

static int same(const struct kept *k, const struct trace_batch *b)
{
	if (k->b.n != b->n || k->b.hart != b->hart || k->b.seq != b->seq || k->b.nx != b->nx ||
	    !!k->cycle != !!b->cycle || memcmp(k->pc, b->pc, b->n * sizeof(*b->pc)))
		return 0;
	if (b->cycle && memcmp(k->cycle, b->cycle, b->n * sizeof(*b->cycle)))
		return 0;
	for (uint32_t i = 0; i < b->nx; i++)
		if (k->x[i].idx != b->x[i].idx || k->x[i].val != b->x[i].val ||
		    k->x[i].num != b->x[i].num)
			return 0;
	return 1;
}

/* Every batch of the merge, and how it ended. */
static struct kept *read_all(struct trace_merge *m, size_t *n, int *rc, struct oob_err *e)
{
	struct kept *v = NULL;
	const struct trace_batch *b;
	size_t cap = 0;
	*n = 0;
	while ((*rc = trace_merge_next(m, &b, e)) > 0) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			v = oob_xrealloc(v, cap * sizeof(*v));
		}
		keep(&v[(*n)++], b);
	}
	return v;
}

static void free_all(struct kept *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].pc);
		free(v[i].cycle);
		free(v[i].x);
	}
	free(v);
}

/* Reads paths through the look-ahead and holds every batch handed out,
 * and every batch it shows ahead, against a plain read of the same files. */
static void look_equals_merge(const char *const *paths, const struct trace_opts *opts, size_t nf,
			      int want_error)
{
	struct oob_err e1 = {0}, e2 = {0};
	struct trace_merge *m1 = trace_merge_open(paths, opts, nf, &e1);
	struct trace_merge *m2 = trace_merge_open(paths, opts, nf, &e2);
	CHECK(m1 && m2);
	size_t n;
	int rc1, rc2;
	struct kept *want = read_all(m1, &n, &rc1, &e1);
	CHECK(want_error ? rc1 < 0 : rc1 == 0);
	CHECK(n > 16); /* more batches than the look-ahead holds */
	struct recon_look *l = recon_look_new();
	const struct trace_batch *b;
	size_t k = 0, shown = 0;
	while ((rc2 = recon_look_next(l, m2, &b, &e2)) > 0) {
		CHECK(k < n);
		CHECK(same(&want[k], b));
		size_t j = 0;
		for (const struct trace_batch *a; (a = recon_look_ahead(l, j)); j++, shown++)
			CHECK(k + 1 + j < n && same(&want[k + 1 + j], a));
		/* as many ahead as were read: 15, or what is left */
		CHECK(j == (n - k - 1 < 15 ? n - k - 1 : 15) || (want_error && j < 15));
		CHECK(same(&want[k], b)); /* reading ahead left it as it was */
		k++;
	}
	CHECK_EQ(rc2, rc1);
	CHECK_EQ(k, n);
	CHECK(shown > 0);
	if (want_error)
		CHECK(strcmp(e2.msg, e1.msg) == 0);
	recon_look_free(l);
	free_all(want, n);
	trace_merge_close(m1);
	trace_merge_close(m2);
}

/* Three harts in three files, interleaved by cycle, with register extras:
 * the merge cuts its batches where the harts alternate. */
static void three_harts_with_extras(void)
{
	enum { NF = 3, N = 30000 };
	const char *paths[NF];
	struct trace_opts opts[NF];
	static const char *const names[NF] = {"a.oobt", "b.oobt", "c.oobt"};
	uint64_t *pc = oob_xcalloc(N, 8), *cyc = oob_xcalloc(N, 8), s = 7;
	struct trace_extra *x = oob_xcalloc(N, sizeof(*x));
	for (int f = 0; f < NF; f++) {
		struct oob_err e = {0};
		uint32_t nx = 0;
		uint64_t c = 100;
		for (uint32_t i = 0; i < N; i++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			c += (s >> 33) % 5;
			pc[i] = 0x10000ull * (uint64_t)(f + 1) + 4 * i;
			cyc[i] = c;
			if (i % 11 == 5)
				x[nx++] = (struct trace_extra){
				    .idx = i, .kind = TRACE_X_REG, .num = 2, .val = pc[i]};
		}
		paths[f] = oobtest_out("look", names[f]);
		struct trace_write_opts wo = {.format = TRACE_FMT_OOBT,
					      .fields = TRACE_F_CYCLE | TRACE_F_REGS};
		struct trace_writer *w = trace_writer_open(paths[f], &wo, &e);
		CHECK(w);
		for (uint32_t at = 0; at < N; at += 1000) {
			uint32_t lo = 0, hi = 0;
			while (lo < nx && x[lo].idx < at)
				lo++;
			for (hi = lo; hi < nx && x[hi].idx < at + 1000; hi++)
				x[hi].idx -= at;
			struct trace_batch b = {.n = 1000,
						.pc = pc + at,
						.cycle = cyc + at,
						.x = x + lo,
						.nx = hi - lo};
			CHECK_EQ(trace_writer_put(w, &b, &e), 0);
			for (uint32_t k = lo; k < hi; k++)
				x[k].idx += at;
		}
		CHECK_EQ(trace_writer_close(w, &e), 0);
		opts[f] = (struct trace_opts){.hart = (uint16_t)f};
	}
	free(pc);
	free(cyc);
	free(x);
	look_equals_merge(paths, opts, NF, 0);
}

/* A real trace (nl_ucontext, written as TracerV binary) whole, and cut in
 * the middle of a record: the batches before the damage, then the
 * reader's error, the same both ways. */
static void real_trace_cut_short(void)
{
	const char *src = oobtest_gen("nonlocal/nl_ucontext.oobt");
	struct stat st;
	if (stat(src, &st) < 0)
		SKIP("%s not generated", src);
	struct oob_err e = {0};
	struct trace_opts o = {0};
	struct trace_merge *m = trace_merge_open(&src, &o, 1, &e);
	CHECK(m);
	const char *trv = oobtest_out("look", "whole.trv");
	struct trace_write_opts wo = {.format = TRACE_FMT_TRACERV_BIN, .fields = TRACE_F_CYCLE};
	struct trace_writer *w = trace_writer_open(trv, &wo, &e);
	CHECK(w);
	const struct trace_batch *b;
	int rc;
	while ((rc = trace_merge_next(m, &b, &e)) > 0)
		CHECK_EQ(trace_writer_put(w, b, &e), 0);
	CHECK_EQ(rc, 0);
	CHECK_EQ(trace_writer_close(w, &e), 0);
	trace_merge_close(m);
	look_equals_merge(&trv, &o, 1, 0);
	/* cut 4 bytes into a record past the first 16 batches */
	CHECK(stat(trv, &st) == 0 && st.st_size > 16 * 20 * 4096);
	const char *cut = oobtest_out("look", "cut.trv");
	CHECK(truncate(trv, 16 * 20 * 4096 + 4) == 0 && rename(trv, cut) == 0);
	look_equals_merge(&cut, &o, 1, 1);
}

int main(void)
{
	OOBTEST_BEGIN("test_recon_look");
	RUN(three_harts_with_extras);
	RUN(real_trace_cut_short);
	return OOBTEST_END();
}
