/*
 * gotrace_v2: the Go 1.22+ wire format (GOTRACE.md 2) and its ordering.
 *
 * The file is a sequence of length-prefixed batches grouped in generations
 * (a change of the generation number before 1.26, an EndOfGeneration byte
 * from 1.26). String and stack ids are per generation, so each generation is
 * decoded on its own: tables first (their batches may come after the events
 * that use them), then the per-M event batches. Events are put in order with
 * the scheduler state machine Go's own reader uses: per-M cursors are tried
 * earliest first, and an event is taken only when its preconditions hold (the
 * goroutine's or P's sequence number is the next one, the state is right);
 * state that a generation's GoStatus/ProcStatus events establish carries over
 * to the next generation.
 */
#include <stdlib.h>
#include <string.h>

#include "go/gotrace_impl.h"

enum {
	V2_EVENT_BATCH = 1,
	V2_STACKS,
	V2_STACK,
	V2_STRINGS,
	V2_STRING,
	V2_CPU_SAMPLES,
	V2_CPU_SAMPLE,
	V2_FREQUENCY,
	V2_PROCS_CHANGE,
	V2_PROC_START,
	V2_PROC_STOP,
	V2_PROC_STEAL,
	V2_PROC_STATUS,
	V2_GO_CREATE,
	V2_GO_CREATE_SYSCALL,
	V2_GO_START,
	V2_GO_DESTROY,
	V2_GO_DESTROY_SYSCALL,
	V2_GO_STOP,
	V2_GO_BLOCK,
	V2_GO_UNBLOCK,
	V2_GO_SYSCALL_BEGIN,
	V2_GO_SYSCALL_END,
	V2_GO_SYSCALL_END_BLOCKED,
	V2_GO_STATUS,
	V2_STW_BEGIN,
	V2_STW_END,
	V2_GC_ACTIVE,
	V2_GC_BEGIN,
	V2_GC_END,
	V2_SWEEP_ACTIVE,
	V2_SWEEP_BEGIN,
	V2_SWEEP_END,
	V2_ASSIST_ACTIVE,
	V2_ASSIST_BEGIN,
	V2_ASSIST_END,
	V2_HEAP_ALLOC,
	V2_HEAP_GOAL,
	V2_GO_LABEL,
	V2_TASK_BEGIN,
	V2_TASK_END,
	V2_REGION_BEGIN,
	V2_REGION_END,
	V2_LOG,
	V2_GO_SWITCH,
	V2_GO_SWITCH_DESTROY,
	V2_GO_CREATE_BLOCKED,
	V2_GO_STATUS_STACK,
	V2_EXPERIMENTAL_BATCH,
	V2_SYNC,
	V2_CLOCK_SNAPSHOT,
	V2_END_OF_GENERATION,
	V2_COUNT
};

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

struct batch {
	uint64_t gen, m, time;
	size_t hdr, pay, len; /* header offset, payload offset and length */
};

struct seq {
	uint64_t gen, n;
};

struct gs {
	uint8_t status; /* v2 gstatus; 0 = does not exist */
	struct seq seq;
};

struct ps {
	uint8_t status; /* v2 pstatus; 0 = unknown */
	struct seq seq;
};

struct ms {
	uint64_t g, p;
};

struct cursor {
	uint64_t m;
	struct gotrace_vec idx; /* uint32 event indexes in file order */
	size_t pos;
};

struct v2 {
	struct gotrace *t;
	const uint8_t *p;
	size_t n;
	int ver;
	struct gotrace_vec batches; /* struct batch, the whole file */
	/* per generation */
	uint64_t gen;
	struct oob_map strs, stks; /* id -> index in strv / dense stack id */
	struct gotrace_vec strv;
	struct gotrace_vec cursors; /* struct cursor */
	struct oob_map curmap;	    /* M -> cursor index */
	struct gotrace_vec samples; /* uint32 event indexes */
	uint64_t freq;
	/* ordering state, across generations */
	uint64_t initial_gen;
	struct oob_map gmap, pmap, mmap; /* id -> index */
	struct gotrace_vec gv, pv, mv;
	int gc_state; /* 0 undetermined, 1 not running, 2 running */
	uint64_t gc_seq;
};

static int uv_err(int rc, size_t off, const char *what, struct oob_err *err)
{
	return oob_err_set(err, -EINVAL,
			   rc == GOTRACE_UV_SHORT ? "truncated %s at offset 0x%zx"
						  : "bad varint in %s at offset 0x%zx",
			   what, off);
}

/* --- batches -------------------------------------------------------------- */

static int read_batch(struct v2 *v, size_t *pos, int experimental, struct oob_err *err)
{
	size_t off = *pos - 1;
	uint64_t x[4];
	int rc;
	if (experimental && (*pos)++ >= v->n)
		return uv_err(GOTRACE_UV_SHORT, off, "ExperimentalBatch header", err);
	for (int i = 0; i < 4; i++)
		if ((rc = gotrace_uv(v->p, v->n, pos, &x[i])) < 0)
			return uv_err(rc, off, "batch header", err);
	if (x[3] > v->n - *pos)
		return oob_err_set(
		    err, -EINVAL,
		    "batch at offset 0x%zx: length %llu runs past the end of the trace "
		    "(truncated?)",
		    off, (unsigned long long)x[3]);
	if (x[0] == 0)
		return oob_err_set(err, -EINVAL, "batch at offset 0x%zx has generation 0", off);
	struct batch *b = gotrace_vec_push(&v->batches, sizeof(*b));
	*b = (struct batch){
	    .gen = x[0], .m = x[1], .time = x[2], .hdr = off, .pay = *pos, .len = (size_t)x[3]};
	if (experimental)
		b->len = SIZE_MAX; /* marks it skipped */
	*pos += (size_t)x[3];
	v->t->info.batches++;
	return 0;
}

/* Reads every batch header. End-of-generation markers become batches with
 * gen 0. */
static int read_batches(struct v2 *v, struct oob_err *err)
{
	size_t pos = 16;
	while (pos < v->n) {
		uint8_t b = v->p[pos++];
		int rc = 0;
		if (b == V2_EVENT_BATCH)
			rc = read_batch(v, &pos, 0, err);
		else if (b == V2_EXPERIMENTAL_BATCH && v->ver >= 1023)
			rc = read_batch(v, &pos, 1, err);
		else if (b == V2_END_OF_GENERATION && v->ver >= 1026)
			memset(gotrace_vec_push(&v->batches, sizeof(struct batch)), 0,
			       sizeof(struct batch));
		else
			rc = oob_err_set(err, -EINVAL,
					 "expected a batch at offset 0x%zx, found byte 0x%02x",
					 pos - 1, b);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* --- tables --------------------------------------------------------------- */

static int strings_batch(struct v2 *v, const struct batch *b, struct oob_err *err)
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
			return uv_err(rc, off, "String", err);
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
		return uv_err(rc, off, "Stack", err);
	if (nf > GOTRACE_MAX_FRAMES || nf > end - *pos)
		return oob_err_set(err, -EINVAL, "Stack at offset 0x%zx has %llu frames", off,
				   (unsigned long long)nf);
	struct gotrace_frame *f = oob_arena_alloc(v->t->arena, (size_t)nf * sizeof(*f) + 1);
	for (size_t i = 0; i < nf; i++) {
		for (int k = 0; k < 4; k++)
			if ((rc = gotrace_uv(v->p, end, pos, &x[k])) < 0)
				return uv_err(rc, off, "Stack frame", err);
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

static int stacks_batch(struct v2 *v, const struct batch *b, struct oob_err *err)
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
			return uv_err(rc, b->pay, "ClockSnapshot", err);
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
static int sync_batch(struct v2 *v, const struct batch *b, struct oob_err *err)
{
	size_t pos = b->pay + (v->p[b->pay] == V2_SYNC), end = b->pay + b->len;
	int rc;
	while (pos < end) {
		size_t off = pos;
		uint8_t typ = v->p[pos++];
		if (typ == V2_FREQUENCY) {
			uint64_t f;
			if ((rc = gotrace_uv(v->p, end, &pos, &f)) < 0)
				return uv_err(rc, off, "Frequency", err);
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

static int event_batch(struct v2 *v, const struct batch *b, struct oob_err *err)
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
				return uv_err(rc, off, "event", err);
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

static int samples_batch(struct v2 *v, const struct batch *b, struct oob_err *err)
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
				return uv_err(rc, off, "CPUSample", err);
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

/* --- ordering: the scheduler state machine ---------------------------------- */

enum { G_RUNNABLE = 1, G_RUNNING, G_SYSCALL, G_WAITING };
enum { P_RUNNING = 1, P_IDLE, P_SYSCALL, P_ABANDONED };
enum { WAIT = 0, GO = 1 };
enum { MUST = 1, MAY, MUSTNOT };

struct ctx {
	uint64_t g, p, m;
};

static void *state_get(struct oob_map *map, struct gotrace_vec *v, size_t elem, uint64_t id,
		       int create)
{
	uint64_t *slot = create ? NULL : oob_map_get(map, id);
	int fresh = 0;
	if (create)
		slot = oob_map_put(map, id, &fresh);
	if (!slot)
		return NULL;
	if (fresh) {
		memset(gotrace_vec_push(v, elem), 0, elem);
		*slot = v->n - 1;
	}
	return (char *)v->p + elem * *slot;
}

/* NULL if g does not exist (status 0 counts as absent). */
static struct gs *gfind(struct v2 *v, uint64_t g)
{
	struct gs *s = g == NONE ? NULL : state_get(&v->gmap, &v->gv, sizeof(struct gs), g, 0);
	return s && s->status ? s : NULL;
}

static struct gs *gmake(struct v2 *v, uint64_t g)
{
	return state_get(&v->gmap, &v->gv, sizeof(struct gs), g, 1);
}

static struct ps *pfind(struct v2 *v, uint64_t p)
{
	struct ps *s = p == NONE ? NULL : state_get(&v->pmap, &v->pv, sizeof(struct ps), p, 0);
	return s && s->status ? s : NULL;
}

static struct ps *pmake(struct v2 *v, uint64_t p)
{
	return state_get(&v->pmap, &v->pv, sizeof(struct ps), p, 1);
}

static struct ms *mfind(struct v2 *v, uint64_t m, int create)
{
	int existed = oob_map_get(&v->mmap, m) != NULL;
	struct ms *s = state_get(&v->mmap, &v->mv, sizeof(struct ms), m, create);
	if (s && !existed)
		s->g = s->p = NONE;
	return s;
}

static int succeeds(struct seq next, struct seq prev)
{
	return next.gen == prev.gen && next.n == prev.n + 1;
}

static int need(struct v2 *v, const struct gotrace_event *e, const struct ctx *c, int m, int p,
		int g, struct oob_err *err)
{
	const char *what = NULL;
	if (m == MUST && c->m == NONE)
		what = "a thread";
	else if (p == MUST && c->p == NONE)
		what = "a P";
	else if (p == MUSTNOT && c->p != NONE)
		what = "no P";
	else if (g == MUST && c->g == NONE)
		what = "a goroutine";
	else if (g == MUSTNOT && c->g != NONE)
		what = "no goroutine";
	if (!what)
		return 0;
	(void)v;
	return oob_err_set(err, -EINVAL, "%s at offset 0x%llx expected %s on M %lld",
			   desc[e->type].name, (unsigned long long)e->off, what, (long long)c->m);
}

static int broken(const struct gotrace_event *e, const char *why, uint64_t id, struct oob_err *err)
{
	return oob_err_set(err, -EINVAL, "%s at offset 0x%llx: %s %lld", desc[e->type].name,
			   (unsigned long long)e->off, why, (long long)id);
}

static int adv_proc_status(struct v2 *v, struct gotrace_event *e, struct ctx *c,
			   struct oob_err *err)
{
	uint64_t p = e->args[0], st = e->args[1];
	if (st < P_RUNNING || st > P_ABANDONED)
		return broken(e, "invalid status for P", p, err);
	struct ps *s = pfind(v, p);
	if (s && !(st == P_ABANDONED && (s->status == P_SYSCALL || s->status == P_ABANDONED)) &&
	    s->status != st)
		return broken(e, "status does not match the state of P", p, err);
	if (!s) {
		s = pmake(v, p);
		s->status = (uint8_t)st;
	}
	s->seq = (struct seq){v->gen, 0};
	if (st == P_RUNNING || st == P_SYSCALL)
		c->p = p;
	e->p = p;
	return GO;
}

static int adv_proc(struct v2 *v, struct gotrace_event *e, struct ctx *c, struct oob_err *err)
{
	struct ps *s;
	struct seq sq = {v->gen, e->args[1]};
	switch (e->type) {
	case V2_PROC_START:
		s = pfind(v, e->args[0]);
		if (!s || s->status != P_IDLE || !succeeds(sq, s->seq) || c->p != NONE)
			return WAIT;
		if (need(v, e, c, MUST, MUSTNOT, MAY, err))
			return -EINVAL;
		s->status = P_RUNNING;
		s->seq = sq;
		e->p = c->p = e->args[0];
		return GO;
	case V2_PROC_STOP:
		if (need(v, e, c, MUST, MUST, MAY, err))
			return -EINVAL;
		s = pfind(v, c->p);
		if (!s || (s->status != P_RUNNING && s->status != P_SYSCALL))
			return broken(e, "P is not running:", c->p, err);
		s->status = P_IDLE;
		c->p = NONE;
		return GO;
	case V2_PROC_STEAL: {
		s = pfind(v, e->args[0]);
		if (!s || (s->status != P_SYSCALL && s->status != P_ABANDONED) ||
		    !succeeds(sq, s->seq))
			return WAIT;
		if (need(v, e, c, MUST, MAY, MAY, err))
			return -EINVAL;
		uint8_t old = s->status;
		s->status = P_IDLE;
		s->seq = sq;
		if (old == P_ABANDONED)
			return GO;
		uint64_t from = e->args[2];
		if (from == c->m) {
			if (c->p != e->args[0])
				return broken(
				    e, "self-steal of a P this M does not hold:", e->args[0], err);
			c->p = NONE;
			return GO;
		}
		struct ms *m = mfind(v, from, 0);
		if (!m || m->p != e->args[0])
			return broken(e, "steal of a P from an M that does not hold it: M", from,
				      err);
		m->p = NONE;
		return GO;
	}
	}
	return adv_proc_status(v, e, c, err);
}

static int adv_go_status(struct v2 *v, struct gotrace_event *e, struct ctx *c, struct oob_err *err)
{
	uint64_t g = e->args[0], mid = e->args[1], st = e->args[2];
	if (st < G_RUNNABLE || st > G_WAITING)
		return broken(e, "invalid status for goroutine", g, err);
	struct gs *s = gfind(v, g);
	if (s && s->status != st)
		return broken(e, "status does not match the state of goroutine", g, err);
	if (!s && v->gen != v->initial_gen)
		return broken(e, "status of an unknown goroutine after the first generation:", g,
			      err);
	if (!s) {
		s = gmake(v, g);
		s->status = (uint8_t)st;
	}
	s->seq = (struct seq){v->gen, 0};
	e->g = g;
	if (st == G_RUNNING)
		c->g = g;
	if (st != G_SYSCALL)
		return GO;
	if (mid == OOB_MAP_EMPTY)
		return broken(e, "goroutine in a syscall without a thread:", g, err);
	if (mid == c->m) {
		c->g = g;
		return GO;
	}
	struct ms *m = mfind(v, mid, 0);
	if (m && m->g != g)
		return broken(e, "goroutine in a syscall on an M running another one:", g, err);
	if (!m)
		mfind(v, mid, 1)->g = g;
	e->m = mid;
	return GO;
}

/* The running goroutine of the context, which must exist and be in state st. */
static struct gs *current(struct v2 *v, struct gotrace_event *e, struct ctx *c, int p, uint8_t st,
			  struct oob_err *err)
{
	if (need(v, e, c, MUST, p, MUST, err))
		return NULL;
	struct gs *s = gfind(v, c->g);
	if (!s || s->status != st) {
		broken(e,
		       st == G_SYSCALL ? "goroutine is not in a syscall:"
				       : "goroutine is not running:",
		       c->g, err);
		return NULL;
	}
	return s;
}

static int adv_create(struct v2 *v, struct gotrace_event *e, struct ctx *c, struct oob_err *err)
{
	uint64_t g = e->args[0];
	int sys = e->type == V2_GO_CREATE_SYSCALL;
	if (need(v, e, c, MUST, sys ? MAY : MUST, sys ? MUSTNOT : MAY, err))
		return -EINVAL;
	struct gs *cur = gfind(v, c->g);
	if (!sys && cur && cur->status != G_RUNNING)
		return broken(e, "creating goroutine is not running:", c->g, err);
	if (gfind(v, g))
		return broken(e, "goroutine already exists:", g, err);
	struct gs *s = gmake(v, g);
	s->status = sys ? G_SYSCALL : e->type == V2_GO_CREATE_BLOCKED ? G_WAITING : G_RUNNABLE;
	s->seq = (struct seq){v->gen, 0};
	if (sys)
		c->g = g;
	return GO;
}

static int adv_go(struct v2 *v, struct gotrace_event *e, struct ctx *c, struct oob_err *err)
{
	struct gs *s, *next;
	struct seq sq = {v->gen, e->args[1]};
	switch (e->type) {
	case V2_GO_START:
		s = gfind(v, e->args[0]);
		if (!s || s->status != G_RUNNABLE || !succeeds(sq, s->seq))
			return WAIT;
		if (need(v, e, c, MUST, MUST, MUSTNOT, err))
			return -EINVAL;
		s->status = G_RUNNING;
		s->seq = sq;
		e->g = c->g = e->args[0];
		return GO;
	case V2_GO_UNBLOCK:
		s = gfind(v, e->args[0]);
		if (!s || s->status != G_WAITING || !succeeds(sq, s->seq))
			return WAIT;
		s->status = G_RUNNABLE;
		s->seq = sq;
		return GO;
	case V2_GO_SWITCH:
	case V2_GO_SWITCH_DESTROY:
		if (!(s = current(v, e, c, MUST, G_RUNNING, err)))
			return -EINVAL;
		next = gfind(v, e->args[0]);
		if (!next || next->status != G_WAITING || !succeeds(sq, next->seq))
			return WAIT;
		s = gfind(v, c->g); /* next's lookup may have moved it */
		s->status = e->type == V2_GO_SWITCH ? G_WAITING : 0;
		next = gfind(v, e->args[0]);
		next->status = G_RUNNING;
		next->seq = sq;
		c->g = e->args[0];
		return GO;
	}
	if (!(s = current(v, e, c, MUST, G_RUNNING, err)))
		return -EINVAL;
	s->status = e->type == V2_GO_DESTROY ? 0 : e->type == V2_GO_STOP ? G_RUNNABLE : G_WAITING;
	c->g = NONE;
	return GO;
}

static int adv_syscall(struct v2 *v, struct gotrace_event *e, struct ctx *c, struct oob_err *err)
{
	struct gs *s;
	struct ps *p;
	switch (e->type) {
	case V2_GO_SYSCALL_BEGIN:
		if (!(s = current(v, e, c, MUST, G_RUNNING, err)))
			return -EINVAL;
		if (!(p = pfind(v, c->p)))
			return broken(e, "unknown P", c->p, err);
		if (!succeeds((struct seq){v->gen, e->args[0]}, p->seq))
			return broken(e, "out-of-sequence P seq on P", c->p, err);
		s->status = G_SYSCALL;
		p->status = P_SYSCALL;
		p->seq = (struct seq){v->gen, e->args[0]};
		return GO;
	case V2_GO_SYSCALL_END:
		if (!(s = current(v, e, c, MUST, G_SYSCALL, err)))
			return -EINVAL;
		if (!(p = pfind(v, c->p)) || p->status != P_SYSCALL)
			return broken(e, "P is not in a syscall:", c->p, err);
		s->status = G_RUNNING;
		p->status = P_RUNNING;
		return GO;
	case V2_GO_SYSCALL_END_BLOCKED:
		if (c->p != NONE) {
			if (!(p = pfind(v, c->p)))
				return broken(e, "unknown P", c->p, err);
			if (p->status == P_SYSCALL)
				return WAIT;
		}
		if (!(s = current(v, e, c, MAY, G_SYSCALL, err)))
			return -EINVAL;
		s->status = G_RUNNABLE;
		c->g = NONE;
		return GO;
	}
	/* GoDestroySyscall */
	if (!(s = current(v, e, c, MAY, G_SYSCALL, err)))
		return -EINVAL;
	s->status = 0;
	c->g = NONE;
	if (c->p != NONE) {
		if (!(p = pfind(v, c->p)) || p->status != P_SYSCALL)
			return broken(e, "P is not in a syscall:", c->p, err);
		p->status = P_ABANDONED;
		c->p = NONE;
	}
	return GO;
}

static int adv_gc(struct v2 *v, struct gotrace_event *e, struct ctx *c, struct oob_err *err)
{
	uint64_t sq = e->args[0];
	if (e->type == V2_GC_ACTIVE && v->gen == v->initial_gen) {
		if (v->gc_state)
			return broken(e, "GCActive after other GC events, seq", sq, err);
		v->gc_seq = sq;
		v->gc_state = 2;
		return GO;
	}
	if (e->type == V2_GC_BEGIN && !v->gc_state) {
		v->gc_seq = sq;
		v->gc_state = 2;
		return GO;
	}
	if (sq != v->gc_seq + 1)
		return WAIT;
	if ((e->type == V2_GC_BEGIN && v->gc_state == 2) ||
	    (e->type != V2_GC_BEGIN && v->gc_state != 2))
		return broken(e, "GC state does not allow it, seq", sq, err);
	v->gc_seq = sq;
	v->gc_state = e->type == V2_GC_END ? 1 : 2;
	return need(v, e, c, MUST, MUST, MUST, err) ? -EINVAL : GO;
}

/* Events that only need a context (M, P, G: MUST/MAY). */
static int adv_simple(struct v2 *v, struct gotrace_event *e, struct ctx *c, struct oob_err *err)
{
	switch (e->type) {
	case V2_SWEEP_BEGIN:
	case V2_SWEEP_END:
	case V2_HEAP_ALLOC:
	case V2_HEAP_GOAL:
		return need(v, e, c, MUST, MUST, MAY, err) ? -EINVAL : GO;
	case V2_SWEEP_ACTIVE:
		return pfind(v, e->args[0]) ? GO : broken(e, "unknown P", e->args[0], err);
	case V2_ASSIST_ACTIVE:
		return gfind(v, e->args[0]) ? GO : broken(e, "unknown goroutine", e->args[0], err);
	}
	return need(v, e, c, MUST, MUST, MUST, err) ? -EINVAL : GO;
}

/* Tries to apply e (from thread e->m). GO, WAIT or a negative errno. */
static int advance(struct v2 *v, struct gotrace_event *e, struct oob_err *err)
{
	struct ms *m = e->m == NONE ? NULL : mfind(v, e->m, 1);
	struct ctx c = {m ? m->g : NONE, m ? m->p : NONE, e->m};
	struct ctx before = c;
	int rc;
	switch (e->type) {
	case V2_PROC_START:
	case V2_PROC_STOP:
	case V2_PROC_STEAL:
	case V2_PROC_STATUS:
		rc = adv_proc(v, e, &c, err);
		break;
	case V2_GO_STATUS:
	case V2_GO_STATUS_STACK:
		rc = adv_go_status(v, e, &c, err);
		break;
	case V2_GO_CREATE:
	case V2_GO_CREATE_BLOCKED:
	case V2_GO_CREATE_SYSCALL:
		rc = adv_create(v, e, &c, err);
		break;
	case V2_GO_START:
	case V2_GO_UNBLOCK:
	case V2_GO_SWITCH:
	case V2_GO_SWITCH_DESTROY:
	case V2_GO_DESTROY:
	case V2_GO_STOP:
	case V2_GO_BLOCK:
		rc = adv_go(v, e, &c, err);
		break;
	case V2_GO_SYSCALL_BEGIN:
	case V2_GO_SYSCALL_END:
	case V2_GO_SYSCALL_END_BLOCKED:
	case V2_GO_DESTROY_SYSCALL:
		rc = adv_syscall(v, e, &c, err);
		break;
	case V2_GC_ACTIVE:
	case V2_GC_BEGIN:
	case V2_GC_END:
		rc = adv_gc(v, e, &c, err);
		break;
	default:
		rc = adv_simple(v, e, &c, err);
		break;
	}
	if (rc != GO)
		return rc;
	if (e->g == NONE)
		e->g = before.g;
	if (e->p == NONE)
		e->p = before.p;
	if (m && e->m == before.m) {
		m = mfind(v, e->m, 0);
		m->g = c.g;
		m->p = c.p;
	}
	return GO;
}

/* --- one generation ----------------------------------------------------------- */

static struct cursor *cur_at(struct v2 *v, size_t i)
{
	return &((struct cursor *)v->cursors.p)[i];
}

static uint64_t head_ticks(struct v2 *v, size_t i)
{
	struct cursor *c = cur_at(v, i);
	return v->t->ev[((uint32_t *)c->idx.p)[c->pos]].ticks;
}

/* Min-heap of cursor indexes by the time of their next event. */
static void heap_push(struct v2 *v, size_t *h, size_t *n, size_t c)
{
	size_t i = (*n)++;
	h[i] = c;
	while (i && head_ticks(v, h[(i - 1) / 2]) > head_ticks(v, h[i])) {
		size_t p = (i - 1) / 2, x = h[p];
		h[p] = h[i];
		h[i] = x;
		i = p;
	}
}

static size_t heap_pop(struct v2 *v, size_t *h, size_t *n)
{
	size_t top = h[0];
	h[0] = h[--*n];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < *n && head_ticks(v, h[l]) < head_ticks(v, h[m]))
			m = l;
		if (r < *n && head_ticks(v, h[r]) < head_ticks(v, h[m]))
			m = r;
		if (m == i)
			break;
		size_t x = h[m];
		h[m] = h[i];
		h[i] = x;
		i = m;
	}
	return top;
}

static int stuck(struct v2 *v, size_t c, struct oob_err *err)
{
	struct cursor *k = cur_at(v, c);
	const struct gotrace_event *e = &v->t->ev[((uint32_t *)k->idx.p)[k->pos]];
	return oob_err_set(err, -EINVAL,
			   "no consistent ordering of events possible in generation %llu: %s at "
			   "offset 0x%llx (M %lld) and every other thread's next event wait for "
			   "something that never happens",
			   (unsigned long long)v->gen, desc[e->type].name,
			   (unsigned long long)e->off, (long long)k->m);
}

/* Orders the generation's events into out[] (event indexes). */
static int order_gen(struct v2 *v, uint32_t *out, struct oob_err *err)
{
	size_t nc = v->cursors.n, nh = 0, nt = 0, k = 0;
	size_t *heap = oob_xmalloc((nc + 1) * sizeof(size_t)),
	       *tried = oob_xmalloc((nc + 1) * sizeof(size_t));
	int rc = 0;
	for (size_t i = 0; i < nc; i++)
		if (cur_at(v, i)->idx.n)
			heap_push(v, heap, &nh, i);
	while (nh) {
		nt = 0;
		for (;;) {
			if (!nh) {
				rc = stuck(v, tried[0], err);
				goto out;
			}
			size_t c = heap_pop(v, heap, &nh);
			struct cursor *cu = cur_at(v, c);
			uint32_t i = ((uint32_t *)cu->idx.p)[cu->pos];
			if ((rc = advance(v, &v->t->ev[i], err)) < 0)
				goto out;
			if (rc == WAIT) {
				tried[nt++] = c;
				continue;
			}
			out[k++] = i;
			if (++cu->pos < cu->idx.n)
				heap_push(v, heap, &nh, c);
			break;
		}
		for (size_t j = 0; j < nt; j++)
			heap_push(v, heap, &nh, tried[j]);
	}
	rc = 0;
out:
	free(heap);
	free(tried);
	return rc;
}

static int cmp_ticks(const void *pa, const void *pb, void *ctx)
{
	const struct gotrace_event *ev = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	if (ev[a].ticks != ev[b].ticks)
		return ev[a].ticks < ev[b].ticks ? -1 : 1;
	return (a > b) - (a < b);
}

/* Puts the generation's events (from index first on) in order, CPU samples
 * merged in by time. */
static int finish_gen(struct v2 *v, size_t first, struct oob_err *err)
{
	size_t n = v->t->nev - first, ns = v->samples.n, no = n - ns;
	uint32_t *ord = oob_xmalloc((no + 1) * sizeof(*ord)),
		 *all = oob_xmalloc((n + 1) * sizeof(*all));
	uint32_t *smp = v->samples.p;
	int rc = order_gen(v, ord, err);
	if (rc < 0)
		goto out;
	if (ns)
		qsort_r(smp, ns, sizeof(*smp), cmp_ticks, v->t->ev);
	size_t i = 0, j = 0, k = 0;
	while (i < no || j < ns)
		all[k++] = j >= ns || (i < no && v->t->ev[ord[i]].ticks <= v->t->ev[smp[j]].ticks)
			       ? ord[i++]
			       : smp[j++];
	/* gotrace_permute works on the whole array: make the prefix the identity. */
	uint32_t *perm = oob_xmalloc((v->t->nev + 1) * sizeof(*perm));
	for (size_t x = 0; x < first; x++)
		perm[x] = (uint32_t)x;
	memcpy(perm + first, all, n * sizeof(*perm));
	gotrace_permute(v->t, perm);
	free(perm);
out:
	free(ord);
	free(all);
	return rc;
}

static void gen_reset(struct v2 *v, uint64_t gen)
{
	for (size_t i = 0; i < v->cursors.n; i++)
		free(cur_at(v, i)->idx.p);
	v->cursors.n = v->strv.n = v->samples.n = 0;
	oob_map_clear(&v->strs);
	oob_map_clear(&v->stks);
	oob_map_clear(&v->curmap);
	v->gen = gen;
	v->freq = 0;
}

/* Kind of a non-experimental batch: by its first payload byte. */
static int batch_kind(const struct v2 *v, const struct batch *b)
{
	if (b->len == SIZE_MAX || b->len == 0)
		return b->len ? -1 : V2_EVENT_BATCH;
	uint8_t k = v->p[b->pay];
	if (k == V2_STRINGS || k == V2_STACKS || k == V2_CPU_SAMPLES)
		return k;
	if ((k == V2_FREQUENCY && v->ver < 1025) || (k == V2_SYNC && v->ver >= 1025))
		return V2_SYNC;
	return V2_EVENT_BATCH;
}

static int gen_tables(struct v2 *v, const struct batch *b, size_t nb, struct oob_err *err)
{
	int rc = 0;
	for (int pass = 0; pass < 3 && rc >= 0; pass++)
		for (size_t i = 0; i < nb && rc >= 0; i++) {
			int k = batch_kind(v, &b[i]);
			if (pass == 0 && k == V2_STRINGS)
				rc = strings_batch(v, &b[i], err);
			else if (pass == 1 && k == V2_STACKS)
				rc = stacks_batch(v, &b[i], err);
			else if (pass == 2 && k == V2_SYNC)
				rc = sync_batch(v, &b[i], err);
		}
	return rc;
}

static int do_gen(struct v2 *v, const struct batch *b, size_t nb, struct oob_err *err)
{
	size_t first = v->t->nev;
	int rc;
	if (!v->initial_gen)
		v->initial_gen = b[0].gen;
	gen_reset(v, b[0].gen);
	v->t->info.generations++;
	if ((rc = gen_tables(v, b, nb, err)) < 0)
		return rc;
	if (!v->freq && !v->t->info.freq)
		return oob_err_set(err, -EINVAL, "generation %llu has no Frequency event",
				   (unsigned long long)v->gen);
	if (!v->t->info.freq)
		v->t->info.freq = v->freq;
	for (size_t i = 0; i < nb && rc >= 0; i++) {
		int k = batch_kind(v, &b[i]);
		if (k == V2_EVENT_BATCH)
			rc = event_batch(v, &b[i], err);
		else if (k == V2_CPU_SAMPLES)
			rc = samples_batch(v, &b[i], err);
	}
	return rc < 0 ? rc : finish_gen(v, first, err);
}

/* Splits the batch list into generations and decodes each. */
static int generations(struct v2 *v, struct oob_err *err)
{
	const struct batch *b = v->batches.p;
	size_t nb = v->batches.n, i = 0;
	uint64_t last = 0;
	while (i < nb) {
		if (b[i].gen == 0) { /* EndOfGeneration with nothing before it */
			i++;
			continue;
		}
		size_t j = i;
		while (j < nb && b[j].gen != 0 && (v->ver >= 1026 || b[j].gen == b[i].gen))
			j++;
		if (b[i].gen <= last)
			return oob_err_set(
			    err, -EINVAL,
			    "batch at offset 0x%zx goes back to generation %llu after "
			    "%llu",
			    b[i].hdr, (unsigned long long)b[i].gen, (unsigned long long)last);
		last = b[i].gen;
		int rc = do_gen(v, b + i, j - i, err);
		if (rc < 0)
			return rc;
		i = j;
	}
	return 0;
}

static void summarize(struct v2 *v)
{
	struct gotrace_info *in = &v->t->info;
	in->min_ticks = v->t->nev ? UINT64_MAX : 0;
	for (size_t i = 0; i < v->t->nev; i++) {
		const struct gotrace_event *e = &v->t->ev[i];
		in->min_ticks = e->ticks < in->min_ticks ? e->ticks : in->min_ticks;
		in->max_ticks = e->ticks > in->max_ticks ? e->ticks : in->max_ticks;
		in->timed_events += e->kind != GOTRACE_EV_CPU_SAMPLE;
	}
}

int gotrace_v2_parse(struct gotrace *t, const uint8_t *p, size_t n, int ver, struct oob_err *err)
{
	struct v2 v = {.t = t, .p = p, .n = n, .ver = ver};
	oob_map_init(&v.strs, 256);
	oob_map_init(&v.stks, 256);
	oob_map_init(&v.curmap, 16);
	oob_map_init(&v.gmap, 64);
	oob_map_init(&v.pmap, 16);
	oob_map_init(&v.mmap, 16);
	int rc = read_batches(&v, err);
	if (rc >= 0)
		rc = generations(&v, err);
	if (rc >= 0 && !t->info.generations)
		rc = oob_err_set(err, -EINVAL, "the trace has no batches");
	if (rc >= 0)
		summarize(&v);
	gen_reset(&v, 0);
	free(v.cursors.p);
	free(v.strv.p);
	free(v.samples.p);
	free(v.batches.p);
	free(v.gv.p);
	free(v.pv.p);
	free(v.mv.p);
	oob_map_destroy(&v.strs);
	oob_map_destroy(&v.stks);
	oob_map_destroy(&v.curmap);
	oob_map_destroy(&v.gmap);
	oob_map_destroy(&v.pmap);
	oob_map_destroy(&v.mmap);
	return rc < 0 ? rc : 0;
}
