/*
 * sampler: the stop / read / unwind / resume loop (sampler.h).
 */
#include "sample/sampler.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sample/rsp.h"
#include "sample/sampler_trap.h"
#include "sym/rv.h"
#include "util/oob_mem.h"

#define TARGET_SIGINT 2 /* the stub's signal numbers are GDB's (Linux's here) */
/* Threads (harts) sampled at one stop: those past it are not. */
#define MAX_THREADS 256

struct run {
	const struct sampler_opts *o;
	struct rsp *r;
	struct sampler_unwind *u;
	FILE *out;
	struct sampler_stats *st;
	int instret_reg; /* -1: none */
	int resume_sig;	 /* the guest's own signal to pass on, 0 none */
	uint64_t *pcs;
	uint64_t tids[MAX_THREADS];
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_until(double t)
{
	struct timespec ts = {.tv_sec = (time_t)t, .tv_nsec = (long)((t - (time_t)t) * 1e9)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* The regnum of <reg name="NAME" ... regnum="N"/> in one description. */
static int find_reg(const char *xml, const char *name)
{
	char key[32];
	snprintf(key, sizeof(key), "name=\"%s\"", name);
	const char *p = strstr(xml, key);
	const char *end = p ? strchr(p, '>') : NULL, *rn = p ? strstr(p, "regnum=\"") : NULL;
	return rn && rn < end ? atoi(rn + 8) : -1;
}

/* instret, or minstret where only machine mode's is described (QEMU
 * system mode). */
static int find_instret(const char *xml)
{
	int r = find_reg(xml, "instret");
	return r >= 0 ? r : find_reg(xml, "minstret");
}

/* The instret CSR's register number, from the target description and the
 * files it includes; -ENOTSUP when the target has none. */
static int instret_regnum(struct rsp *r, struct oob_err *err)
{
	char *top, *doc;
	int rc = rsp_read_features(r, "target.xml", &top, err), reg = -1;
	if (rc < 0)
		return rc;
	reg = find_instret(top);
	for (const char *p = top; reg < 0 && (p = strstr(p, "href=\"")); p++) {
		char annex[128];
		const char *q = strchr(p + 6, '"');
		if (!q || q - p - 6 >= (long)sizeof(annex))
			break;
		snprintf(annex, sizeof(annex), "%.*s", (int)(q - p - 6), p + 6);
		if ((rc = rsp_read_features(r, annex, &doc, err)) < 0)
			break;
		reg = find_instret(doc);
		free(doc);
	}
	free(top);
	if (rc < 0)
		return rc;
	return reg >= 0 ? reg
			: oob_err_set(err, -ENOTSUP, "the target's description has no instret");
}

static int resume(struct run *x, struct oob_err *err)
{
	char cmd[8] = "c";
	if (x->resume_sig)
		snprintf(cmd, sizeof(cmd), "C%02x", x->resume_sig & 0xff);
	x->resume_sig = 0;
	return rsp_request(x->r, cmd, NULL, NULL, err);
}

static int interrupt(struct run *x, struct oob_err *err)
{
	if (x->o->pid <= 0)
		return rsp_interrupt(x->r, err);
	/* ESRCH: it has just exited; its stub's W reply is on the way. */
	if (kill(x->o->pid, SIGINT) < 0 && errno != ESRCH)
		return oob_err_set(err, -errno, "stopping process %d: %s", (int)x->o->pid,
				   strerror(errno));
	return 0;
}

/* Waits for the stop; 1 when the target is gone (W/X). */
static int wait_stop(struct run *x, struct oob_err *err)
{
	const char *rep;
	size_t len;
	struct rsp_stop s;
	int rc = rsp_wait_packet(x->r, &rep, &len, err);
	if (rc == -ECONNRESET) { /* QEMU system mode powered off: no W, a close */
		x->st->exited = 1;
		x->st->exit_status = -1;
		return 1;
	}
	if (rc == 0)
		rc = rsp_parse_stop(rep, len, &s, err);
	if (rc < 0)
		return rc;
	if (s.kind != RSP_STOPPED) {
		x->st->exited = 1;
		x->st->exit_status = s.kind == RSP_EXITED ? s.sig : 128 + s.sig;
		return 1;
	}
	if (s.sig != TARGET_SIGINT)
		x->resume_sig = s.sig;
	return 0;
}

/* One sample of the stopped target, written out. */
static int take(struct run *x, struct oob_err *err)
{
	uint64_t regs[SAMPLER_NREGS] = {0}, instret;
	size_t n;
	int rc = rsp_read_regs(x->r, regs, SAMPLER_NREGS, &n, err);
	if (rc == 0 && n < SAMPLER_NREGS)
		rc = oob_err_set(err, -ENOTSUP, "g: %zu registers, not RV64's 33", n);
	if (rc == 0 && x->instret_reg >= 0 &&
	    (rc = rsp_read_reg(x->r, (unsigned)x->instret_reg, &instret, err)) == 0)
		fprintf(x->out, "# instret %" PRIu64 "\n", instret);
	if (rc < 0)
		return rc;
	int ok = sampler_unwind_stack(x->u, regs, x->pcs, &n, err);
	if (ok < 0)
		return ok;
	const struct sampler_join *j;
	size_t nj = sampler_unwind_joins(x->u, &j), k = 0;
	for (size_t i = 0; i < n; i++) {
		for (; k < nj && j[k].at == i; k++)
			fprintf(x->out, "# trap %s\n", rv_cause_name(j[k].cause));
		fprintf(x->out, "0x%" PRIx64 "\n", x->pcs[i]);
	}
	for (; k < nj; k++)
		fprintf(x->out, "# trap %s\n", rv_cause_name(j[k].cause));
	fprintf(x->out, "%d\n\n", ok);
	x->st->samples++;
	x->st->failed += !ok;
	return ferror(x->out) ? oob_err_set(err, -EIO, "writing the samples failed") : 0;
}

/* One sample of every thread of the stopped target, each after a
 * "# thread ID" line when there are several; of the one the stop selected
 * with o->one_thread, and in QEMU user mode (o->pid), whose stub stops only
 * the thread the signal went to: the others run on, and the registers it
 * gives for them are stale (a worker's pc the same at every stop). A stub
 * without a thread list has one. */
static int take_all(struct run *x, struct oob_err *err)
{
	size_t n = 0;
	int rc = x->o->one_thread || x->o->pid > 0
		     ? 0
		     : rsp_threads(x->r, x->tids, MAX_THREADS, &n, err);
	if (rc < 0)
		return rc;
	if (n <= 1)
		return take(x, err);
	for (size_t i = 0; i < n && i < MAX_THREADS; i++) {
		fprintf(x->out, "# thread %" PRIu64 "\n", x->tids[i]);
		if ((rc = rsp_select_thread(x->r, x->tids[i], err)) < 0 || (rc = take(x, err)) < 0)
			return rc;
	}
	x->st->multi_stops++;
	return 0;
}

/* A period drawn uniformly from [0.5, 1.5) times the mean: a fixed period
 * can lock onto a periodic program's phase and draw the same few points of
 * it again and again (xorshift64: reproducible, no shared state). */
static double jittered(double period, uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return period * (0.5 + (double)(*state >> 11) / 9007199254740992.0);
}

static int loop(struct run *x, struct oob_err *err)
{
	const struct sampler_opts *o = x->o;
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	double period = 1.0 / o->hz, t0 = now_s(), next = t0 + jittered(period, &rng);
	double end = o->duration_ms ? t0 + o->duration_ms / 1e3 : 0;
	int rc = resume(x, err);
	while (rc == 0 && (!o->max_samples || x->st->samples < o->max_samples)) {
		if (end && next > end)
			break;
		sleep_until(next);
		double t = now_s();
		if ((rc = interrupt(x, err)) < 0 || (rc = wait_stop(x, err)) != 0)
			break;
		if ((rc = take_all(x, err)) < 0 || (rc = resume(x, err)) < 0)
			break;
		double after = now_s();
		x->st->stopped_s += after - t;
		for (next += jittered(period, &rng); next < after; next += jittered(period, &rng))
			x->st->late++;
	}
	x->st->wall_s = now_s() - t0;
	if (rc == 1)
		return 0;
	if (rc == 0) { /* stop and let it run on without us */
		if ((rc = interrupt(x, err)) == 0 && (rc = wait_stop(x, err)) == 0)
			rc = rsp_request(x->r, "D", NULL, NULL, err);
		rc = rc == 1 ? 0 : rc;
	}
	return rc;
}

int sampler_run(const struct sampler_opts *o, FILE *out, struct sampler_stats *st,
		struct oob_err *err)
{
	memset(st, 0, sizeof(*st));
	if (!(o->hz > 0 && o->hz <= 100000))
		return oob_err_set(err, -EINVAL, "the rate must be in (0, 100000] Hz");
	struct run x = {.o = o, .out = out, .st = st, .instret_reg = -1};
	unsigned depth = o->max_depth ? o->max_depth : 1024;
	int timeout = o->timeout_ms > 0 ? o->timeout_ms : 5000;
	struct rsp_stop s;
	int rc = rsp_connect(o->target, timeout, &x.r, err);
	if (rc == 0)
		rc = rsp_start(x.r, &s, err);
	if (rc == 0 && s.kind != RSP_STOPPED)
		rc = oob_err_set(err, -ESRCH, "%s: the target has already exited", o->target);
	if (rc == 0 && o->instret)
		rc = x.instret_reg = instret_regnum(x.r, err);
	if (rc >= 0)
		rc = sampler_unwind_new(x.r, o->unwind, o->elfs, o->nelfs, depth, &x.u, err);
	if (rc == 0) {
		x.pcs = oob_xmalloc(depth * sizeof(*x.pcs));
		fprintf(out, "# oobprof sample: %s at %g Hz, unwound by %s\n", o->target, o->hz,
			o->unwind == SAMPLER_UNWIND_CFI ? "CFI" : "frame pointers");
		if (sampler_unwind_trap_note(x.u))
			fprintf(out, "# %s\n", sampler_unwind_trap_note(x.u));
		rc = loop(&x, err);
	}
	if (x.u) {
		struct sampler_unwind_stats us;
		sampler_unwind_get_stats(x.u, &us);
		st->mem_reads = us.mem_reads;
		st->mem_bytes = us.mem_bytes;
		st->leaf_walks = us.leaf_walks;
		st->prologue_steps = us.prologue_steps;
	}
	free(x.pcs);
	sampler_unwind_free(x.u);
	rsp_free(x.r);
	return rc;
}
