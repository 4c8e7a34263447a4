/*
 * gotrace_v2_events: decoding of the Go 1.22+ wire format (GOTRACE.md 2):
 * the event table, a generation's string, stack and clock tables, and its
 * event and CPU sample batches, in file order (gotrace_v2_order.c orders
 * them).
 */
#include <stdlib.h>
#include <string.h>

#include "go/gotrace_v2_impl.h"

#define V2_EXP_FIRST 128
#define V2_EXP_LAST  136
#define NONE	     GOTRACE_NONE

/* nargs counts every value after the type byte (dt included); stack and
 * string give the position of the stack id and of up to two string ids
 * (0 = none). */
static const struct v2_desc {
	const char *name;
	uint8_t nargs, stack, str, str2, kind;
	uint16_t minver;
} desc[V2_COUNT] = {
    [V2_EVENT_BATCH] = {"EventBatch", 4, 0, 0, 0, 0, 1022},
    [V2_STACKS] = {"Stacks", 0, 0, 0, 0, 0, 1022},
    [V2_STACK] = {"Stack", 2, 0, 0, 0, 0, 1022},
    [V2_STRINGS] = {"Strings", 0, 0, 0, 0, 0, 1022},
    [V2_STRING] = {"String", 1, 0, 0, 0, 0, 1022},
    [V2_CPU_SAMPLES] = {"CPUSamples", 0, 0, 0, 0, 0, 1022},
    [V2_CPU_SAMPLE] = {"CPUSample", 5, 4, 0, 0, GOTRACE_EV_CPU_SAMPLE, 1022},
    [V2_FREQUENCY] = {"Frequency", 1, 0, 0, 0, 0, 1022},
    [V2_PROCS_CHANGE] = {"ProcsChange", 3, 2, 0, 0, GOTRACE_EV_PROCS, 1022},
    [V2_PROC_START] = {"ProcStart", 3, 0, 0, 0, GOTRACE_EV_PROC_START, 1022},
    [V2_PROC_STOP] = {"ProcStop", 1, 0, 0, 0, GOTRACE_EV_PROC_STOP, 1022},
    [V2_PROC_STEAL] = {"ProcSteal", 4, 0, 0, 0, GOTRACE_EV_PROC_STEAL, 1022},
    [V2_PROC_STATUS] = {"ProcStatus", 3, 0, 0, 0, GOTRACE_EV_PROC_STATUS, 1022},
    [V2_GO_CREATE] = {"GoCreate", 4, 3, 0, 0, GOTRACE_EV_GO_CREATE, 1022},
    [V2_GO_CREATE_SYSCALL] = {"GoCreateSyscall", 2, 0, 0, 0, GOTRACE_EV_GO_CREATE_SYSCALL, 1022},
    [V2_GO_START] = {"GoStart", 3, 0, 0, 0, GOTRACE_EV_GO_START, 1022},
    [V2_GO_DESTROY] = {"GoDestroy", 1, 0, 0, 0, GOTRACE_EV_GO_END, 1022},
    [V2_GO_DESTROY_SYSCALL] = {"GoDestroySyscall", 1, 0, 0, 0, GOTRACE_EV_GO_END_SYSCALL, 1022},
    [V2_GO_STOP] = {"GoStop", 3, 2, 1, 0, GOTRACE_EV_GO_YIELD, 1022},
    [V2_GO_BLOCK] = {"GoBlock", 3, 2, 1, 0, GOTRACE_EV_GO_BLOCK, 1022},
    [V2_GO_UNBLOCK] = {"GoUnblock", 4, 3, 0, 0, GOTRACE_EV_GO_UNBLOCK, 1022},
    [V2_GO_SYSCALL_BEGIN] = {"GoSyscallBegin", 3, 2, 0, 0, GOTRACE_EV_GO_SYSCALL, 1022},
    [V2_GO_SYSCALL_END] = {"GoSyscallEnd", 1, 0, 0, 0, GOTRACE_EV_GO_SYSCALL_END, 1022},
    [V2_GO_SYSCALL_END_BLOCKED] = {"GoSyscallEndBlocked", 1, 0, 0, 0, GOTRACE_EV_GO_SYSCALL_EXIT,
				   1022},
    [V2_GO_STATUS] = {"GoStatus", 4, 0, 0, 0, GOTRACE_EV_GO_STATUS, 1022},
    [V2_STW_BEGIN] = {"STWBegin", 3, 2, 1, 0, GOTRACE_EV_STW_START, 1022},
    [V2_STW_END] = {"STWEnd", 1, 0, 0, 0, GOTRACE_EV_STW_DONE, 1022},
    [V2_GC_ACTIVE] = {"GCActive", 2, 0, 0, 0, GOTRACE_EV_GC_ACTIVE, 1022},
    [V2_GC_BEGIN] = {"GCBegin", 3, 2, 0, 0, GOTRACE_EV_GC_START, 1022},
    [V2_GC_END] = {"GCEnd", 2, 0, 0, 0, GOTRACE_EV_GC_DONE, 1022},
    [V2_SWEEP_ACTIVE] = {"GCSweepActive", 2, 0, 0, 0, GOTRACE_EV_SWEEP_ACTIVE, 1022},
    [V2_SWEEP_BEGIN] = {"GCSweepBegin", 2, 1, 0, 0, GOTRACE_EV_SWEEP_START, 1022},
    [V2_SWEEP_END] = {"GCSweepEnd", 3, 0, 0, 0, GOTRACE_EV_SWEEP_DONE, 1022},
    [V2_ASSIST_ACTIVE] = {"GCMarkAssistActive", 2, 0, 0, 0, GOTRACE_EV_ASSIST_ACTIVE, 1022},
    [V2_ASSIST_BEGIN] = {"GCMarkAssistBegin", 2, 1, 0, 0, GOTRACE_EV_ASSIST_START, 1022},
    [V2_ASSIST_END] = {"GCMarkAssistEnd", 1, 0, 0, 0, GOTRACE_EV_ASSIST_DONE, 1022},
    [V2_HEAP_ALLOC] = {"HeapAlloc", 2, 0, 0, 0, GOTRACE_EV_HEAP_ALLOC, 1022},
    [V2_HEAP_GOAL] = {"HeapGoal", 2, 0, 0, 0, GOTRACE_EV_HEAP_GOAL, 1022},
    [V2_GO_LABEL] = {"GoLabel", 2, 0, 1, 0, GOTRACE_EV_GO_LABEL, 1022},
    [V2_TASK_BEGIN] = {"UserTaskBegin", 5, 4, 3, 0, GOTRACE_EV_TASK_BEGIN, 1022},
    [V2_TASK_END] = {"UserTaskEnd", 3, 2, 0, 0, GOTRACE_EV_TASK_END, 1022},
    [V2_REGION_BEGIN] = {"UserRegionBegin", 4, 3, 2, 0, GOTRACE_EV_REGION_BEGIN, 1022},
    [V2_REGION_END] = {"UserRegionEnd", 4, 3, 2, 0, GOTRACE_EV_REGION_END, 1022},
    [V2_LOG] = {"UserLog", 5, 4, 2, 3, GOTRACE_EV_LOG, 1022},
    [V2_GO_SWITCH] = {"GoSwitch", 3, 0, 0, 0, GOTRACE_EV_GO_SWITCH, 1023},
    [V2_GO_SWITCH_DESTROY] = {"GoSwitchDestroy", 3, 0, 0, 0, GOTRACE_EV_GO_SWITCH_DESTROY, 1023},
    [V2_GO_CREATE_BLOCKED] = {"GoCreateBlocked", 4, 3, 0, 0, GOTRACE_EV_GO_CREATE_BLOCKED, 1023},
    [V2_GO_STATUS_STACK] = {"GoStatusStack", 5, 4, 0, 0, GOTRACE_EV_GO_STATUS, 1023},
    [V2_EXPERIMENTAL_BATCH] = {"ExperimentalBatch", 0, 0, 0, 0, 0, 1023},
    [V2_SYNC] = {"Sync", 0, 0, 0, 0, 0, 1025},
    [V2_CLOCK_SNAPSHOT] = {"ClockSnapshot", 4, 0, 0, 0, 0, 1025},
    [V2_END_OF_GENERATION] = {"EndOfGeneration", 0, 0, 0, 0, 0, 1026},
};

/* Experimental AllocFree events (1.23+), skipped: value counts. */
static const uint8_t exp_nargs[V2_EXP_LAST - V2_EXP_FIRST + 1] = {4, 4, 2, 3, 3, 2, 3, 3, 2};
static const char *const exp_names[V2_EXP_LAST - V2_EXP_FIRST + 1] = {
    "Span",	      "SpanAlloc",	     "SpanFree",
    "HeapObject",     "HeapObjectAlloc",     "HeapObjectFree",
    "GoroutineStack", "GoroutineStackAlloc", "GoroutineStackFree"};

const char *gotrace_v2_type_name(unsigned type)
{
	if (type >= V2_EXP_FIRST && type <= V2_EXP_LAST)
		return exp_names[type - V2_EXP_FIRST];
	return type < V2_COUNT && desc[type].name ? desc[type].name : "";
}

int gotrace_v2_uv_err(int rc, size_t off, const char *what, struct oob_err *err)
{
	return oob_err_set(err, -EINVAL,
			   rc == GOTRACE_UV_SHORT ? "truncated %s at offset 0x%zx"
						  : "bad varint in %s at offset 0x%zx",
			   what, off);
}

/* --- tables --------------------------------------------------------------- */

int gotrace_v2_strings_batch(struct v2 *v, const struct batch *b, struct oob_err *err)
{
	size_t pos = b->pay + 1, end = b->pay + b->len;
	uint64_t id, len;
	int rc;
	while (pos < end) {
		size_t off = pos;
		if (v->p[pos++] != V2_STRING)
			return oob_err_set(err, -EINVAL, "expected a String at offset 0x%zx", off);
		if ((rc = gotrace_uv(v->p, end, &pos, &id)) < 0 ||
		    (rc = gotrace_uv(v->p, end, &pos, &len)) < 0)
			return gotrace_v2_uv_err(rc, off, "String", err);
		if (len > GOTRACE_MAX_STRING || len > end - pos)
			return oob_err_set(
			    err, -EINVAL, "String at offset 0x%zx: length %llu runs past its batch",
			    off, (unsigned long long)len);
		int fresh;
		uint64_t *slot = oob_map_put(&v->strs, id, &fresh);
		if (!fresh)
			return oob_err_set(
			    err, -EINVAL,
			    "String at offset 0x%zx: duplicate id %llu in generation "
			    "%llu",
			    off, (unsigned long long)id, (unsigned long long)v->gen);
		*(const char **)gotrace_vec_push(&v->strv, sizeof(char *)) =
		    gotrace_strdup(v->t, v->p + pos, (size_t)len);
		*slot = v->strv.n - 1;
		pos += (size_t)len;
		v->t->info.strings++;
	}
	return 0;
}

static const char *str_get(const struct v2 *v, uint64_t id)
{
	const uint64_t *i = id ? oob_map_get(&v->strs, id) : NULL;
	return i ? ((const char **)v->strv.p)[*i] : "";
}

static uint32_t stack_get(const struct v2 *v, uint64_t id)
{
	const uint64_t *i = id ? oob_map_get(&v->stks, id) : NULL;
	return i ? (uint32_t)*i : 0;
}

static int one_stack(struct v2 *v, size_t *pos, size_t end, struct oob_err *err)
{
	size_t off = *pos - 1;
	uint64_t id, nf, x[4];
	int rc;
	if ((rc = gotrace_uv(v->p, end, pos, &id)) < 0 ||
	    (rc = gotrace_uv(v->p, end, pos, &nf)) < 0)
		return gotrace_v2_uv_err(rc, off, "Stack", err);
	if (nf > GOTRACE_MAX_FRAMES || nf > end - *pos)
		return oob_err_set(err, -EINVAL, "Stack at offset 0x%zx has %llu frames", off,
				   (unsigned long long)nf);
	struct gotrace_frame *f = oob_arena_alloc(v->t->arena, (size_t)nf * sizeof(*f) + 1);
	for (size_t i = 0; i < nf; i++) {
		for (int k = 0; k < 4; k++)
			if ((rc = gotrace_uv(v->p, end, pos, &x[k])) < 0)
				return gotrace_v2_uv_err(rc, off, "Stack frame", err);
		f[i] = (struct gotrace_frame){x[0], str_get(v, x[1]), str_get(v, x[2]), x[3]};
	}
	int fresh;
	uint64_t *slot = oob_map_put(&v->stks, id, &fresh);
	if (!fresh)
		return oob_err_set(err, -EINVAL,
				   "Stack at offset 0x%zx: duplicate id %llu in generation %llu",
				   off, (unsigned long long)id, (unsigned long long)v->gen);
	uint32_t dense = gotrace_stack_new(v->t);
	v->t->stacks[dense].frames = f;
	v->t->stacks[dense].n = (uint32_t)nf;
	*slot = dense;
	v->t->info.stacks++;
	return 0;
}

int gotrace_v2_stacks_batch(struct v2 *v, const struct batch *b, struct oob_err *err)
{
	size_t pos = b->pay + 1, end = b->pay + b->len;
	while (pos < end) {
		if (v->p[pos++] != V2_STACK)
			return oob_err_set(err, -EINVAL, "expected a Stack at offset 0x%zx",
					   pos - 1);
		int rc = one_stack(v, &pos, end, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int clock_snapshot(struct v2 *v, const struct batch *b, size_t *pos, size_t end,
			  struct oob_err *err)
{
	uint64_t x[4];
	int rc;
	for (int k = 0; k < 4; k++)
		if ((rc = gotrace_uv(v->p, end, pos, &x[k])) < 0)
			return gotrace_v2_uv_err(rc, b->pay, "ClockSnapshot", err);
	struct gotrace_info *in = &v->t->info;
	if (!in->clock_ticks) {
		in->clock_ticks = b->time + x[0];
		in->clock_mono_ns = x[1];
		in->clock_wall_s = x[2];
		in->clock_wall_ns = x[3];
	}
	return 0;
}

/* A frequency batch (before 1.25) or a Sync batch (1.25+). */
int gotrace_v2_sync_batch(struct v2 *v, const struct batch *b, struct oob_err *err)
{
	size_t pos = b->pay + (v->p[b->pay] == V2_SYNC), end = b->pay + b->len;
	int rc;
	while (pos < end) {
		size_t off = pos;
		uint8_t typ = v->p[pos++];
		if (typ == V2_FREQUENCY) {
			uint64_t f;
			if ((rc = gotrace_uv(v->p, end, &pos, &f)) < 0)
				return gotrace_v2_uv_err(rc, off, "Frequency", err);
			if (f == 0)
				return oob_err_set(err, -EINVAL, "Frequency 0 at offset 0x%zx",
						   off);
			v->freq = f;
		} else if (typ == V2_CLOCK_SNAPSHOT && v->ver >= 1025) {
			if ((rc = clock_snapshot(v, b, &pos, end, err)) < 0)
				return rc;
		} else {
			return oob_err_set(err, -EINVAL,
					   "unexpected event type %u at offset 0x%zx in a %s batch",
					   typ, off, v->ver >= 1025 ? "Sync" : "frequency");
		}
	}
	return 0;
}

/* --- event batches ---------------------------------------------------------- */

static struct cursor *cursor_of(struct v2 *v, uint64_t m)
{
	int fresh;
	uint64_t *slot = oob_map_put(&v->curmap, m, &fresh);
	if (fresh) {
		struct cursor *c = gotrace_vec_push(&v->cursors, sizeof(*c));
		memset(c, 0, sizeof(*c));
		c->m = m;
		*slot = v->cursors.n - 1;
	}
	return &((struct cursor *)v->cursors.p)[*slot];
}

/* Fills e from the values a[] of a wire event of type typ. */
static void fill(struct v2 *v, struct gotrace_event *e, unsigned typ, const uint64_t *a)
{
	const struct v2_desc *d = &desc[typ];
	size_t k = 0;
	e->kind = d->kind;
	for (unsigned i = 1; i < d->nargs; i++) {
		if (i == d->stack)
			e->stack = stack_get(v, a[i]);
		else if (i == d->str)
			e->str = str_get(v, a[i]);
		else if (i == d->str2)
			e->str2 = str_get(v, a[i]);
		else if (k < 3)
			e->args[k++] = a[i];
	}
	if (typ == V2_GO_CREATE || typ == V2_GO_CREATE_BLOCKED)
		e->args[1] = stack_get(v, a[2]);
}

int gotrace_v2_event_batch(struct v2 *v, const struct batch *b, struct oob_err *err)
{
	size_t pos = b->pay, end = b->pay + b->len;
	uint64_t ticks = b->time, a[5];
	uint64_t m = b->m == OOB_MAP_EMPTY ? NONE : b->m;
	int rc;
	while (pos < end) {
		size_t off = pos;
		unsigned typ = v->p[pos++];
		int exp = typ >= V2_EXP_FIRST && typ <= V2_EXP_LAST && v->ver >= 1023;
		unsigned na = exp	       ? exp_nargs[typ - V2_EXP_FIRST]
			      : typ < V2_COUNT ? desc[typ].nargs
					       : 0;
		if (!exp && (typ < V2_PROCS_CHANGE || typ >= V2_COUNT || !desc[typ].kind ||
			     desc[typ].minver > v->ver))
			return oob_err_set(
			    err, -EINVAL,
			    "unknown event type %u at offset 0x%zx (event batch at 0x%zx)", typ,
			    off, b->hdr);
		for (unsigned i = 0; i < na; i++)
			if ((rc = gotrace_uv(v->p, end, &pos, &a[i])) < 0)
				return gotrace_v2_uv_err(rc, off, "event", err);
		ticks += a[0];
		v->t->counts[typ]++;
		if (exp)
			continue;
		if (v->t->nev >= UINT32_MAX - 1)
			return oob_err_set(err, -EFBIG, "more than 4G events");
		struct gotrace_event *e = gotrace_push(v->t);
		e->ticks = ticks;
		e->off = off;
		e->gen = (uint32_t)v->gen;
		e->type = (uint8_t)typ;
		e->m = m;
		fill(v, e, typ, a);
		*(uint32_t *)gotrace_vec_push(&cursor_of(v, m)->idx, sizeof(uint32_t)) =
		    (uint32_t)(v->t->nev - 1);
	}
	return 0;
}

int gotrace_v2_samples_batch(struct v2 *v, const struct batch *b, struct oob_err *err)
{
	size_t pos = b->pay + 1, end = b->pay + b->len;
	uint64_t a[5];
	int rc;
	while (pos < end) {
		size_t off = pos;
		if (v->p[pos++] != V2_CPU_SAMPLE)
			return oob_err_set(err, -EINVAL, "expected a CPUSample at offset 0x%zx",
					   off);
		for (int i = 0; i < 5; i++)
			if ((rc = gotrace_uv(v->p, end, &pos, &a[i])) < 0)
				return gotrace_v2_uv_err(rc, off, "CPUSample", err);
		v->t->counts[V2_CPU_SAMPLE]++;
		struct gotrace_event *e = gotrace_push(v->t);
		e->ticks = a[0];
		e->off = off;
		e->gen = (uint32_t)v->gen;
		e->type = V2_CPU_SAMPLE;
		e->kind = GOTRACE_EV_CPU_SAMPLE;
		e->m = a[1] == OOB_MAP_EMPTY ? NONE : a[1];
		e->p = a[2];
		e->g = a[3] ? a[3] : NONE;
		e->stack = stack_get(v, a[4]);
		*(uint32_t *)gotrace_vec_push(&v->samples, sizeof(uint32_t)) =
		    (uint32_t)(v->t->nev - 1);
	}
	return 0;
}
