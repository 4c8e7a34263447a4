/*
 * minstret TRACE < COUNTS: the record index of one hart's trace that a
 * reading of minstret N under QEMU -icount stops at, for each N on stdin
 * (one a line), as "N INDEX [INDEX+1]" lines, or "N idle" past the hart's
 * first wfi.
 * Summary lines ("# ...") on stderr. For test_sample_exact.sh; shares no
 * code with the reconstruction: only the trace reader, and its own rules
 * (docs/formats/SAMPLES.md, "minstret and the record index"):
 *
 * - The trace records every instruction QEMU started, minstret counts those
 *   that retired. A record k did not retire when the hart trapped at it and
 *   the handler's return goes back to it (a page fault: re-executed), or
 *   when it is a CSR access that trapped and whose handler returns past it
 *   (an illegal CSR, emulated or probed by the firmware), except a write of
 *   an interrupt enable (sstatus, mstatus, sie, mie): an interrupt taken
 *   right after it, which returns to it or past it, came after it retired.
 * - A trap is a record whose successor is not one its instruction can go to
 *   (the next instruction, a branch's or jal's target; jalr and xRET go
 *   anywhere). Traps nest; an sret or mret returns from the innermost.
 * - The record the hart stops at after N retired is the first index i with
 *   i - (records before i that did not retire) = N; when record i itself
 *   did not retire, the stub may have stopped it before the attempt or
 *   after the trap it raised: "N i i+1".
 * - Under -icount minstret is QEMU's virtual clock in ns (shift=0: one per
 *   instruction). A wfi stops the hart and, with sleep=off, the clock jumps
 *   to the next timer deadline, which the trace does not show: past the
 *   first wfi the index is unknown ("idle").
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "trace/trace.h"
#include "util/oob_mem.h"

#define WFI  0x10500073u
#define SRET 0x10200073u
#define MRET 0x30200073u

struct vec {
	uint64_t *v;
	size_t n, cap;
};

static void push(struct vec *s, uint64_t x)
{
	oob_xgrow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v));
	s->v[s->n++] = x;
}

static int64_t sx(uint64_t v, int bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

static unsigned len_of(uint32_t in)
{
	return (in & 3) == 3 ? 4 : 2;
}

/* 1 when next may follow the instruction in at pc without a trap. */
static int follows(uint64_t pc, uint32_t in, uint64_t next)
{
	if (next == pc + len_of(in))
		return 1;
	uint32_t op = in & 0x7f, q = in & 3, f3 = (in >> 13) & 7;
	uint64_t im;
	if (q == 3) {
		if (op == 0x67 || in == SRET || in == MRET) /* jalr, xret: anywhere */
			return 1;
		if (op == 0x6f) {
			im = ((in >> 31) & 1) << 20 | ((in >> 12) & 0xff) << 12 |
			     ((in >> 20) & 1) << 11 | ((in >> 21) & 0x3ff) << 1;
			return next == pc + (uint64_t)sx(im, 21);
		}
		if (op == 0x63) {
			im = ((in >> 31) & 1) << 12 | ((in >> 7) & 1) << 11 |
			     ((in >> 25) & 0x3f) << 5 | ((in >> 8) & 0xf) << 1;
			return next == pc + (uint64_t)sx(im, 13);
		}
		return 0;
	}
	if (q == 2 && f3 == 4 && ((in >> 2) & 0x1f) == 0) /* c.jr, c.jalr */
		return 1;
	if (q == 1 && f3 == 5) { /* c.j */
		im = ((in >> 12) & 1) << 11 | ((in >> 11) & 1) << 4 | ((in >> 9) & 3) << 8 |
		     ((in >> 8) & 1) << 10 | ((in >> 7) & 1) << 6 | ((in >> 6) & 1) << 7 |
		     ((in >> 3) & 7) << 1 | ((in >> 2) & 1) << 5;
		return next == pc + (uint64_t)sx(im, 12);
	}
	if (q == 1 && f3 >= 6) { /* c.beqz, c.bnez */
		im = ((in >> 12) & 1) << 8 | ((in >> 10) & 3) << 3 | ((in >> 5) & 3) << 6 |
		     ((in >> 3) & 3) << 1 | ((in >> 2) & 1) << 5;
		return next == pc + (uint64_t)sx(im, 9);
	}
	return 0;
}

static int is_csr(uint32_t in)
{
	return (in & 0x7f) == 0x73 && ((in >> 12) & 7) != 0;
}

static int enables_irqs(uint32_t in)
{
	uint32_t csr = in >> 20;
	return csr == 0x100 || csr == 0x300 || csr == 0x104 || csr == 0x304;
}

struct rec {
	uint64_t pc;
	uint32_t insn;
};

struct scan {
	struct vec traps; /* open traps: index of the trapping record */
	struct rec *tpc;  /* and its pc and bits, by the same position */
	size_t tcap;
	struct vec lost; /* indices of records that did not retire, ascending */
	struct vec wfis; /* indices of wfi records */
	struct vec late; /* pcs of the records from the first wfi on */
	uint64_t entries, faults, csrs, first_wfi, k;
	struct rec prev;
	int have_prev;
};

static void note_return(struct scan *s, uint64_t to)
{
	if (!s->traps.n)
		return;
	size_t top = --s->traps.n;
	struct rec t = s->tpc[top];
	uint64_t at = s->traps.v[top];
	if (to == t.pc && !is_csr(t.insn)) {
		push(&s->lost, at);
		s->faults++;
	} else if (to == t.pc + len_of(t.insn) && is_csr(t.insn) && !enables_irqs(t.insn)) {
		push(&s->lost, at);
		s->csrs++;
	}
}

/* Record k (pc, in) after s->prev. */
static void step(struct scan *s, uint64_t pc, uint32_t in)
{
	if (s->have_prev) {
		struct rec p = s->prev;
		if (p.insn == SRET || p.insn == MRET) {
			note_return(s, pc);
		} else if (!follows(p.pc, p.insn, pc)) {
			oob_xgrow((void **)&s->tpc, &s->tcap, s->traps.n + 1, sizeof(*s->tpc));
			s->tpc[s->traps.n] = p;
			push(&s->traps, s->k - 1);
			s->entries++;
		}
	}
	if (in == WFI) {
		if (s->first_wfi == UINT64_MAX)
			s->first_wfi = s->k;
		push(&s->wfis, s->k);
	}
	if (s->first_wfi != UINT64_MAX)
		push(&s->late, pc);
	s->prev = (struct rec){pc, in};
	s->have_prev = 1;
	s->k++;
}

/* Records before i that did not retire. */
static uint64_t lost_before(const struct scan *s, uint64_t i)
{
	size_t lo = 0, hi = s->lost.n;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (s->lost.v[m] < i)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

/* The first index i with i - lost_before(i) = n (lost[k] - k rises). */
static uint64_t index_of(const struct scan *s, uint64_t n)
{
	size_t lo = 0, hi = s->lost.n;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (s->lost.v[m] - m < n)
			lo = m + 1;
		else
			hi = m;
	}
	return n + lo;
}

static uint64_t late_pc(const struct scan *s, uint64_t i)
{
	return i >= s->first_wfi && i - s->first_wfi < s->late.n ? s->late.v[i - s->first_wfi] : 0;
}

/* The last record of segment k (after wfi k; -1: before the first). */
static uint64_t seg_end(const struct scan *s, long k)
{
	return (size_t)(k + 1) < s->wfis.n ? s->wfis.v[k + 1] : s->k - 1;
}

struct sample {
	uint64_t n, pc;
};

/* How many of the samples from v[0] on map, with warp w, to a record of
 * segment k with their pc (counting stops at the first that leaves it). */
static size_t score(const struct scan *s, const struct sample *v, size_t nv, long k, uint64_t w)
{
	size_t c = 0;
	for (size_t i = 0; i < nv && i < 64; i++) {
		if (v[i].n < w)
			break;
		uint64_t idx = index_of(s, v[i].n - w);
		if (idx > seg_end(s, k))
			break;
		c += late_pc(s, idx) == v[i].pc;
	}
	return c;
}

/* The warp after wfi k that maps the most of v[0..nv) onto their pcs,
 * v[0] on a record of segment k, and at least one more sample (0: none:
 * one pc alone is too easily met again in code that repeats). */
static uint64_t fit(const struct scan *s, const struct sample *v, size_t nv, long k, uint64_t w0,
		    uint64_t *at)
{
	uint64_t best = 0;
	size_t best_score = 0;
	for (uint64_t j = s->wfis.v[k] + 1; j <= seg_end(s, k); j++) {
		if (late_pc(s, j) != v[0].pc)
			continue;
		uint64_t t = j - lost_before(s, j);
		if (v[0].n <= t || v[0].n - t <= w0)
			continue;
		size_t sc = score(s, v, nv, k, v[0].n - t);
		if (sc >= 2 && sc > best_score) { /* another sample agrees */
			best_score = sc;
			best = v[0].n - t;
			*at = j;
		}
	}
	return best;
}

/* Prints each sample's record: "N INDEX [INDEX+1]", "N INDEX fit" (the
 * first past a wfi, whose index fitted the warp), "N idle". */
static void map_all(const struct scan *s, const struct sample *v, size_t nv)
{
	uint64_t w = 0; /* the clock's jumps at the wfis before segment k */
	long k = -1;
	for (size_t i = 0; i < nv; i++) {
		uint64_t n = v[i].n, idx = n >= w ? index_of(s, n - w) : 0;
		if (i && n < v[i - 1].n) { /* not sorted: start over */
			w = 0;
			k = -1;
			idx = index_of(s, n);
		}
		if (n >= w && idx <= seg_end(s, k)) {
			size_t j = lost_before(s, idx);
			if (j < s->lost.n && s->lost.v[j] == idx) /* at the fault or its trap */
				printf("%llu %" PRIu64 " %" PRIu64 "\n", (unsigned long long)n, idx,
				       idx + 1);
			else
				printf("%llu %" PRIu64 "\n", (unsigned long long)n, idx);
			continue;
		}
		uint64_t at = 0, nw = 0;
		long nk = k + 1;
		for (; v[i].pc && (size_t)nk < s->wfis.n && !nw; nk++)
			nw = fit(s, v + i, nv - i, nk, w, &at);
		if (!nw) {
			printf("%llu idle\n", (unsigned long long)n);
			continue;
		}
		w = nw;
		k = nk - 1;
		printf("%llu %" PRIu64 " fit\n", (unsigned long long)n, at);
		fprintf(stderr,
			"# minstret: after the wfi at %" PRIu64 ", the clock is %" PRIu64
			" ahead of the records retired\n",
			s->wfis.v[k], w);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: minstret TRACE < \"N [PC]\" LINES\n");
		return 2;
	}
	struct trace_opts o = {.format = TRACE_FMT_AUTO};
	struct oob_err err = {0};
	struct trace_reader *r = trace_open(argv[1], &o, &err);
	if (!r) {
		fprintf(stderr, "minstret: %s\n", err.msg);
		return 1;
	}
	struct scan s = {.first_wfi = UINT64_MAX};
	const struct trace_batch *b;
	int rc;
	while ((rc = trace_next(r, &b, &err)) > 0) {
		if (b->hart != 0)
			continue;
		if (!b->insn) {
			fprintf(stderr, "minstret: %s: the trace has no instruction bits\n",
				argv[1]);
			return 1;
		}
		for (uint32_t i = 0; i < b->n; i++)
			step(&s, b->pc[i], b->insn[i]);
	}
	trace_close(r);
	if (rc < 0) {
		fprintf(stderr, "minstret: %s\n", err.msg);
		return 1;
	}
	fprintf(stderr,
		"# minstret: %" PRIu64 " records, %" PRIu64 " traps, %" PRIu64
		" did not retire (%" PRIu64 " faults re-executed, %" PRIu64
		" CSR accesses emulated), %zu wfi, the first at %" PRId64 "\n",
		s.k, s.entries, s.lost.n, s.faults, s.csrs, s.wfis.n,
		s.first_wfi == UINT64_MAX ? (int64_t)-1 : (int64_t)s.first_wfi);
	struct sample *v = NULL;
	size_t nv = 0, cap = 0;
	char line[128];
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long long n, pc = 0;
		if (sscanf(line, "%llu %llx", &n, &pc) < 1)
			continue;
		oob_xgrow((void **)&v, &cap, nv + 1, sizeof(*v));
		v[nv++] = (struct sample){n, pc};
	}
	map_all(&s, v, nv);
	free(v);
	free(s.traps.v);
	free(s.tpc);
	free(s.lost.v);
	free(s.wfis.v);
	free(s.late.v);
	return 0;
}
