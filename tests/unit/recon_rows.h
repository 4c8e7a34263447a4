/*
 * recon_rows.h: the row runner of test_recon, test_recon_tasks and
 * test_recon_go, which feed records directly through
 * recon_new/start/feed/finish. Each case is a row of pcs (function + offset
 * in tests/fixtures/sym/recon.S, recon-kernel.S, or recon-go.S for the Go
 * rows; instruction bits where the code is in no ELF) and the folded stacks
 * they must give, worked out by hand from the rules
 * (docs/RECONSTRUCTION.md): each record counts one instruction for the
 * stack it runs on, and a call's, return's or trap's target record already
 * runs on the new stack. Static, like oobtest.h (whose counters it shares):
 * included once by each of those programs.
 */
#ifndef OOB_RECON_ROWS_H
#define OOB_RECON_ROWS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oobtest.h"
#include "profile/profile.h"
#include "recon/recon.h"
#include "sym/sym.h"

#define KVEC	  0xffffffff80000000ull /* a trap handler in no ELF */
#define NOP	  0x00000013u
#define SRET	  0x10200073u
#define TRAMP	  0x4000801000ull /* QEMU user mode's sigreturn trampoline: in no ELF */
#define LI_A7_139 0x08b00893u	  /* li a7, 139 (rt_sigreturn) */
#define ECALL	  0x00000073u

#define MAXRECS 40 /* records of a row */

/* One record: function and offset, or an absolute pc (fn NULL) with bits. */
struct rec {
	const char *fn;
	uint64_t off;
	uint32_t bits;
};

struct row {
	const char *name;
	struct rec recs[MAXRECS];
	const char *events;   /* sideband events (JSON Lines), or NULL */
	const char *want[24]; /* folded stacks, sorted */
	int kernel;	      /* give recon-kernel.S's ELF too */
	int go;		      /* recon-go.S's ELF instead of recon.S's */
	int pconly;	      /* the trace has pcs only (no instruction bits) */
	uint64_t tp[MAXRECS]; /* registers: a write of tp (x4) by the record, 0: none */
	uint64_t sp[MAXRECS]; /* a write of sp (x2) by the record, 0: none (3.6) */
	enum recon_nonlocal nl;
	uint64_t calls, returns, tail_calls, repairs_unwind, returns_above, swaps, traps,
	    trap_returns, switch_new_tasks, switch_resumes, longjmps, ambiguous, eh_landings,
	    sp_landings;
	uint64_t switches;	      /* the profile's count of context switches */
	uint64_t undos;		      /* switch_undos */
	uint64_t user_fixes, misfits; /* switch_user_fixes, switch_misfits */
	uint32_t split;		      /* a second batch begins at this record, 0: one batch */
	uint8_t hart[MAXRECS];	      /* the hart each record retired on (a batch per run) */
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The profile's folded stacks, sorted, in lines[] (n of them); 0 or -1. */
static int folded(const struct profile *p, char **buf, char *lines[], size_t cap, size_t *n)
{
	size_t len;
	FILE *f = open_memstream(buf, &len);
	if (!f || profile_write_folded(p, f, PROFILE_INSNS, 0) < 0)
		return -1;
	fclose(f);
	*n = 0;
	for (char *save = NULL, *l = strtok_r(*buf, "\n", &save); l && *n < cap;
	     l = strtok_r(NULL, "\n", &save))
		lines[(*n)++] = l;
	qsort(lines, *n, sizeof(*lines), cmp_str);
	return 0;
}

static const char *elf, *kelf, *gelf;
static const struct row *cur;

/* The address of function fn in the ELFs of the row, or 0. */
static uint64_t func_at(struct sym_binary *const *bins, size_t n, const char *fn)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t a = sym_binary_find_func(bins[k], fn);
		if (a)
			return a;
	}
	return 0;
}

static void run_row(void)
{
	const struct row *w = cur;
	struct oob_err err = {0};
	struct recon_elf e[2] = {{w->go ? gelf : elf, RECON_BASE_LINK}, {kelf, RECON_BASE_LINK}};
	size_t ne = w->kernel ? 2 : 1;
	struct sym_binary *bins[2] = {NULL, NULL};
	for (size_t k = 0; k < ne; k++)
		bins[k] = e[k].path ? sym_binary_open(e[k].path, &err) : NULL;
	uint64_t pc[MAXRECS];
	uint32_t insn[MAXRECS];
	uint32_t n = 0;
	for (; n < MAXRECS && (w->recs[n].fn || w->recs[n].off); n++) {
		const struct rec *c = &w->recs[n];
		uint64_t at = c->fn ? func_at(bins, ne, c->fn) : 0;
		pc[n] = at + c->off;
		insn[n] = c->bits; /* 0: from the ELF */
		if (c->fn && !at)
			n = 99; /* a function the fixture lacks */
	}
	for (size_t k = 0; k < ne; k++)
		sym_binary_free(bins[k]);
	CHECK(n <= MAXRECS);
	const char *evp = NULL;
	if (w->events) {
		evp = oobtest_out("recon", "events.jsonl");
		FILE *f = fopen(evp, "w");
		CHECK(f);
		fputs(w->events, f);
		fclose(f);
	}
	struct recon_opts o = {.elfs = e, .nelfs = ne, .events_path = evp, .nonlocal = w->nl};
	struct recon *r = recon_new(&o, &err);
	CHECK(r);
	struct trace_extra x[2 * MAXRECS];
	uint32_t nx = 0;
	for (uint32_t k = 0; k < n; k++) { /* sorted by record */
		if (w->sp[k])
			x[nx++] = (struct trace_extra){
			    .idx = k, .kind = TRACE_X_REG, .num = 2, .val = w->sp[k]};
		if (w->tp[k])
			x[nx++] = (struct trace_extra){
			    .idx = k, .kind = TRACE_X_REG, .num = 4, .val = w->tp[k]};
	}
	unsigned fields = (w->pconly ? 0 : TRACE_F_INSN) | (nx ? TRACE_F_REGS : 0);
	CHECK_EQ(recon_start(r, fields, "test", &err), 0);
	/* a batch per run of records of one hart; the records from w->split
	 * on begin another batch */
	for (uint32_t at = 0, xa = 0; at < n;) {
		uint32_t end = at + 1, xe = xa;
		while (end < n && end != w->split && w->hart[end] == w->hart[at])
			end++;
		while (xe < nx && x[xe].idx < end)
			x[xe++].idx -= at;
		struct trace_batch b = {.n = end - at,
					.hart = w->hart[at],
					.pc = pc + at,
					.insn = w->pconly ? NULL : insn + at,
					.x = x + xa,
					.nx = xe - xa};
		CHECK_EQ(recon_feed(r, &b), 0);
		at = end;
		xa = xe;
	}
	struct profile *p = NULL;
	CHECK_EQ(recon_finish(r, &p), 0);
	recon_free(r);
	char *buf = NULL, *lines[32];
	size_t nl = 0;
	int rc = folded(p, &buf, lines, 32, &nl);
	const struct profile_stats *st = profile_stats(p);
	struct profile_stats s = *st;
	uint64_t switches = profile_switches(p);
	profile_free(p);
	if (rc < 0) {
		free(buf);
		CHECK(rc == 0);
	}
	size_t nw = 0;
	while (nw < sizeof(w->want) / sizeof(w->want[0]) && w->want[nw])
		nw++;
	char got[1024] = "";
	for (size_t k = 0; k < nl; k++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? " | " : "",
			 lines[k]);
	int same = nl == nw;
	for (size_t k = 0; same && k < nw; k++)
		same = strcmp(lines[k], w->want[k]) == 0;
	free(buf);
	if (!same)
		CHECK_STR(got, "the stacks of the row");
	CHECK_EQ(s.instructions, n);
	CHECK_EQ(s.calls, w->calls);
	CHECK_EQ(s.returns, w->returns);
	CHECK_EQ(s.tail_calls, w->tail_calls);
	CHECK_EQ(s.repairs_unwind, w->repairs_unwind);
	CHECK_EQ(s.repairs_unknown, 0);
	CHECK_EQ(s.returns_above, w->returns_above);
	CHECK_EQ(s.swaps, w->swaps);
	CHECK_EQ(s.traps, w->traps);
	CHECK_EQ(s.trap_returns, w->trap_returns);
	CHECK_EQ(s.switch_new_tasks, w->switch_new_tasks);
	CHECK_EQ(s.switch_resumes, w->switch_resumes);
	CHECK_EQ(s.longjmps, w->longjmps);
	CHECK_EQ(s.repairs_ambiguous, w->ambiguous);
	CHECK_EQ(s.eh_landings, w->eh_landings);
	CHECK_EQ(s.sp_landings, w->sp_landings);
	CHECK_EQ(switches, w->switches);
	CHECK_EQ(s.switch_undos, w->undos);
	CHECK_EQ(s.switch_user_fixes, w->user_fixes);
	CHECK_EQ(s.switch_misfits, w->misfits);
}

/* Runs every row of rows[n] as a case of test (a SKIP line for a row whose
 * fixture ELF gen-sym.sh did not make). */
static void recon_rows_run(const char *test, const struct row *rows, size_t n)
{
	elf = oobtest_gen("sym/recon");
	kelf = oobtest_gen("sym/recon-kernel");
	gelf = oobtest_gen("sym/recon-go");
	for (size_t k = 0; k < n; k++) {
		cur = &rows[k];
		if (!elf || (rows[k].kernel && !kelf) || (rows[k].go && !gelf)) {
			printf("SKIP: %s: %s: no tests/gen/sym/recon%s (gen-sym.sh)\n", test,
			       rows[k].name,
			       !elf	    ? ""
			       : rows[k].go ? "-go"
					    : "-kernel");
			continue;
		}
		oobtest_run(rows[k].name, run_row);
	}
}

#endif
