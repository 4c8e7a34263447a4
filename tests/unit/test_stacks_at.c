/*
 * test_stacks_at: the exact stack at record indices (recon/stacks_at.h),
 * fed records through recon_new/feed/finish. The rows are pcs in
 * tests/fixtures/sym/recon.S (as test_recon's), and the stack each record
 * runs on is worked out by hand from the rule test_recon states: a call's,
 * return's or trap's target record already runs on the new stack. Then the
 * stacks of every index, counted, must be the profile's folded stacks with
 * their weights (the CCT's count of the same records, another path).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oobtest.h"
#include "profile/profile.h"
#include "recon/recon.h"
#include "recon/stacks_at.h"
#include "sym/sym.h"

#define KVEC 0xffffffff80000000ull /* a trap handler in no ELF */
#define NOP  0x00000013u
#define SRET 0x10200073u

struct rec {
	const char *fn;
	uint64_t off;
	uint32_t bits;
	const char *stack; /* the stack record runs on, innermost first */
};

/* main calls f and g (g calls f), then tail-calls h; u traps (ecall) into a
 * handler in no ELF that returns with sret. */
static const struct rec recs[] = {
    {"main", 0, 0, "main"},  {"main", 4, 0, "main"},  {"f", 0, 0, "f;main"},
    {"f", 4, 0, "f;main"},   {"main", 8, 0, "main"},  {"g", 0, 0, "g;main"},
    {"f", 0, 0, "f;g;main"}, {"f", 4, 0, "f;g;main"}, {"g", 4, 0, "g;main"},
    {"main", 12, 0, "main"}, {"h", 0, 0, "h"},	      {"h", 4, 0, "h"},
};

static const char *elf;

/* frames innermost first joined by ';' into buf. */
static void join(const struct profile *p, const struct stacks_at_stack *t, char *buf, size_t n)
{
	buf[0] = '\0';
	for (uint32_t d = 0; d < t->depth; d++)
		snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", d ? ";" : "",
			 profile_frame(p, t->frames[d])->name);
}

/* Feeds pcs through a reconstruction with a collector for at[0..nat). */
static struct stacks_at *run(const uint64_t *pc, const uint32_t *insn, uint32_t n,
			     const uint64_t *at, size_t nat, struct profile **p)
{
	struct oob_err err = {0};
	struct recon_elf e = {elf, RECON_BASE_LINK};
	struct stacks_at *s = stacks_at_new(0, at, nat, &err);
	if (!s)
		return NULL;
	struct recon_opts o = {.elfs = &e,
			       .nelfs = 1,
			       .on_event = stacks_at_event,
			       .event_ctx = s,
			       .on_batch = stacks_at_batch,
			       .batch_ctx = s};
	struct recon *r = recon_new(&o, &err);
	if (!r || recon_start(r, TRACE_F_INSN, "test", &err) < 0) {
		recon_free(r);
		stacks_at_free(s);
		return NULL;
	}
	/* two batches: an index in each, and one on the seam */
	uint32_t half = n / 2;
	struct trace_batch b1 = {.n = half, .pc = (uint64_t *)pc, .insn = (uint32_t *)insn};
	struct trace_batch b2 = {.n = n - half,
				 .pc = (uint64_t *)pc + half,
				 .insn = (uint32_t *)insn + half,
				 .seq = half};
	recon_feed(r, &b1);
	recon_feed(r, &b2);
	recon_finish(r, p);
	recon_free(r);
	stacks_at_finish(s);
	return s;
}

static void pcs_of(const struct rec *v, uint32_t n, uint64_t *pc, uint32_t *insn)
{
	struct oob_err err = {0};
	struct sym_binary *bin = sym_binary_open(elf, &err);
	for (uint32_t i = 0; i < n; i++) {
		pc[i] = v[i].fn ? sym_binary_find_func(bin, v[i].fn) + v[i].off : v[i].off;
		insn[i] = v[i].bits;
	}
	sym_binary_free(bin);
}

/* Every index, asked in reverse order with repeats: each stack as worked
 * out, in the order asked; past the end: not found. */
static void test_every_index(void)
{
	enum { N = sizeof(recs) / sizeof(recs[0]) };
	uint64_t pc[N], at[2 * N + 1];
	uint32_t insn[N];
	pcs_of(recs, N, pc, insn);
	for (uint32_t i = 0; i < N; i++)
		at[i] = at[N + i] = N - 1 - i;
	at[2 * N] = N; /* past the last record */
	struct profile *p = NULL;
	struct stacks_at *s = run(pc, insn, N, at, 2 * N + 1, &p);
	CHECK(s && p);
	CHECK_EQ(stacks_at_count(s), 2 * N + 1);
	CHECK_EQ(stacks_at_records(s), N);
	char got[256];
	for (size_t k = 0; k < 2 * N; k++) {
		const struct stacks_at_stack *t = stacks_at_get(s, k);
		const struct rec *w = &recs[t->at];
		CHECK_EQ(t->at, at[k]);
		CHECK(t->found);
		CHECK_EQ(t->pc, pc[t->at]);
		join(p, t, got, sizeof(got));
		CHECK_STR(got, w->stack);
	}
	CHECK(!stacks_at_get(s, 2 * N)->found);
	CHECK_EQ(stacks_at_get(s, 2 * N)->depth, 0);
	CHECK(stacks_at_get(s, 2 * N + 1) == NULL);
	stacks_at_free(s);
	profile_free(p);
}

/* The stacks of indices, reversed to root first and counted, as folded
 * lines sorted: what the profile's CCT says of the same records. */
static void folded_of(const struct profile *p, const struct stacks_at *s, char *out, size_t n)
{
	char lines[16][256], got[256];
	size_t nl = 0, cnt[16] = {0};
	for (size_t i = 0; i < stacks_at_count(s) && nl < 16; i++) {
		const struct stacks_at_stack *t = stacks_at_get(s, i);
		got[0] = '\0';
		for (uint32_t d = t->depth; d-- > 0;)
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s",
				 d + 1 < t->depth ? ";" : "", profile_frame(p, t->frames[d])->name);
		size_t k = 0;
		while (k < nl && strcmp(lines[k], got))
			k++;
		if (k == nl)
			snprintf(lines[nl++], sizeof(lines[0]), "%s", got);
		cnt[k]++;
	}
	qsort(lines, nl, sizeof(lines[0]), (int (*)(const void *, const void *))strcmp);
	out[0] = '\0';
	for (size_t k = 0; k < nl; k++) {
		size_t c = 0;
		for (size_t i = 0; i < stacks_at_count(s); i++) {
			const struct stacks_at_stack *t = stacks_at_get(s, i);
			char one[256] = "";
			for (uint32_t d = t->depth; d-- > 0;)
				snprintf(one + strlen(one), sizeof(one) - strlen(one), "%s%s",
					 d + 1 < t->depth ? ";" : "",
					 profile_frame(p, t->frames[d])->name);
			c += !strcmp(one, lines[k]);
		}
		snprintf(out + strlen(out), n - strlen(out), "%s %zu\n", lines[k], c);
	}
}

/* An ecall: the handler's records run on the trap marker above u; sret's
 * target is u again. Every index's stack, counted, is the folded profile. */
static void test_trap_and_profile(void)
{
	static const struct rec v[] = {
	    {"u", 0, 0, "u"},
	    {"u", 4, 0, "u"},
	    {NULL, KVEC, NOP, "0xffffffff80000000;[trap: ecall];u"},
	    {NULL, KVEC + 4, SRET, "0xffffffff80000000;[trap: ecall];u"},
	    {"u", 8, 0, "u"},
	    {"u", 12, 0, "u"},
	};
	enum { N = sizeof(v) / sizeof(v[0]) };
	uint64_t pc[N], at[N];
	uint32_t insn[N];
	pcs_of(v, N, pc, insn);
	for (uint32_t i = 0; i < N; i++)
		at[i] = i;
	struct profile *p = NULL;
	struct stacks_at *s = run(pc, insn, N, at, N, &p);
	CHECK(s && p);
	char got[256], want[1024], *buf = NULL;
	for (uint32_t i = 0; i < N; i++) {
		join(p, stacks_at_get(s, i), got, sizeof(got));
		CHECK_STR(got, v[i].stack);
	}
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f);
	profile_write_folded(p, f, PROFILE_INSNS, 0);
	fclose(f);
	folded_of(p, s, want, sizeof(want));
	CHECK_STR(buf, want);
	free(buf);
	stacks_at_free(s);
	profile_free(p);
}

static void test_errors(void)
{
	struct oob_err err = {0};
	CHECK(stacks_at_new(0, NULL, 0, &err) == NULL);
	CHECK_EQ(err.code, -EINVAL);
	/* a file of samples has no records */
	const char *path = oobtest_out("stacks_at", "samples.txt");
	FILE *f = fopen(path, "w");
	CHECK(f);
	fputs("# samples\n0x10000\n1\n", f);
	fclose(f);
	uint64_t at = 0;
	struct stacks_at *s = NULL;
	struct profile *p = NULL;
	struct recon_opts o = {0};
	CHECK_EQ(stacks_at_run(&o, &path, 1, 0, &at, 1, &s, &p, &err), -EINVAL);
	CHECK(strstr(err.msg, "samples") != NULL);
	CHECK(s == NULL && p == NULL);
}

int main(void)
{
	OOBTEST_BEGIN("test_stacks_at");
	elf = oobtest_gen("sym/recon");
	if (!elf) {
		printf("SKIP: test_stacks_at: no tests/gen/sym/recon (gen-sym.sh)\n");
		return 0;
	}
	RUN(test_every_index);
	RUN(test_trap_and_profile);
	RUN(test_errors);
	return OOBTEST_END();
}
