/* timeline: the merger's bounds, and hart intervals and window profiles of a
 * real full-system run (Spike: Linux, /init, /prog) checked against the
 * profile recon built in the same pass, whose per-process counts the
 * integration tests check against the log itself. */
#include <errno.h>

#include "recon/evlog.h"
#include "oobtest.h"
#include "profile/profile.h"
#include "recon/recon.h"
#include "timeline/timeline.h"
#include "timeline/timeline_json.h"

static void merger_keeps_long_spans_and_bounds_short_ones(void)
{
	struct timeline_spans out = {0};
	struct timeline_merger m;
	timeline_merger_init(&m, 100, 10100, 50, &out);
	uint64_t t = 0, n_in = 0;
	/* 0..100 is before the window; then short spans (1..9) with a long one
	 * (200) every 100 spans. */
	for (int i = 0; t < 12000; i++) {
		uint64_t d = i % 100 == 99 ? 200 : (uint64_t)(i % 9) + 1;
		struct timeline_span s = {
		    .start = t, .end = t + d, .a = i, .n = 1, .state = (uint8_t)(i & 1)};
		timeline_merger_add(&m, &s);
		n_in += s.end > 100 && s.start < 10100;
		t += d;
	}
	uint64_t merged = timeline_merger_end(&m);
	CHECK(out.n > 0);
	CHECK_EQ(out.v[0].start, 100);
	CHECK_EQ(out.v[out.n - 1].end, 10100);
	uint64_t covered = 0, members = 0;
	for (size_t i = 0; i < out.n; i++) {
		CHECK(out.v[i].end > out.v[i].start);
		if (i)
			CHECK_EQ(out.v[i].start, out.v[i - 1].end); /* nothing lost */
		/* short only when a long one (or the window's end) cut the group */
		if (i + 1 < out.n && out.v[i].end - out.v[i].start < 50)
			CHECK(out.v[i + 1].end - out.v[i + 1].start >= 50);
		covered += out.v[i].end - out.v[i].start;
		members += out.v[i].n;
	}
	CHECK_EQ(covered, 10000);
	CHECK_EQ(members, n_in);
	CHECK_EQ(merged, n_in - out.n);
	CHECK(out.n <= 2 * 10000 / 50 + 1);
	free(out.v);
}

static void merger_group_shows_its_longest_member(void)
{
	struct timeline_spans out = {0};
	struct timeline_merger m;
	timeline_merger_init(&m, 0, 0, 100, &out);
	struct timeline_span v[] = {{0, 10, 1, 1, 0, 0},
				    {10, 60, 2, 1, 1, 0},
				    {60, 70, 3, 1, 0, 0},
				    {70, 110, 4, 1, 0, 0},
				    {110, 400, 5, 1, 1, 0}};
	for (size_t i = 0; i < 5; i++)
		timeline_merger_add(&m, &v[i]);
	CHECK_EQ(timeline_merger_end(&m), 3);
	CHECK_EQ(out.n, 2);
	CHECK_EQ(out.v[0].end, 110);
	CHECK_EQ(out.v[0].a, 2);
	CHECK_EQ(out.v[0].state, 1);
	CHECK_EQ(out.v[0].n, 4);
	CHECK_EQ(out.v[1].a, 5);
	free(out.v);
}

static void tracks_parse(void)
{
	unsigned t;
	struct oob_err e = {0};
	CHECK_EQ(timeline_tracks_parse("harts,gc", &t, &e), 0);
	CHECK_EQ(t, TIMELINE_T_HARTS | TIMELINE_T_GC);
	CHECK_EQ(timeline_tracks_parse("all", &t, &e), 0);
	CHECK_EQ(t, TIMELINE_T_ALL);
	CHECK_EQ(timeline_tracks_parse("harts,bogus", &t, &e), -EINVAL);
	CHECK(strstr(e.msg, "bogus"));
	CHECK_EQ(timeline_tracks_parse("", &t, &e), -EINVAL);
}

/* The Spike run, reconstructed once with its stack events. */
static struct profile *spike;
static struct evlog *spike_log;

static int load_spike(void)
{
	if (spike)
		return 1;
	const char *log = oobtest_gen("readers/spike.log"), *vm = oobtest_gen("vmlinux");
	const char *init = oobtest_shared("fixtures/spike/init");
	const char *prog = oobtest_shared("fixtures/spike/prog");
	if (!log || !vm || !init || !prog)
		return 0;
	struct recon_elf elfs[] = {
	    {vm, RECON_BASE_LINK}, {init, RECON_BASE_LINK}, {prog, RECON_BASE_LINK}};
	struct oob_err err = {0};
	struct recon_opts o = {.elfs = elfs, .nelfs = 3, .on_event = evlog_record};
	o.event_ctx = spike_log = evlog_new(NULL, 0, &err);
	if (!spike_log || recon_run(&o, &log, 1, &spike, &err) < 0 ||
	    evlog_finish(spike_log, &err) < 0) {
		fprintf(stderr, "spike: %s\n", err.msg);
		return 0;
	}
	return 1;
}

static void hart_intervals_add_up_to_process_counts(void)
{
	if (!load_spike())
		SKIP("the Spike fixture is missing");
	struct timeline *t = NULL;
	struct oob_err err = {0};
	struct timeline_opts o = {.hart = -1};
	CHECK_EQ(timeline_harts(spike_log, spike, &o, &t, &err), 0);
	CHECK(!t->cycles);
	CHECK_EQ(t->nharts, 1);
	size_t np = profile_nprocesses(spike);
	CHECK(np >= 5);
	uint64_t *sum = calloc(2 * np, sizeof(*sum)), none = 0, total = 0;
	const struct timeline_spans *s = &t->harts[0].spans;
	for (size_t i = 0; i < s->n; i++) {
		uint64_t d = s->v[i].end - s->v[i].start;
		CHECK(s->v[i].n == 1);
		if (i)
			CHECK_EQ(s->v[i].start, s->v[i - 1].end);
		if (s->v[i].a == TIMELINE_NONE)
			none += d;
		else
			sum[2 * (size_t)s->v[i].a + s->v[i].state] += d;
		total += d;
	}
	/* One hart and no cycles: the axis is the instruction index. */
	for (size_t i = 0; i < np; i++) {
		const struct profile_process *q = profile_process(spike, i);
		CHECK_EQ(sum[2 * i], q->insns_user);
		CHECK_EQ(sum[2 * i + 1], q->insns_kernel);
	}
	CHECK_EQ(total + t->start, profile_stats(spike)->instructions);
	CHECK_EQ(t->end, profile_stats(spike)->instructions);
	free(sum);
	(void)none;
	timeline_free(t);
}

static void whole_window_profile_is_the_profile(void)
{
	if (!load_spike())
		SKIP("the Spike fixture is missing");
	struct profile *w = NULL;
	struct oob_err err = {0};
	CHECK_EQ(timeline_profile(spike_log, spike, -1, 0, 0, &w, &err), 0);
	CHECK_EQ(profile_nnodes(w), profile_nnodes(spike));
	for (uint32_t i = 0; i < profile_nnodes(w); i++) {
		const struct profile_node *a = profile_node(w, i), *b = profile_node(spike, i);
		CHECK_EQ(a->self_insns, b->self_insns);
		CHECK_EQ(a->calls, b->calls);
	}
	CHECK_EQ(profile_nprocesses(w), profile_nprocesses(spike));
	profile_free(w);
}

/* A window cut at interval edges holds exactly the instructions of the
 * intervals inside it, all under the processes that ran them. */
static void window_at_interval_edges_is_exact(void)
{
	if (!load_spike())
		SKIP("the Spike fixture is missing");
	struct timeline *t = NULL;
	struct profile *w = NULL;
	struct oob_err err = {0};
	struct timeline_opts o = {.hart = -1};
	CHECK_EQ(timeline_harts(spike_log, spike, &o, &t, &err), 0);
	const struct timeline_spans *s = &t->harts[0].spans;
	CHECK(s->n > 10);
	size_t a = s->n / 3, b = 2 * s->n / 3;
	uint64_t from = s->v[a].start, to = s->v[b].end, want = to - from;
	CHECK_EQ(timeline_profile(spike_log, spike, 0, from, to, &w, &err), 0);
	CHECK_EQ(profile_node(w, 0)->total_insns, want);
	CHECK_EQ(profile_stats(w)->instructions, want);
	/* Per process: what its intervals inside the window say. */
	for (uint32_t c = profile_node(w, 0)->first_child; c != PROFILE_NONE;
	     c = profile_node(w, c)->next_sibling) {
		uint64_t in = 0;
		for (size_t i = a; i <= b; i++)
			if (s->v[i].a != TIMELINE_NONE &&
			    profile_process(spike, (size_t)s->v[i].a)->frame ==
				profile_node(w, c)->frame)
				in += s->v[i].end - s->v[i].start;
		CHECK_EQ(profile_node(w, c)->total_insns, in);
	}
	profile_free(w);
	timeline_free(t);
}

/* A user-space program: one state from its first to its last instruction,
 * which must still be an interval (the state a hart ends in). */
static void one_state_is_one_interval(void)
{
	const char *trace = oobtest_gen("progs/mixed.oobt"), *elf = oobtest_gen("progs/mixed");
	if (!trace || !elf)
		SKIP("tests/gen/progs/mixed not generated");
	struct recon_elf e = {elf, RECON_BASE_LINK};
	struct oob_err err = {0};
	struct evlog *log = evlog_new(NULL, 0, &err);
	struct recon_opts o = {.elfs = &e, .nelfs = 1, .on_event = evlog_record, .event_ctx = log};
	struct profile *p = NULL;
	struct timeline *t = NULL;
	struct timeline_opts to = {.hart = -1};
	CHECK_EQ(recon_run(&o, &trace, 1, &p, &err), 0);
	CHECK_EQ(evlog_finish(log, &err), 0);
	CHECK_EQ(timeline_harts(log, p, &to, &t, &err), 0);
	CHECK_EQ(t->nharts, 1);
	CHECK_EQ(t->harts[0].spans.n, 1);
	CHECK_EQ(t->harts[0].spans.v[0].a, TIMELINE_NONE);
	CHECK_EQ(t->harts[0].spans.v[0].end, profile_stats(p)->instructions);
	CHECK_EQ(t->harts[0].spans.v[0].start, t->start);
	timeline_free(t);
	profile_free(p);
	evlog_free(log);
}

int main(void)
{
	OOBTEST_BEGIN("test_timeline");
	RUN(merger_keeps_long_spans_and_bounds_short_ones);
	RUN(merger_group_shows_its_longest_member);
	RUN(tracks_parse);
	RUN(hart_intervals_add_up_to_process_counts);
	RUN(whole_window_profile_is_the_profile);
	RUN(window_at_interval_edges_is_exact);
	RUN(one_state_is_one_interval);
	profile_free(spike);
	evlog_free(spike_log);
	return OOBTEST_END();
}
