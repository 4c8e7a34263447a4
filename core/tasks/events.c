#include "tasks/events.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "util/in.h"
#include "util/oob_mem.h"

struct events {
	struct events_ev *v; /* sorted by (hart, at, line) */
	size_t n, cap;
	size_t *next; /* per hart: index of the next event not taken */
	unsigned nharts;
	struct oob_arena *arena;
};

static const char *const kinds[] = {NULL, "switch", "fork", "exec", "exit", "map"};

static int kind_of(const char *s)
{
	for (int k = 1; k <= EVENTS_MAP; k++)
		if (s && strcmp(s, kinds[k]) == 0)
			return k;
	return 0;
}

/* A non-negative integer field (JSON integer, or a real with no fraction). */
static int get_u64(json_t *o, const char *key, uint64_t *out)
{
	json_t *v = json_object_get(o, key);
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return 1;
	}
	if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 1.8e19 &&
	    json_real_value(v) == (double)(uint64_t)json_real_value(v)) {
		*out = (uint64_t)json_real_value(v);
		return 1;
	}
	return 0;
}

/* An address: an integer, or a string "0x..." (JSON integers stop at 2^63). */
static int get_addr(json_t *o, const char *key, uint64_t *out)
{
	const char *str = json_string_value(json_object_get(o, key));
	if (!str)
		return get_u64(o, key, out);
	char *end;
	errno = 0;
	*out = strtoull(str, &end, 0);
	return *str && *str != '-' && !*end && !errno;
}

static int parse_map(struct events *ev, json_t *o, struct events_ev *e, uint64_t line,
		     struct oob_err *err)
{
	const char *id = json_string_value(json_object_get(o, "build_id"));
	if (id)
		e->build_id = oob_arena_strdup(ev->arena, id);
	if ((!e->path && !id) || !get_addr(o, "base", &e->base))
		return oob_err_set(
		    err, -EINVAL,
		    "events: line %llu: map needs \"pid\", \"path\" or \"build_id\", "
		    "and \"base\" (a number or a \"0x...\" string)",
		    (unsigned long long)line);
	if (json_object_get(o, "size") && !get_addr(o, "size", &e->size))
		return oob_err_set(err, -EINVAL, "events: line %llu: bad \"size\"",
				   (unsigned long long)line);
	return 0;
}

static int parse_event(struct events *ev, json_t *o, uint64_t line, struct oob_err *err)
{
	struct events_ev e = {.line = line, .pid = -1, .child = -1};
	uint64_t hart = 0, pid, child;
	json_t *k =
	    json_object_get(o, "event") ? json_object_get(o, "event") : json_object_get(o, "type");
	if (!json_is_object(o) || !(e.kind = (uint8_t)kind_of(json_string_value(k))))
		return oob_err_set(err, -EINVAL,
				   "events: line %llu: expected an object with \"event\": switch, "
				   "fork, exec, exit or map",
				   (unsigned long long)line);
	if (json_object_get(o, "hart") && (!get_u64(o, "hart", &hart) || hart > 65535))
		return oob_err_set(err, -EINVAL, "events: line %llu: bad \"hart\"",
				   (unsigned long long)line);
	e.hart = (uint16_t)hart;
	if (get_u64(o, "seq", &e.at))
		e.by_cycle = 0;
	else if (get_u64(o, "cycle", &e.at))
		e.by_cycle = 1;
	else
		return oob_err_set(err, -EINVAL, "events: line %llu: needs \"seq\" or \"cycle\"",
				   (unsigned long long)line);
	if (get_u64(o, "pid", &pid) || get_u64(o, "tid", &pid))
		e.pid = (int64_t)pid;
	if (get_u64(o, "child", &child))
		e.child = (int64_t)child;
	const char *path = json_string_value(json_object_get(o, "path"));
	if (path)
		e.path = oob_arena_strdup(ev->arena, path);
	if (e.pid < 0 || (e.kind == EVENTS_FORK && e.child < 0) || (e.kind == EVENTS_EXEC && !path))
		return oob_err_set(err, -EINVAL, "events: line %llu: %s needs %s",
				   (unsigned long long)line, kinds[e.kind],
				   e.kind == EVENTS_FORK   ? "\"pid\" and \"child\""
				   : e.kind == EVENTS_EXEC ? "\"pid\" and \"path\""
							   : "\"pid\"");
	if (e.kind == EVENTS_MAP && parse_map(ev, o, &e, line, err) < 0)
		return err->code;
	oob_xgrow((void **)&ev->v, &ev->cap, ev->n + 1, sizeof(*ev->v));
	ev->v[ev->n++] = e;
	return 0;
}

static int cmp_ev(const void *a, const void *b)
{
	const struct events_ev *x = a, *y = b;
	if (x->hart != y->hart)
		return x->hart < y->hart ? -1 : 1;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static int read_lines(struct events *ev, struct in_stream *s, struct oob_err *err)
{
	const char *line;
	long n;
	while ((n = in_getline(s, &line, err)) >= 0) {
		uint64_t no = in_lineno(s);
		json_error_t je;
		if (n == 0 || strspn(line, " \t\r") == (size_t)n)
			continue;
		json_t *o = json_loadb(line, (size_t)n, 0, &je);
		if (!o)
			return oob_err_set(err, -EINVAL, "events: line %llu, column %d: %s",
					   (unsigned long long)no, je.column, je.text);
		int rc = parse_event(ev, o, no, err);
		json_decref(o);
		if (rc < 0)
			return rc;
	}
	return n == -1 ? 0 : (int)n;
}

struct events *events_load(const char *path, struct oob_err *err)
{
	struct in_stream *s = in_open(path, NULL, err);
	if (!s)
		return NULL;
	struct events *ev = oob_xcalloc(1, sizeof(*ev));
	ev->arena = oob_arena_new();
	int rc = read_lines(ev, s, err);
	in_close(s);
	if (rc < 0) {
		events_free(ev);
		return NULL;
	}
	qsort(ev->v, ev->n, sizeof(*ev->v), cmp_ev);
	ev->nharts = ev->n ? ev->v[ev->n - 1].hart + 1u : 0;
	ev->next = oob_xcalloc(ev->nharts + 1, sizeof(*ev->next));
	for (size_t i = ev->n; i-- > 0;)
		ev->next[ev->v[i].hart] = i; /* the first event of each hart */
	for (unsigned h = 0; h < ev->nharts; h++)
		if (ev->next[h] >= ev->n || ev->v[ev->next[h]].hart != h)
			ev->next[h] = ev->n;
	return ev;
}

void events_free(struct events *ev)
{
	if (!ev)
		return;
	free(ev->v);
	free(ev->next);
	oob_arena_free(ev->arena);
	free(ev);
}

const struct events_ev *events_peek(const struct events *ev, unsigned hart)
{
	if (hart >= ev->nharts || ev->next[hart] >= ev->n || ev->v[ev->next[hart]].hart != hart)
		return NULL;
	return &ev->v[ev->next[hart]];
}

void events_take(struct events *ev, unsigned hart)
{
	if (hart < ev->nharts)
		ev->next[hart]++;
}
