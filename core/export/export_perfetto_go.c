/*
 * The Go runtime's tracks in a Chrome Trace Event file: a second process
 * (pid 2) beside the harts, one thread per P, per M (OS thread) and per
 * goroutine, and one for GC and stop-the-world phases, each interval an
 * "X" event named by its state. Times go through the job's Go clock model
 * onto the trace's axis, then through the export's clock, so they line up
 * with the harts' frames.
 */
#include <inttypes.h>
#include <stdio.h>

#include "export/export_impl.h"

#define GO_PID 2

struct gw {
	FILE *f;
	const struct export_clock *c;
	const struct timeline_go *go;
	uint64_t min, written;
	unsigned tid;
};

static void thread_meta(struct gw *w, const char *label)
{
	w->tid++;
	fprintf(w->f,
		",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_sort_index\","
		"\"args\":{\"sort_index\":%u}}",
		GO_PID, w->tid, w->tid);
	fprintf(w->f,
		",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_name\",\"args\":{"
		"\"name\":",
		GO_PID, w->tid);
	export_json_str(w->f, label);
	fputs("}}", w->f);
}

/* "P3", "M12", "G7 main.worker" */
static void entity_meta(struct gw *w, char kind, uint64_t id, const char *name)
{
	char label[512];
	snprintf(label, sizeof(label), "%c%" PRIu64 "%s%s", kind, id, name ? " " : "",
		 name ? name : "");
	thread_meta(w, label);
}

static void interval(struct gw *w, uint64_t start, uint64_t end, const char *name)
{
	uint64_t s = export_clock_axis(w->c, timeline_go_time(w->go, start));
	uint64_t e = export_clock_axis(w->c, timeline_go_time(w->go, end));
	if (e <= s || e - s < w->min)
		return;
	fprintf(w->f,
		",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%" PRIu64 ".%03" PRIu64
		",\"dur\":%" PRIu64 ".%03" PRIu64 ",\"name\":\"%s\",\"cat\":\"go\"}",
		GO_PID, w->tid, s / 1000, s % 1000, (e - s) / 1000, (e - s) % 1000, name);
	w->written++;
}

static void spans(struct gw *w, const struct gotrace_span *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		interval(w, v[i].start, v[i].end, gotrace_gstate_name(v[i].state));
}

uint64_t export_perfetto_go(FILE *f, const struct export_clock *c, const struct timeline_go *go,
			    uint64_t min_ns)
{
	struct gw w = {.f = f, .c = c, .go = go, .min = min_ns};
	const struct gotrace_model *m = gotrace_model(go->trace);
	fprintf(f,
		",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":{"
		"\"name\":\"Go runtime\"}}",
		GO_PID);
	thread_meta(&w, "GC");
	for (size_t i = 0; i < m->nranges; i++)
		if (m->ranges[i].kind == GOTRACE_R_GC || m->ranges[i].kind == GOTRACE_R_STW)
			interval(&w, m->ranges[i].start, m->ranges[i].end,
				 m->ranges[i].kind == GOTRACE_R_GC ? "GC" : "STW");
	for (size_t i = 0; i < m->nps; i++) {
		entity_meta(&w, 'P', m->ps[i].id, NULL);
		spans(&w, m->pspans + m->ps[i].span0, m->ps[i].nspans);
	}
	for (size_t i = 0; i < m->nms; i++) {
		entity_meta(&w, 'M', m->ms[i].id, NULL);
		spans(&w, m->mspans + m->ms[i].span0, m->ms[i].nspans);
	}
	for (size_t i = 0; i < m->ngs; i++) {
		entity_meta(&w, 'G', m->gs[i].id, m->gs[i].name);
		spans(&w, m->gspans + m->gs[i].span0, m->gs[i].nspans);
	}
	return w.written;
}
