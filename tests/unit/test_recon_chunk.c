/*
 * test_recon_chunk: a trace cut into chunks, each run speculatively and
 * joined (recon_chunk.c, RECONSTRUCTION.md 16), gives the sequential run's
 * profile node for node, frame for frame, and the same stats; and both give
 * the stacks the generator below meant (its own model of the program, not
 * oobprof's). The code is tests/fixtures/sym/recon.S's jr (a recursion
 * whose frames may take setjmp, and whose deepest frame calls __longjmp):
 *  - a deep recursion: chunks start deep inside it and return above their
 *    start level after level;
 *  - a longjmp from the deepest frame to the outermost's setjmp site, with
 *    chunk boundaries between the setjmp and the longjmp;
 *  - code of no ELF whose bits only later records of the trace's batch
 *    carry: a chunk cut inside the batch learns them as the sequential run
 *    does, before its records run.
 * Chunk sizes are small and coprime with the recursion's period, so chunks
 * start at every kind of record.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oobtest.h"
#include "profile/profile.h"
#include "recon/recon_impl.h"
#include "sym/sym.h"

#define MAXREC	 8192
#define MAXDEPTH 512

/* The generator: the records, and the stack each one runs on (the truth). */
struct gen {
	uint64_t jr, setjmp, longjmp; /* entries */
	uint64_t pc[MAXREC];
	uint32_t n;
	const char *stk[MAXDEPTH];
	uint32_t depth;
	char *truth[MAXREC]; /* "jr;jr;__longjmp" per record */
};

static void emit(struct gen *g, uint64_t entry, uint64_t off)
{
	char buf[MAXDEPTH * 12] = "";
	for (uint32_t k = 0; k < g->depth; k++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", k ? ";" : "",
			 g->stk[k]);
	g->truth[g->n] = strdup(buf);
	g->pc[g->n++] = entry + off;
}

static void push(struct gen *g, const char *fn)
{
	g->stk[g->depth++] = fn;
}

/* __longjmp called as a plain function from jr+20: it returns to jr+24. */
static void leaf_call(struct gen *g)
{
	emit(g, g->jr, 20);
	push(g, "__longjmp");
	emit(g, g->longjmp, 0);
	emit(g, g->longjmp, 4);
	g->depth--;
}

/* A jr frame at level (a0 = 0: no setjmp), recursing down to depth d and
 * returning normally. */
static void recurse(struct gen *g, int level, int d)
{
	emit(g, g->jr, 0);
	emit(g, g->jr, 12);
	if (level < d) {
		emit(g, g->jr, 16);
		push(g, "jr");
		recurse(g, level + 1, d);
		g->depth--; /* its ret (jr+24) lands at our +20 */
	}
	leaf_call(g);
	emit(g, g->jr, 24);
}

/* The outermost jr takes setjmp; the deepest frame's __longjmp lands at its
 * return site (+8), which then returns. */
static void longjmp_row(struct gen *g, int d)
{
	push(g, "jr");
	emit(g, g->jr, 0);
	emit(g, g->jr, 4);
	push(g, "_setjmp");
	emit(g, g->setjmp, 0);
	emit(g, g->setjmp, 4);
	g->depth--;
	emit(g, g->jr, 8);
	emit(g, g->jr, 12);
	emit(g, g->jr, 16);
	for (int level = 1; level <= d; level++) {
		push(g, "jr");
		emit(g, g->jr, 0);
		emit(g, g->jr, 12);
		if (level < d)
			emit(g, g->jr, 16);
	}
	emit(g, g->jr, 20);
	push(g, "__longjmp");
	emit(g, g->longjmp, 0);
	emit(g, g->longjmp, 4);
	g->depth = 1; /* lands in the frame that called setjmp */
	emit(g, g->jr, 8);
	emit(g, g->jr, 24);
}

static const char *elf;

static struct recon *open_run(struct recon_opts *o)
{
	struct recon *r = recon_new(o, NULL);
	if (r && recon_start(r, 0, "test", NULL) < 0) {
		recon_free(r);
		return NULL;
	}
	return r;
}

/* The trace as one batch of the reader: pcs, and the bits of each record
 * when insn is not NULL (0: none), without an ELF then. Sequential: the
 * batch fed. Chunked: as recon_par.c does, the first chunk run directly,
 * each next one run speculatively and joined; *joined counts the chunks
 * the join took. */
static struct profile *reconstruct_bits(struct gen *g, uint32_t *insn, uint32_t per,
					uint64_t *joined)
{
	struct recon_elf e = {elf, RECON_BASE_LINK};
	struct recon_opts o = {.elfs = &e, .nelfs = insn ? 0 : 1};
	struct recon *r = open_run(&o);
	struct profile *p = NULL;
	if (!r)
		return NULL;
	struct trace_batch all = {.n = g->n, .pc = g->pc, .insn = insn};
	if (!per)
		recon_feed(r, &all);
	for (uint32_t s = 0; per && s < g->n; s += per) {
		struct recon_chunk c = {0};
		c.start = s;
		recon_chunk_add(&c, &all, s, s + per < g->n ? s + per : g->n);
		if (s)
			recon_chunk_spec(r, &c);
		*joined += (uint64_t)recon_chunk_join(r, &c);
		recon_chunk_free(&c);
	}
	recon_finish(r, &p);
	recon_free(r);
	return p;
}

static struct profile *reconstruct(struct gen *g, uint32_t per, uint64_t *joined)
{
	return reconstruct_bits(g, NULL, per, joined);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The generator's folded stacks, "stack count" lines sorted, in one string. */
static char *truth_folded(const struct gen *g)
{
	char **v = malloc(g->n * sizeof(*v));
	memcpy(v, g->truth, g->n * sizeof(*v));
	qsort(v, g->n, sizeof(*v), cmp_str);
	size_t cap = 1 << 20, len = 0;
	char *out = malloc(cap);
	out[0] = 0;
	for (uint32_t k = 0; k < g->n;) {
		uint32_t j = k;
		while (j < g->n && strcmp(v[j], v[k]) == 0)
			j++;
		len += (size_t)snprintf(out + len, cap - len, "%s %u\n", v[k], j - k);
		k = j;
	}
	free(v);
	return out;
}

static char *profile_folded(const struct profile *p)
{
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	profile_write_folded(p, f, PROFILE_INSNS, 0);
	fclose(f);
	/* sort the lines */
	char *lines[MAXREC];
	size_t n = 0;
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l && n < MAXREC;
	     l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	qsort(lines, n, sizeof(*lines), cmp_str);
	size_t cap = 1 << 20, at = 0;
	char *out = malloc(cap);
	out[0] = 0;
	for (size_t k = 0; k < n; k++)
		at += (size_t)snprintf(out + at, cap - at, "%s\n", lines[k]);
	free(buf);
	return out;
}

/* Node for node and frame for frame the same profile, same counters. */
static int same_profile(const struct profile *a, const struct profile *b, char *why, size_t n)
{
	if (profile_nnodes(a) != profile_nnodes(b) || profile_nframes(a) != profile_nframes(b)) {
		snprintf(why, n, "nodes %zu/%zu frames %zu/%zu", profile_nnodes(a),
			 profile_nnodes(b), profile_nframes(a), profile_nframes(b));
		return 0;
	}
	for (uint32_t k = 0; k < profile_nnodes(a); k++) {
		const struct profile_node *x = profile_node(a, k), *y = profile_node(b, k);
		if (x->parent != y->parent || x->frame != y->frame || x->calls != y->calls ||
		    x->self_insns != y->self_insns) {
			snprintf(why, n, "node %u differs", k);
			return 0;
		}
	}
	for (uint32_t k = 0; k < profile_nframes(a); k++)
		if (strcmp(profile_frame(a, k)->name, profile_frame(b, k)->name) != 0) {
			snprintf(why, n, "frame %u: %s / %s", k, profile_frame(a, k)->name,
				 profile_frame(b, k)->name);
			return 0;
		}
	const struct profile_stats *s = profile_stats(a), *t = profile_stats(b);
#define SAME(x)                                                                                    \
	if (s->x != t->x) {                                                                        \
		snprintf(why, n, "stat " #x ": %llu / %llu", (unsigned long long)s->x,             \
			 (unsigned long long)t->x);                                                \
		return 0;                                                                          \
	}
	PROFILE_STAT_FIELDS(SAME)
#undef SAME
	return 1;
}

static struct gen *gen_new(void)
{
	struct gen *g = calloc(1, sizeof(*g));
	struct sym_binary *bin = sym_binary_open(elf, NULL);
	if (!bin)
		return g;
	g->jr = sym_binary_find_func(bin, "jr");
	g->setjmp = sym_binary_find_func(bin, "_setjmp");
	g->longjmp = sym_binary_find_func(bin, "__longjmp");
	sym_binary_free(bin);
	return g;
}

static void gen_free(struct gen *g)
{
	for (uint32_t k = 0; k < g->n; k++)
		free(g->truth[k]);
	free(g);
}

/* The sequential run against the generator, then every chunk size against
 * the sequential run; the join must have taken chunks (not only re-run). */
static void check_cuts(struct gen *g, uint64_t longjmps)
{
	static const uint32_t sizes[] = {7, 13, 37, 64, 101, 500};
	uint64_t joined = 0;
	char why[256];
	struct profile *seq = reconstruct(g, 0, &joined);
	CHECK(seq);
	char *want = truth_folded(g), *got = profile_folded(seq);
	int same = strcmp(want, got) == 0;
	free(want);
	free(got);
	CHECK(same);
	CHECK_EQ(profile_stats(seq)->longjmps, longjmps);
	CHECK_EQ(profile_stats(seq)->repairs_unknown, 0);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct profile *par = reconstruct(g, sizes[k], &joined);
		CHECK(par);
		int ok = same_profile(seq, par, why, sizeof(why));
		profile_free(par);
		if (!ok) {
			profile_free(seq);
			CHECK_STR(why, "the same profile");
		}
	}
	profile_free(seq);
	CHECK(joined > 0);
}

static void test_deep_recursion(void)
{
	struct gen *g = gen_new();
	CHECK(g->jr);
	push(g, "jr");
	recurse(g, 0, 300);
	check_cuts(g, 0);
	gen_free(g);
}

static void test_longjmp_across_chunks(void)
{
	struct gen *g = gen_new();
	CHECK(g->jr && g->setjmp && g->longjmp);
	longjmp_row(g, 200);
	check_cuts(g, 1);
	gen_free(g);
}

/*
 * Code of no ELF, its bits in the trace: a loop at 0x10000 calls a function
 * at 0x11000 that returns at once, n times. The function's record carries
 * no bits in the first half of the loop (as a tracer may leave them out),
 * its bits in the second half. The sequential run learns a batch's bits
 * before it runs the batch: every one of the n calls returns, no record is
 * of unknown code. Chunks ending inside the batch before the first record
 * with those bits must learn them too (the CPython trace's gap, issue 16).
 */
static void test_bits_learned_ahead(void)
{
	enum { ITER = 200 };
	static const uint32_t jal_ra = 0x000010ef /* jal ra, +0x1000 */, c_ret = 0x8082,
			      j_back = 0xffdff06f /* j -4 */;
	static uint32_t insn[3 * ITER];
	static const uint32_t sizes[] = {7, 64, 299, 301, 400};
	struct gen *g = calloc(1, sizeof(*g));
	for (uint32_t k = 0; k < ITER; k++) {
		insn[g->n] = jal_ra;
		g->pc[g->n++] = 0x10000;
		insn[g->n] = k < ITER / 2 ? 0 : c_ret;
		g->pc[g->n++] = 0x11000;
		insn[g->n] = j_back;
		g->pc[g->n++] = 0x10004;
	}
	uint64_t joined = 0;
	char why[256];
	struct profile *seq = reconstruct_bits(g, insn, 0, &joined);
	CHECK(seq);
	CHECK_EQ(profile_stats(seq)->calls, ITER);
	CHECK_EQ(profile_stats(seq)->returns, ITER);
	CHECK_EQ(profile_stats(seq)->unknown_pcs, 0);
	CHECK_EQ(profile_stats(seq)->repairs_unwind, 0);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct profile *par = reconstruct_bits(g, insn, sizes[k], &joined);
		CHECK(par);
		int ok = same_profile(seq, par, why, sizeof(why));
		profile_free(par);
		if (!ok) {
			profile_free(seq);
			free(g);
			snprintf(oobtest_why, sizeof(oobtest_why), "chunks of %u: %s", sizes[k],
				 why);
			oobtest_failed_case = 1;
			return;
		}
	}
	profile_free(seq);
	free(g);
}

int main(void)
{
	OOBTEST_BEGIN("test_recon_chunk");
	RUN(test_bits_learned_ahead); /* no ELF */
	elf = oobtest_gen("sym/recon");
	if (!elf) {
		printf("SKIP: test_recon_chunk: all: no tests/gen/sym/recon (gen-sym.sh)\n");
		return OOBTEST_END();
	}
	RUN(test_deep_recursion);
	RUN(test_longjmp_across_chunks);
	return OOBTEST_END();
}
