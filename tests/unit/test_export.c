/*
 * evlog and export, on real traces of real RISC-V programs (tests/gen) and
 * on hand-made event sequences whose right output is worked out by hand.
 * The events are checked against the calling-context tree that the same
 * run built by another path (recon's own accounting), pprof is decoded with
 * zlib and a protobuf reader written here, and damaged logs must be refused
 * without a crash. tests/integration/test_export_*.sh compares the exports
 * with other tools (go tool pprof, speedscope's schema, a Python reader).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "recon/evlog.h"
#include "export/export.h"
#include "oobtest.h"
#include "recon/recon.h"

/* ---- running real traces ---- */

struct evvec {
	struct recon_event *v;
	size_t n, cap;
	struct evlog *log;
};

static void tee(void *ctx, const struct recon_event *ev)
{
	struct evvec *e = ctx;
	if (e->n == e->cap) {
		e->cap = e->cap ? 2 * e->cap : 1024;
		e->v = realloc(e->v, e->cap * sizeof(*e->v));
	}
	e->v[e->n++] = *ev;
	if (e->log)
		evlog_record(e->log, ev);
}

/* Reconstructs trace with elf; events go to e (and its log). */
static struct profile *run(const char *trace, const char *elf, struct evvec *e)
{
	struct recon_elf re = {.path = elf, .base = RECON_BASE_LINK};
	struct recon_opts o = {.elfs = &re, .nelfs = 1, .on_event = tee, .event_ctx = e};
	struct profile *p = NULL;
	struct oob_err err = {0};
	o.trace.format = TRACE_FMT_AUTO;
	if (recon_run(&o, &trace, 1, &p, &err) < 0) {
		fprintf(stderr, "recon: %s\n", err.msg);
		return NULL;
	}
	return p;
}

/* A generated program's trace and ELF, or NULL when not generated. */
static int prog(const char *name, const char **trace, const char **elf)
{
	char t[256];
	snprintf(t, sizeof(t), "progs/%s.oobt", name);
	*trace = oobtest_gen(t);
	snprintf(t, sizeof(t), "progs/%s", name);
	*elf = oobtest_gen(t);
	return *trace && *elf;
}

static char *export_to_mem(const struct profile *p, struct evlog *log, const struct export_opts *o,
			   size_t *len, int *rc, struct oob_err *err)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	*rc = export_write(p, log, o, f, err);
	fclose(f);
	return buf;
}

/* ---- the log keeps every event ---- */

struct replayed {
	const struct evvec *want;
	size_t i;
	int hart;
	int bad;
};

static int compare_event(void *ctx, const struct recon_event *ev)
{
	struct replayed *r = ctx;
	while (r->i < r->want->n && r->hart >= 0 && r->want->v[r->i].hart != r->hart)
		r->i++;
	if (r->i >= r->want->n)
		return r->bad = -1;
	const struct recon_event *w = &r->want->v[r->i++];
	if (w->kind != ev->kind || w->hart != ev->hart || w->frame != ev->frame ||
	    w->depth != ev->depth || w->insn != ev->insn || w->cycle != ev->cycle ||
	    w->seq != ev->seq || w->calls != ev->calls)
		r->bad = -1;
	return r->bad;
}

static void evlog_replays_exactly(void)
{
	const char *trace, *elf;
	struct oob_err err = {0};
	if (!prog("mixed", &trace, &elf))
		SKIP("tests/gen/progs/mixed not generated");
	struct evvec e = {.log = evlog_new(NULL, 0, &err)};
	CHECK(e.log);
	struct profile *p = run(trace, elf, &e);
	CHECK(p);
	CHECK(e.n > 1000);
	CHECK_EQ(evlog_finish(e.log, &err), 0);
	CHECK_EQ(evlog_count(e.log), e.n);
	CHECK_EQ(evlog_capped(e.log), 0);
	CHECK_EQ(evlog_nharts(e.log), 1);
	struct evlog_hart h = evlog_hart(e.log, 0);
	CHECK_EQ(h.events, e.n);
	CHECK_EQ(h.first_insn, e.v[0].insn);
	CHECK_EQ(h.last_insn, e.v[e.n - 1].insn);
	/* the last close comes at the last instruction */
	CHECK_EQ(h.last_insn, profile_stats(p)->instructions);
	for (int pass = 0; pass < 2; pass++) { /* replays are repeatable */
		struct replayed r = {.want = &e, .hart = pass ? 0 : -1};
		CHECK_EQ(evlog_replay(e.log, r.hart, (uint32_t)profile_nframes(p), compare_event,
				      &r, &err),
			 0);
		CHECK_EQ(r.i, e.n);
	}
	/* a hart with no events replays nothing */
	struct replayed none = {.want = &e, .hart = 3};
	CHECK_EQ(evlog_replay(e.log, 3, 0, compare_event, &none, &err), 0);
	CHECK_EQ(none.i, 0);
	evlog_free(e.log);
	free(e.v);
	profile_free(p);
}

static void cancel_at_tick(void *ctx)
{
	struct oob_progress *p = ctx;
	atomic_store(&p->cancel, 1);
}

/* A watched replay counts the bytes it reads against what it announced,
 * and a cancel stops it with -ECANCELED before any event is handed on. */
static void evlog_reports_progress(void)
{
	const char *trace, *elf;
	struct oob_err err = {0};
	if (!prog("mixed", &trace, &elf))
		SKIP("tests/gen/progs/mixed not generated");
	struct evvec e = {.log = evlog_new(NULL, 0, &err)};
	struct profile *p = run(trace, elf, &e);
	CHECK(p);
	CHECK_EQ(evlog_finish(e.log, &err), 0);
	struct oob_progress pr = {0};
	evlog_watch(e.log, &pr);
	struct replayed r = {.want = &e, .hart = -1};
	CHECK_EQ(evlog_replay(e.log, -1, 0, compare_event, &r, &err), 0);
	CHECK_EQ(r.i, e.n);
	CHECK(atomic_load(&pr.total) > 2 * e.n); /* at least two bytes an event */
	CHECK_EQ(atomic_load(&pr.total), evlog_body_bytes(e.log));
	CHECK_EQ(atomic_load(&pr.done), atomic_load(&pr.total));
	/* two passes announced: the total holds both from the start */
	struct oob_progress two = {0};
	evlog_watch(e.log, &two);
	oob_progress_expect(&two, 2 * evlog_body_bytes(e.log));
	for (int pass = 0; pass < 2; pass++) {
		struct replayed again = {.want = &e, .hart = -1};
		CHECK_EQ(evlog_replay(e.log, -1, 0, compare_event, &again, &err), 0);
		CHECK_EQ(atomic_load(&two.total), 2 * evlog_body_bytes(e.log));
	}
	CHECK_EQ(atomic_load(&two.done), atomic_load(&two.total));
	struct oob_progress stop = {.tick = cancel_at_tick, .tick_ctx = &stop};
	evlog_watch(e.log, &stop);
	struct replayed none = {.want = &e, .hart = -1};
	CHECK_EQ(evlog_replay(e.log, -1, 0, compare_event, &none, &err), -ECANCELED);
	CHECK_EQ(none.i, 0);
	CHECK(strstr(err.msg, "cancelled"));
	evlog_free(e.log);
	free(e.v);
	profile_free(p);
}

/* ---- the events agree with the calling-context tree ---- */

struct rebuild {
	const struct profile *p;
	uint32_t stk[4096];
	size_t n;
	uint64_t last;
	uint64_t *self;
	int cycles, lost;
};

static uint32_t child(const struct profile *p, uint32_t node, uint32_t frame)
{
	for (uint32_t c = profile_node(p, node)->first_child; c != PROFILE_NONE;
	     c = profile_node(p, c)->next_sibling)
		if (profile_node(p, c)->frame == frame)
			return c;
	return PROFILE_NONE;
}

static int rebuild_event(void *ctx, const struct recon_event *ev)
{
	struct rebuild *r = ctx;
	uint64_t t = r->cycles ? ev->cycle : ev->insn;
	if (r->n)
		r->self[r->stk[r->n - 1]] += t - r->last;
	r->last = t;
	if (ev->kind == RECON_EV_CLOSE) {
		r->n--;
		return 0;
	}
	uint32_t c = child(r->p, r->n ? r->stk[r->n - 1] : 0, ev->frame);
	if (c == PROFILE_NONE || r->n == 4096)
		return r->lost = -1;
	r->stk[r->n++] = c;
	return 0;
}

static int same_as_tree(const struct profile *p, struct evlog *log, int cycles)
{
	struct rebuild r = {.p = p, .cycles = cycles};
	struct oob_err err = {0};
	r.self = calloc(profile_nnodes(p), sizeof(*r.self));
	int rc = evlog_replay(log, 0, 0, rebuild_event, &r, &err);
	for (uint32_t i = 1; rc == 0 && i < profile_nnodes(p); i++) {
		const struct profile_node *n = profile_node(p, i);
		if (r.self[i] != (cycles ? n->self_cycles : n->self_insns)) {
			fprintf(stderr, "node %u: %llu from events, %llu in the tree\n", i,
				(unsigned long long)r.self[i],
				(unsigned long long)(cycles ? n->self_cycles : n->self_insns));
			rc = -1;
		}
	}
	free(r.self);
	return rc;
}

static void events_rebuild_the_tree(void)
{
	static const char *const names[] = {"recursion", "longjmp", "tailcall", "fnptr-pie"};
	struct oob_err err = {0};
	int ran = 0;
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		const char *trace, *elf;
		if (!prog(names[k], &trace, &elf))
			continue;
		struct evvec e = {.log = evlog_new(NULL, 0, &err)};
		struct profile *p = run(trace, elf, &e);
		CHECK(p);
		CHECK_EQ(same_as_tree(p, e.log, 0), 0);
		evlog_free(e.log);
		free(e.v);
		profile_free(p);
		ran++;
	}
	if (!ran)
		SKIP("no generated program traces");
}

/* TracerV carries cycles: the cycle stamps must add up the same way. */
static void cycle_stamps_rebuild_the_tree(void)
{
	const char *trace = oobtest_gen("readers/tv-c-v63-w1.bin");
	const char *elf = oobtest_gen("readers/rdprog");
	struct oob_err err = {0};
	if (!trace || !elf)
		SKIP("tests/gen/readers TracerV trace not generated");
	struct evvec e = {.log = evlog_new(NULL, 0, &err)};
	struct profile *p = run(trace, elf, &e);
	CHECK(p);
	CHECK(profile_has_cycles(p));
	CHECK_EQ(same_as_tree(p, e.log, 1), 0);
	CHECK_EQ(same_as_tree(p, e.log, 0), 0);
	evlog_free(e.log);
	free(e.v);
	profile_free(p);
}

/* ---- speedscope ---- */

static void speedscope_evented_matches_functions(void)
{
	const char *trace, *elf;
	struct oob_err err = {0};
	if (!prog("mutual", &trace, &elf))
		SKIP("tests/gen/progs/mutual not generated");
	struct evvec e = {.log = evlog_new(NULL, 0, &err)};
	struct profile *p = run(trace, elf, &e);
	CHECK(p);
	struct export_opts o = {.format = EXPORT_SPEEDSCOPE, .name = "mutual"};
	size_t len;
	int rc;
	char *text = export_to_mem(p, e.log, &o, &len, &rc, &err);
	CHECK_EQ(rc, 0);
	json_error_t je;
	json_t *j = json_loadb(text, len, 0, &je);
	free(text);
	CHECK(j);
	json_t *prof = json_array_get(json_object_get(j, "profiles"), 0);
	CHECK_STR(json_string_value(json_object_get(prof, "type")), "evented");
	/* no cycles: the trace's record index (one hart: its instructions) */
	CHECK_STR(json_string_value(json_object_get(prof, "name")), "hart 0 (trace records)");
	CHECK_EQ(json_array_size(json_object_get(prof, "events")), e.n);
	CHECK_EQ(json_array_size(json_object_get(json_object_get(j, "shared"), "frames")),
		 profile_nframes(p));
	/* self per frame from the events == self per function from the tree */
	uint64_t *self = calloc(profile_nframes(p), sizeof(*self)), last = 0;
	uint32_t stk[4096];
	size_t n = 0, i;
	json_t *ev;
	json_array_foreach(json_object_get(prof, "events"), i, ev)
	{
		uint64_t at = (uint64_t)json_integer_value(json_object_get(ev, "at"));
		uint32_t fr = (uint32_t)json_integer_value(json_object_get(ev, "frame"));
		if (n)
			self[stk[n - 1]] += at - last;
		last = at;
		if (!strcmp(json_string_value(json_object_get(ev, "type")), "O"))
			stk[n++] = fr;
		else
			n--;
	}
	CHECK_EQ(json_integer_value(json_object_get(prof, "endValue")), last);
	struct profile_func *fv;
	size_t nf = profile_functions(p, PROFILE_INSNS, &fv);
	int bad = 0;
	for (size_t k = 0; k < nf; k++)
		bad += self[fv[k].frame] != fv[k].self_insns;
	free(fv);
	free(self);
	json_decref(j);
	evlog_free(e.log);
	free(e.v);
	profile_free(p);
	CHECK(nf > 10);
	CHECK_EQ(bad, 0);
}

/* A capped log: speedscope falls back to samples, perfetto refuses. */
static void capped_log_falls_back(void)
{
	const char *trace, *elf;
	struct oob_err err = {0};
	if (!prog("mixed", &trace, &elf))
		SKIP("tests/gen/progs/mixed not generated");
	struct evvec e = {.log = evlog_new(NULL, 10, &err)};
	struct profile *p = run(trace, elf, &e);
	CHECK(p);
	CHECK_EQ(evlog_finish(e.log, &err), 0);
	CHECK(evlog_capped(e.log));
	CHECK_EQ(evlog_count(e.log), 10);
	CHECK_EQ(evlog_seen(e.log), e.n);
	struct replayed r = {.want = &e, .hart = -1};
	CHECK_EQ(evlog_replay(e.log, -1, 0, compare_event, &r, &err), -EFBIG);
	struct export_opts o = {.format = EXPORT_SPEEDSCOPE};
	size_t len;
	int rc;
	char *text = export_to_mem(p, e.log, &o, &len, &rc, &err);
	CHECK_EQ(rc, 0);
	CHECK(strstr(text, "\"type\":\"sampled\"") != NULL);
	CHECK(strstr(text, "\"type\":\"evented\"") == NULL);
	free(text);
	o.format = EXPORT_PERFETTO;
	text = export_to_mem(p, e.log, &o, &len, &rc, &err);
	free(text);
	CHECK_EQ(rc, -EFBIG);
	/* and max_events sends a full log to samples as well */
	evlog_free(e.log);
	e.log = NULL;
	free(e.v);
	profile_free(p);
}

/* --clock-hz: cycles become integer nanoseconds. */
static void clock_rate_gives_nanoseconds(void)
{
	const char *trace = oobtest_gen("readers/tv-c-v63-w1.bin");
	const char *elf = oobtest_gen("readers/rdprog");
	struct oob_err err = {0};
	if (!trace || !elf)
		SKIP("tests/gen/readers TracerV trace not generated");
	struct evvec e = {.log = evlog_new(NULL, 0, &err)};
	struct profile *p = run(trace, elf, &e);
	CHECK(p);
	struct export_opts o = {
	    .format = EXPORT_SPEEDSCOPE, .metric = PROFILE_CYCLES, .clock_hz = 3200000000u};
	size_t len;
	int rc;
	char *text = export_to_mem(p, e.log, &o, &len, &rc, &err);
	CHECK_EQ(rc, 0);
	json_t *j = json_loadb(text, len, 0, NULL);
	free(text);
	json_t *prof = json_array_get(json_object_get(j, "profiles"), 0);
	CHECK_STR(json_string_value(json_object_get(prof, "unit")), "nanoseconds");
	/* the trace's own cycles, not rebased: the timeline's axis */
	CHECK_EQ(json_integer_value(json_object_get(prof, "startValue")),
		 e.v[0].cycle * 1000000000u / 3200000000u);
	CHECK_EQ(json_integer_value(json_object_get(prof, "endValue")),
		 e.v[e.n - 1].cycle * 1000000000u / 3200000000u);
	/* the metric weighs, it does not choose the time axis: the same file */
	o.metric = PROFILE_INSNS;
	char *again = export_to_mem(p, e.log, &o, &len, &rc, &err);
	CHECK_EQ(rc, 0);
	json_t *j2 = json_loadb(again, len, 0, NULL);
	free(again);
	CHECK(json_equal(j, j2));
	json_decref(j2);
	json_decref(j);
	evlog_free(e.log);
	free(e.v);
	profile_free(p);
}

/* ---- perfetto, by hand ---- */

static struct profile *letters_profile(void)
{
	static const char *const names[] = {"A", "B", "C", "D", "E"};
	struct profile_frame fr[5];
	struct profile_node root = {.parent = PROFILE_NONE, .frame = PROFILE_NONE};
	struct profile_stats st = {.format = "hand"};
	for (int i = 0; i < 5; i++)
		fr[i] = (struct profile_frame){.name = names[i], .kind = PROFILE_FRAME_USER};
	return profile_new(&root, 1, fr, 5, &st, NULL);
}

static void ev(struct evlog *l, int open, uint16_t hart, uint32_t frame, uint32_t depth, uint64_t t)
{
	struct recon_event e = {.kind = open ? RECON_EV_OPEN : RECON_EV_CLOSE,
				.hart = hart,
				.frame = frame,
				.depth = depth,
				.insn = t,
				.seq = t};
	evlog_record(l, &e);
}

/*
 * hart 0: A [0, 100) calls B [10, 12), C [20, 50) which calls D [20, 45),
 * then E opens and closes at 60. hart 1 (interleaved): C [5, 30).
 */
static struct evlog *letters_log(void)
{
	struct evlog *l = evlog_new(NULL, 0, NULL);
	ev(l, 1, 0, 0, 1, 0);
	ev(l, 1, 1, 2, 1, 5);
	ev(l, 1, 0, 1, 2, 10);
	ev(l, 0, 0, 1, 2, 12);
	ev(l, 1, 0, 2, 2, 20);
	ev(l, 1, 0, 3, 3, 20);
	ev(l, 0, 1, 2, 1, 30);
	ev(l, 0, 0, 3, 3, 45);
	ev(l, 0, 0, 2, 2, 50);
	ev(l, 1, 0, 4, 2, 60);
	ev(l, 0, 0, 4, 2, 60);
	ev(l, 0, 0, 0, 1, 100);
	return l;
}

/* The B/E events of the document as "tid:ph:name@ts " words. */
static void slices(const char *text, size_t len, char *out, size_t n)
{
	json_t *j = json_loadb(text, len, 0, NULL), *e;
	size_t i, used = 0;
	out[0] = '\0';
	json_array_foreach(json_object_get(j, "traceEvents"), i, e)
	{
		const char *ph = json_string_value(json_object_get(e, "ph"));
		if (strcmp(ph, "B") && strcmp(ph, "E"))
			continue;
		used += (size_t)snprintf(out + used, n - used, "%d:%s:%s@%.3f ",
					 (int)json_integer_value(json_object_get(e, "tid")), ph,
					 json_string_value(json_object_get(e, "name")),
					 json_real_value(json_object_get(e, "ts")));
	}
	json_decref(j);
}

static void perfetto_min_duration_by_hand(void)
{
	struct profile *p = letters_profile();
	struct evlog *l = letters_log();
	struct oob_err err = {0};
	struct export_opts o = {.format = EXPORT_PERFETTO, .metric = PROFILE_INSNS};
	char got[400];
	size_t len;
	int rc;
	CHECK(p && l);
	char *text = export_to_mem(p, l, &o, &len, &rc, &err);
	CHECK_EQ(rc, 0);
	CHECK(strstr(text, "displayTimeUnit") == NULL);
	CHECK(strstr(text, "\"ts\":0.010,") != NULL); /* printed from integer ns */
	slices(text, len, got, sizeof(got));
	free(text);
	/* E is zero-length: left out; the rest as they happened */
	CHECK_STR(got, "1:B:A@0.000 1:B:B@0.010 1:E:B@0.012 2:B:C@0.005 2:E:C@0.030 "
		       "1:B:C@0.020 1:B:D@0.020 1:E:D@0.045 1:E:C@0.050 1:E:A@0.100 ");
	o.min_duration = 20; /* B (2 ns) goes; D (25) and C (30, 25) stay */
	text = export_to_mem(p, l, &o, &len, &rc, &err);
	CHECK_EQ(rc, 0);
	slices(text, len, got, sizeof(got));
	free(text);
	CHECK_STR(got, "2:B:C@0.005 2:E:C@0.030 1:B:A@0.000 1:B:C@0.020 1:B:D@0.020 "
		       "1:E:D@0.045 1:E:C@0.050 1:E:A@0.100 ");
	o.min_duration = 26; /* D goes; C (hart 0: 30) stays, C on hart 1 (25) goes */
	text = export_to_mem(p, l, &o, &len, &rc, &err);
	CHECK_EQ(rc, 0);
	slices(text, len, got, sizeof(got));
	free(text);
	CHECK_STR(got, "1:B:A@0.000 1:B:C@0.020 1:E:C@0.050 1:E:A@0.100 ");
	evlog_free(l);
	profile_free(p);
}

/* Events naming frames the profile does not have are refused. */
static void foreign_frames_are_refused(void)
{
	struct profile *p = letters_profile();
	struct evlog *l = evlog_new(NULL, 0, NULL);
	struct oob_err err = {0};
	ev(l, 1, 0, 7, 1, 0);
	ev(l, 0, 0, 7, 1, 9);
	struct export_opts o = {.format = EXPORT_PERFETTO};
	size_t len;
	int rc;
	free(export_to_mem(p, l, &o, &len, &rc, &err));
	CHECK_EQ(rc, -EINVAL);
	CHECK(strstr(err.msg, "frame") != NULL);
	o.format = EXPORT_SPEEDSCOPE;
	free(export_to_mem(p, l, &o, &len, &rc, &err));
	CHECK_EQ(rc, -EINVAL);
	evlog_free(l);
	profile_free(p);
}

/* ---- damaged logs ---- */

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
	static char buf[512];
	snprintf(buf, sizeof(buf), "%s/%s", tmpdir, name);
	return buf;
}

static int nop(void *ctx, const struct recon_event *e)
{
	(void)ctx;
	(void)e;
	return 0;
}

/* Opens and replays path: 0, or the negative error of either step. */
static int try_log(const char *path, struct oob_err *err)
{
	struct evlog *l = evlog_open(path, err);
	if (!l)
		return err->code;
	int rc = evlog_replay(l, -1, 0, nop, NULL, err);
	evlog_free(l);
	return rc;
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	fwrite(p, 1, n, f);
	fclose(f);
}

static void damaged_logs_are_refused(void)
{
	const char *trace, *elf;
	struct oob_err err = {0};
	if (!prog("recursion", &trace, &elf))
		SKIP("tests/gen/progs/recursion not generated");
	char good[512];
	snprintf(good, sizeof(good), "%s", tmp_path("good.evl"));
	struct evvec e = {.log = evlog_new(good, 0, &err)};
	CHECK(e.log);
	struct profile *p = run(trace, elf, &e);
	CHECK(p);
	CHECK_EQ(evlog_finish(e.log, &err), 0);
	evlog_free(e.log);
	CHECK_EQ(try_log(good, &err), 0);
	FILE *f = fopen(good, "rb");
	static uint8_t buf[1 << 20], mut[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	CHECK(n > 1000 && n < sizeof(buf));
	const char *bad = tmp_path("bad.evl");
	int refused = 0, runs = 0;
	/* cut anywhere: refused, never a crash */
	for (size_t cut = 0; cut < n; cut += cut < 64 ? 1 : 97) {
		write_file(bad, buf, cut);
		CHECK(try_log(bad, &err) == -EINVAL);
		refused++;
	}
	/* bytes changed in the header, the body and the hart table */
	for (size_t at = 0; at < n; at += at < 400 ? 1 : 211) {
		for (int bit = 0; bit < 8; bit += 3) {
			memcpy(mut, buf, n);
			mut[at] ^= (uint8_t)(1u << bit);
			write_file(bad, mut, n);
			int rc = try_log(bad, &err);
			CHECK(rc == 0 || rc == -EINVAL || rc == -EFBIG); /* EFBIG: the cap flag */
			refused += rc < 0;
			runs++;
		}
	}
	CHECK(refused > runs / 4);
	/* a close that names another frame than the open one */
	struct evlog *l = evlog_new(bad, 0, &err);
	ev(l, 1, 0, 1, 1, 0);
	ev(l, 0, 0, 2, 1, 4);
	CHECK_EQ(evlog_finish(l, &err), 0);
	evlog_free(l);
	CHECK_EQ(try_log(bad, &err), -EINVAL);
	CHECK(strstr(err.msg, "does not match") != NULL);
	/* frames left open at the end */
	l = evlog_new(bad, 0, &err);
	ev(l, 1, 0, 1, 1, 0);
	CHECK_EQ(evlog_finish(l, &err), 0);
	evlog_free(l);
	CHECK_EQ(try_log(bad, &err), -EINVAL);
	CHECK(strstr(err.msg, "open") != NULL);
	CHECK_EQ(try_log(tmp_path("none.evl"), &err), -ENOENT);
	unlink(bad);
	unlink(good);
	free(e.v);
	profile_free(p);
}

/* ---- pprof, decoded here ---- */

static size_t gunzip(const char *in, size_t n, uint8_t **out)
{
	z_stream z = {0};
	size_t cap = 1 << 16, len = 0;
	*out = malloc(cap);
	inflateInit2(&z, 15 + 16);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	int rc;
	do {
		if (len == cap)
			*out = realloc(*out, cap *= 2);
		z.next_out = *out + len;
		z.avail_out = (uInt)(cap - len);
		rc = inflate(&z, Z_NO_FLUSH);
		len = cap - z.avail_out;
	} while (rc == Z_OK);
	inflateEnd(&z);
	return rc == Z_STREAM_END ? len : 0;
}

static uint64_t varint(const uint8_t **p)
{
	uint64_t v = 0;
	for (int s = 0;; s += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			return v;
	}
}

struct pbfield {
	unsigned num;
	uint64_t v;	   /* varint value, or length */
	const uint8_t *at; /* bytes of a length-delimited field */
};

static int next_field(const uint8_t **p, const uint8_t *end, struct pbfield *f)
{
	if (*p >= end)
		return 0;
	uint64_t key = varint(p);
	f->num = (unsigned)(key >> 3);
	f->v = varint(p);
	f->at = *p;
	if ((key & 7) == 2)
		*p += f->v;
	return 1;
}

/* 1 if the location ids (leaf first, = frame + 1) follow a path of the tree. */
static int is_path(const struct profile *p, const uint64_t *ids, size_t n)
{
	uint32_t node = 0;
	if (n == 1 && ids[0] == profile_nframes(p) + 1)
		return 1; /* the root's own weight, as [unknown] */
	while (n--) {
		node = child(p, node, (uint32_t)(ids[n] - 1));
		if (node == PROFILE_NONE)
			return 0;
	}
	return 1;
}

static void pprof_decodes(void)
{
	const char *trace, *elf;
	struct oob_err err = {0};
	if (!prog("statics", &trace, &elf))
		SKIP("tests/gen/progs/statics not generated");
	struct evvec e = {0};
	struct profile *p = run(trace, elf, &e);
	CHECK(p);
	struct export_opts o = {.format = EXPORT_PPROF, .metric = PROFILE_CALLS};
	size_t len;
	int rc;
	char *gz = export_to_mem(p, NULL, &o, &len, &rc, &err);
	CHECK_EQ(rc, 0);
	uint8_t *raw;
	size_t n = gunzip(gz, len, &raw);
	free(gz);
	CHECK(n > 0);
	const uint8_t *q = raw, *end = raw + n;
	struct pbfield f;
	size_t nstr = 0, ntypes = 0, nsamples = 0, paths = 0;
	uint64_t sum_insns = 0, sum_calls = 0, zero_ids = 0, dflt = 0, calls_str = 0;
	static uint64_t ids[4096];
	while (next_field(&q, end, &f)) {
		if (f.num == 6) {
			if (nstr == 0)
				CHECK_EQ(f.v, 0); /* string_table[0] = "" */
			if (f.v == 5 && !memcmp(f.at, "calls", 5))
				calls_str = nstr;
			nstr++;
		} else if (f.num == 1) {
			ntypes++;
		} else if (f.num == 14) {
			dflt = f.v;
		} else if (f.num == 4 || f.num == 5) { /* location, function: id first */
			const uint8_t *s = f.at;
			struct pbfield g;
			next_field(&s, f.at + f.v, &g);
			zero_ids += g.num != 1 || g.v == 0;
		} else if (f.num == 2) {
			const uint8_t *s = f.at, *se = f.at + f.v;
			struct pbfield g;
			size_t nid = 0, nval = 0;
			uint64_t vals[3];
			while (next_field(&s, se, &g)) {
				const uint8_t *x = g.at;
				while (g.num == 1 && x < g.at + g.v && nid < 4096)
					ids[nid++] = varint(&x);
				while (g.num == 2 && x < g.at + g.v && nval < 3)
					vals[nval++] = varint(&x);
			}
			CHECK_EQ(nval, 2); /* instructions, calls (no cycles in this trace) */
			sum_insns += vals[0];
			sum_calls += vals[1];
			paths += is_path(p, ids, nid);
			nsamples++;
		}
	}
	free(raw);
	CHECK_EQ(ntypes, 2);
	CHECK_EQ(zero_ids, 0);
	CHECK(calls_str > 0);
	CHECK_EQ(dflt, calls_str);
	CHECK_EQ(paths, nsamples);
	CHECK_EQ(sum_insns, profile_node(p, 0)->total_insns);
	CHECK_EQ(sum_insns, profile_stats(p)->instructions);
	uint64_t calls = 0;
	for (uint32_t i = 0; i < profile_nnodes(p); i++)
		calls += profile_node(p, i)->calls;
	CHECK_EQ(sum_calls, calls);
	free(e.v);
	profile_free(p);
}

static void formats_parse(void)
{
	enum export_format f;
	CHECK_EQ(export_format_parse("perfetto", &f), 0);
	CHECK_EQ(f, EXPORT_PERFETTO);
	CHECK_EQ(export_format_parse("chrome", &f), -EINVAL);
	CHECK_EQ(export_format_parse("", &f), -EINVAL);
	CHECK(strstr(export_file_suffix(EXPORT_PERFETTO), "chrome") == NULL);
	struct export_opts o = {.format = EXPORT_SPEEDSCOPE};
	CHECK(export_wants_events(&o));
	o.sampled = 1;
	CHECK(!export_wants_events(&o));
	o.format = EXPORT_PPROF;
	CHECK(!export_wants_events(&o));
}

int main(void)
{
	OOBTEST_BEGIN("test_export");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_export.XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	RUN(formats_parse);
	RUN(evlog_replays_exactly);
	RUN(evlog_reports_progress);
	RUN(events_rebuild_the_tree);
	RUN(cycle_stamps_rebuild_the_tree);
	RUN(speedscope_evented_matches_functions);
	RUN(capped_log_falls_back);
	RUN(clock_rate_gives_nanoseconds);
	RUN(perfetto_min_duration_by_hand);
	RUN(foreign_frames_are_refused);
	RUN(damaged_logs_are_refused);
	RUN(pprof_decodes);
	rmdir(tmpdir);
	return OOBTEST_END();
}
