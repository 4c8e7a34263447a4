/* goclock: the least-squares fit on known lines, its refusals, and the
 * alignment of a real run (tests/tools/gen-go.sh: a Go 1.19 riscv64 program
 * traced under qemu-riscv64) against ground truth from other tools: the
 * number of timed events from `go tool trace -d`, the address of
 * runtime.traceEventLocked from `go tool nm`, and the number of times QEMU
 * executed that address from the tracing plugin's own histogram. */
#include <errno.h>
#include <math.h>

#include "go/goclock.h"
#include "go/gotrace.h"
#include "oobtest.h"

static void line_anchors(struct goclock_anchor *a, size_t n, double slope, double icpt, uint64_t x0,
			 uint64_t dx)
{
	for (size_t i = 0; i < n; i++) {
		a[i] = (struct goclock_anchor){0};
		a[i].go = x0 + i * dx;
		a[i].trace = (uint64_t)llround(slope * (double)(i * dx) + icpt);
		a[i].go_off = 100 + i;
		a[i].kind = GOCLOCK_ANCHOR_EMIT;
	}
}

/* An exact line far from zero (ticks ~ 7e10, as RDTIME/16 under QEMU) is
 * recovered exactly. */
static void fit_exact_line(void)
{
	struct goclock_anchor a[50];
	struct goclock_fit f;
	double r[50];
	struct oob_err err = {0};
	line_anchors(a, 50, 3.0, 1000.0, 70420267183638ull, 4096);
	CHECK_EQ(goclock_fit(a, 50, NULL, &f, r, &err), 0);
	CHECK(fabs(f.clock.a - 3.0) < 1e-12);
	CHECK(fabs(goclock_map(&f.clock, a[0].go) - 1000.0) < 1e-6);
	CHECK(f.max_abs < 1e-6 && f.rms < 1e-6);
	CHECK_EQ(f.n, 50);
	CHECK(fabs(f.span - 3.0 * 49 * 4096) < 1e-6);
	CHECK_EQ(goclock_unmap(&f.clock, (double)a[17].trace), a[17].go);
}

/* Against the textbook closed form computed here in long double. */
static void fit_matches_closed_form(void)
{
	enum { N = 200 };
	struct goclock_anchor a[N];
	struct goclock_fit f;
	struct goclock_fit_opts o = {.max_residual_rel = 0.5};
	uint64_t rng = 12345;
	long double sx = 0, sy = 0, sxx = 0, sxy = 0;
	for (size_t i = 0; i < N; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		a[i] = (struct goclock_anchor){.go = 1000000 + i * 977 + (rng >> 60),
					       .trace = 5000 + i * 2500 + ((rng >> 33) % 4000)};
		long double x = (long double)a[i].go, y = (long double)a[i].trace;
		sx += x, sy += y, sxx += x * x, sxy += x * y;
	}
	long double slope = (N * sxy - sx * sy) / (N * sxx - sx * sx);
	long double icpt = (sy - slope * sx) / N;
	CHECK_EQ(goclock_fit(a, N, &o, &f, NULL, NULL), 0);
	CHECK(fabsl(f.clock.a - slope) < 1e-9L * slope);
	CHECK(fabsl((long double)goclock_map(&f.clock, 0) - icpt) < 1e-3L);
}

/* A residual over the tolerance is refused, naming the anchor and its offset. */
static void fit_refuses_outlier(void)
{
	struct goclock_anchor a[40];
	struct goclock_fit f;
	double r[40];
	struct oob_err err = {0};
	struct goclock_fit_opts o = {.max_residual = 50};
	line_anchors(a, 40, 2.0, 0, 1000, 1000);
	a[23].trace += 5000; /* one event matched to the wrong instruction */
	CHECK_EQ(goclock_fit(a, 40, &o, &f, r, &err), -EINVAL);
	CHECK_EQ(f.worst, 23);
	CHECK(strstr(err.msg, "does not hold") && strstr(err.msg, "anchor 23 of 40"));
	CHECK(strstr(err.msg, "offset 0x7b")); /* go_off 100 + 23 */
	CHECK(fabs(r[23]) == f.max_abs);
	/* the same data within a wider tolerance holds */
	o.max_residual = 10000;
	CHECK_EQ(goclock_fit(a, 40, &o, &f, r, &err), 0);
}

static void fit_refuses_degenerate(void)
{
	struct goclock_anchor a[10];
	struct goclock_fit f;
	struct oob_err err = {0};
	line_anchors(a, 10, 1.0, 0, 500, 10);
	CHECK_EQ(goclock_fit(a, 2, NULL, &f, NULL, &err), -EINVAL);
	CHECK(strstr(err.msg, "at least 3 anchors, there are 2"));
	for (int i = 0; i < 10; i++)
		a[i].go = 777;
	CHECK_EQ(goclock_fit(a, 10, NULL, &f, NULL, &err), -EINVAL);
	CHECK(strstr(err.msg, "different Go times"));
	line_anchors(a, 10, -4.0, 1e6, 500, 10); /* time running backwards */
	CHECK_EQ(goclock_fit(a, 10, NULL, &f, NULL, &err), -EINVAL);
	CHECK(strstr(err.msg, "slope"));
}

/* A given model ("go_clock": {"hz", "offset"}): 3.2 GHz cycles against Go
 * 1.19's 62.5 MHz ticks. */
static void given_model(void)
{
	struct goclock c;
	struct goclock_anchor a[20];
	struct goclock_fit f;
	struct oob_err err = {0};
	CHECK_EQ(goclock_from_hz(3.2e9, 12345, 62500000, &c, &err), 0);
	CHECK(fabs(c.a - 51.2) < 1e-12);
	CHECK(fabs(goclock_map(&c, 1000) - (51200 + 12345)) < 1e-6);
	line_anchors(a, 20, 51.2, 12345 + 51.2 * 1000, 1000, 625);
	CHECK_EQ(goclock_check(&c, a, 20, NULL, &f, NULL, &err), 0);
	CHECK(f.max_abs < 1);
	CHECK_EQ(goclock_from_hz(3.0e9, 12345, 62500000, &c, &err), 0); /* wrong clock */
	CHECK_EQ(goclock_check(&c, a, 20, NULL, &f, NULL, &err), -EINVAL);
	CHECK_EQ(goclock_from_hz(-1, 0, 62500000, &c, &err), -EINVAL);
	CHECK_EQ(goclock_from_hz(1e9, 0, 0, &c, &err), -EINVAL);
}

/* ---- a real run ------------------------------------------------------------ */

struct truth {
	uint64_t func_addr, go_events, entries, sleep_go_events, sleep_entries;
};

static int truth_load(struct truth *t)
{
	const char *p = oobtest_gen("go/demo.truth");
	FILE *f = p ? fopen(p, "r") : NULL;
	char k[64];
	unsigned long long v;
	if (!f)
		return -1;
	memset(t, 0, sizeof(*t));
	while (fscanf(f, "%63s %lli", k, &v) == 2) {
		if (!strcmp(k, "func_addr"))
			t->func_addr = v;
		else if (!strcmp(k, "go_events"))
			t->go_events = v;
		else if (!strcmp(k, "entries"))
			t->entries = v;
		else if (!strcmp(k, "sleep_go_events"))
			t->sleep_go_events = v;
		else if (!strcmp(k, "sleep_entries"))
			t->sleep_entries = v;
	}
	fclose(f);
	return t->func_addr && t->go_events ? 0 : -1;
}

static const char *gen(const char *rel)
{
	return oobtest_gen(rel);
}

/* goclock_align of the one instruction trace rel. */
static int align_one(const struct gotrace *t, const char *rel, const struct goclock_align_opts *o,
		     struct goclock_alignment **al, struct oob_err *err)
{
	const char *path = gen(rel);
	struct goclock_traces insn = {&path, 1, {0}, NULL};
	return goclock_align(t, &insn, o, al, err);
}

/* The run without pauses: every Go timed event is one entry into
 * runtime.traceEventLocked, and the fitted line maps every anchor within the
 * stated tolerance (GOCLOCK_TOL_INSNS: 10 % of the anchors' span, in
 * instructions, because QEMU user mode has no cycle counter). */
static void align_real_run(void)
{
	struct truth tr;
	struct oob_err err = {0};
	if (truth_load(&tr) < 0 || !gen("go/demo.oobt") || !gen("go/demo.trace"))
		SKIP("no traced Go run (tests/tools/gen-go.sh needs go and qemu-riscv64)");
	struct gotrace *t = gotrace_open(gen("go/demo.trace"), NULL, &err);
	CHECK(t != NULL);
	struct goclock_align_opts o = {.elf = gen("go/gotrace-demo")};
	struct goclock_alignment *al = NULL;
	int rc = align_one(t, "go/demo.oobt", &o, &al, &err);
	if (rc < 0)
		printf("# %s\n", err.msg);
	CHECK(al != NULL);
	printf("# %llu Go events, %llu entries (truth: %llu / %llu); %zu anchors, rms %.0f, "
	       "max %.0f insns = %.2f %% of the span %.0f; %zu syscall anchors (max %.0f); "
	       "%zu threads, %zu anchors on another hart\n",
	       (unsigned long long)al->go_events, (unsigned long long)al->entries,
	       (unsigned long long)tr.go_events, (unsigned long long)tr.entries, al->fit.n,
	       al->fit.rms, al->fit.max_abs, 100 * al->fit.max_abs / al->fit.span, al->fit.span,
	       al->nsys, al->sys_max_abs, al->nthreads, al->thread_mismatch);
	CHECK_EQ(al->func_addr, tr.func_addr);
	CHECK_EQ(al->go_events, tr.go_events);
	CHECK_EQ(al->entries, tr.entries);
	CHECK_EQ(gotrace_info(t)->timed_events, tr.go_events);
	CHECK_EQ(rc, 0);
	CHECK(!al->cycles);
	CHECK(fabs(al->fit.tolerance - GOCLOCK_TOL_INSNS * al->fit.span) < 1);
	for (size_t i = 0; i < al->nemit; i++)
		CHECK(fabs(al->resid[i]) <= al->fit.tolerance);
	/* The anchor map is exact at every anchor and monotonic between them. */
	for (size_t i = 0; i < al->nemit; i++)
		CHECK(goclock_align_map(al, al->anchors[i].go) >= (double)al->anchors[0].trace);
	CHECK(goclock_align_map(al, al->anchors[al->nemit / 2].go) ==
		  (double)al->anchors[al->nemit / 2].trace ||
	      al->anchors[al->nemit / 2].go == al->anchors[al->nemit / 2 - 1].go);
	/* Syscalls: each GoSysCall's thread reaches an ecall after the event. */
	size_t nev, sysev = 0;
	const struct gotrace_event *ev = gotrace_events(t, &nev);
	for (size_t i = 0; i < nev; i++)
		sysev += ev[i].kind == GOTRACE_EV_GO_SYSCALL;
	CHECK_EQ(al->nsys, sysev);
	for (size_t i = al->nemit; i < al->nanchors; i++)
		CHECK(al->anchors[i].kind == GOCLOCK_ANCHOR_SYSCALL);
	/* Most of each Go thread's events run on one hart (the rest: events a
	 * thread writes into another P's buffer, e.g. sysmon retaking a P). */
	CHECK(al->nthreads >= 1 && al->thread_mismatch * 20 < al->nemit);
	goclock_alignment_free(al);
	gotrace_free(t);
}

/* With a 5 s sleep in the middle every thread idles: the instruction index
 * stops while Go time runs on, and the line is refused. */
static void align_refuses_pause(void)
{
	struct truth tr;
	struct oob_err err = {0};
	if (truth_load(&tr) < 0 || !gen("go/demo-sleep.oobt"))
		SKIP("no traced Go run (tests/tools/gen-go.sh)");
	struct gotrace *t = gotrace_open(gen("go/demo-sleep.trace"), NULL, &err);
	CHECK(t != NULL);
	struct goclock_align_opts o = {.elf = gen("go/gotrace-demo")};
	struct goclock_alignment *al = NULL;
	int rc = align_one(t, "go/demo-sleep.oobt", &o, &al, &err);
	printf("# sleep run: %s\n", err.msg);
	CHECK_EQ(rc, -EINVAL);
	CHECK(al != NULL);
	CHECK_EQ(al->entries, tr.sleep_entries);
	CHECK_EQ(al->go_events, tr.sleep_go_events);
	CHECK(strstr(err.msg, "does not hold"));
	CHECK(al->fit.max_abs > al->fit.tolerance);
	goclock_alignment_free(al);
	gotrace_free(t);
}

/* Traces of different runs, and a binary without the function. */
static void align_refuses_mismatch(void)
{
	struct truth tr;
	struct oob_err err = {0};
	if (truth_load(&tr) < 0 || !gen("go/demo-sleep.oobt"))
		SKIP("no traced Go run (tests/tools/gen-go.sh)");
	struct gotrace *t = gotrace_open(gen("go/demo.trace"), NULL, &err);
	CHECK(t != NULL);
	struct goclock_align_opts o = {.elf = gen("go/gotrace-demo")};
	struct goclock_alignment *al = NULL;
	int rc = align_one(t, "go/demo-sleep.oobt", &o, &al, &err);
	printf("# %s\n", err.msg);
	CHECK(tr.go_events != tr.sleep_entries); /* otherwise this case proves nothing */
	CHECK_EQ(rc, -EINVAL);
	CHECK(al == NULL && strstr(err.msg, "not the same run"));
	o.func = "main.noSuchFunction";
	CHECK_EQ(align_one(t, "go/demo.oobt", &o, &al, &err), -ENOENT);
	CHECK(strstr(err.msg, "main.noSuchFunction"));
	gotrace_free(t);
}

int main(void)
{
	OOBTEST_BEGIN("test_goclock");
	RUN(fit_exact_line);
	RUN(fit_matches_closed_form);
	RUN(fit_refuses_outlier);
	RUN(fit_refuses_degenerate);
	RUN(given_model);
	RUN(align_real_run);
	RUN(align_refuses_pause);
	RUN(align_refuses_mismatch);
	return OOBTEST_END();
}
