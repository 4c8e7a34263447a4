/*
 * gotrace_v1: the Go 1.7-1.21 wire format (GOTRACE.md 1) and its ordering.
 *
 * The file is a flat event stream without batch lengths; a Batch event says
 * which P the following events belong to. Events carry no P or G: the P is
 * the batch's, the G the last one started on that P. Per-P streams (all
 * batches of one P, in file order) are merged with Go's frontier rule: among
 * the stream heads whose goroutine precondition holds (sequence number and
 * state), take the earliest. Strings and stacks may be defined after their
 * first use, so names are resolved once the whole file is read.
 */
#include <stdlib.h>
#include <string.h>

#include "go/gotrace_impl.h"

enum {
	V1_BATCH = 1,
	V1_FREQUENCY,
	V1_STACK,
	V1_GOMAXPROCS,
	V1_PROC_START,
	V1_PROC_STOP,
	V1_GC_START,
	V1_GC_DONE,
	V1_STW_START,
	V1_STW_DONE,
	V1_SWEEP_START,
	V1_SWEEP_DONE,
	V1_GO_CREATE,
	V1_GO_START,
	V1_GO_END,
	V1_GO_STOP,
	V1_GO_SCHED,
	V1_GO_PREEMPT,
	V1_GO_SLEEP,
	V1_GO_BLOCK,
	V1_GO_UNBLOCK,
	V1_GO_BLOCK_SEND,
	V1_GO_BLOCK_RECV,
	V1_GO_BLOCK_SELECT,
	V1_GO_BLOCK_SYNC,
	V1_GO_BLOCK_COND,
	V1_GO_BLOCK_NET,
	V1_GO_SYSCALL,
	V1_GO_SYSEXIT,
	V1_GO_SYSBLOCK,
	V1_GO_WAITING,
	V1_GO_INSYSCALL,
	V1_HEAP_ALLOC,
	V1_HEAP_GOAL,
	V1_TIMER_GOROUTINE,
	V1_FUTILE_WAKEUP,
	V1_STRING,
	V1_GO_START_LOCAL,
	V1_GO_UNBLOCK_LOCAL,
	V1_GO_SYSEXIT_LOCAL,
	V1_GO_START_LABEL,
	V1_GO_BLOCK_GC,
	V1_ASSIST_START,
	V1_ASSIST_DONE,
	V1_TASK_CREATE,
	V1_TASK_END,
	V1_REGION,
	V1_LOG,
	V1_CPU_SAMPLE,
	V1_COUNT
};

/* nargs: values after the timestamp, the stack id excluded (1.10+ layout). */
static const struct v1_desc {
	const char *name;
	uint16_t minver;
	uint8_t nargs, stack, kind;
	const char *reason;
} desc[V1_COUNT] = {
    [V1_BATCH] = {"Batch", 1007, 2, 0, 0, NULL},
    [V1_FREQUENCY] = {"Frequency", 1007, 1, 0, 0, NULL},
    [V1_STACK] = {"Stack", 1007, 0, 0, 0, NULL},
    [V1_GOMAXPROCS] = {"Gomaxprocs", 1007, 1, 1, GOTRACE_EV_PROCS, NULL},
    [V1_PROC_START] = {"ProcStart", 1007, 1, 0, GOTRACE_EV_PROC_START, NULL},
    [V1_PROC_STOP] = {"ProcStop", 1007, 0, 0, GOTRACE_EV_PROC_STOP, NULL},
    [V1_GC_START] = {"GCStart", 1007, 1, 1, GOTRACE_EV_GC_START, NULL},
    [V1_GC_DONE] = {"GCDone", 1007, 0, 0, GOTRACE_EV_GC_DONE, NULL},
    [V1_STW_START] = {"GCSTWStart", 1007, 1, 0, GOTRACE_EV_STW_START, NULL},
    [V1_STW_DONE] = {"GCSTWDone", 1007, 0, 0, GOTRACE_EV_STW_DONE, NULL},
    [V1_SWEEP_START] = {"GCSweepStart", 1007, 0, 1, GOTRACE_EV_SWEEP_START, NULL},
    [V1_SWEEP_DONE] = {"GCSweepDone", 1007, 2, 0, GOTRACE_EV_SWEEP_DONE, NULL},
    [V1_GO_CREATE] = {"GoCreate", 1007, 2, 1, GOTRACE_EV_GO_CREATE, NULL},
    [V1_GO_START] = {"GoStart", 1007, 2, 0, GOTRACE_EV_GO_START, NULL},
    [V1_GO_END] = {"GoEnd", 1007, 0, 0, GOTRACE_EV_GO_END, NULL},
    [V1_GO_STOP] = {"GoStop", 1007, 0, 1, GOTRACE_EV_GO_BLOCK, "forever"},
    [V1_GO_SCHED] = {"GoSched", 1007, 0, 1, GOTRACE_EV_GO_YIELD, "runtime.Gosched"},
    [V1_GO_PREEMPT] = {"GoPreempt", 1007, 0, 1, GOTRACE_EV_GO_YIELD, "preempted"},
    [V1_GO_SLEEP] = {"GoSleep", 1007, 0, 1, GOTRACE_EV_GO_BLOCK, "sleep"},
    [V1_GO_BLOCK] = {"GoBlock", 1007, 0, 1, GOTRACE_EV_GO_BLOCK, "unspecified"},
    [V1_GO_UNBLOCK] = {"GoUnblock", 1007, 2, 1, GOTRACE_EV_GO_UNBLOCK, NULL},
    [V1_GO_BLOCK_SEND] = {"GoBlockSend", 1007, 0, 1, GOTRACE_EV_GO_BLOCK, "chan send"},
    [V1_GO_BLOCK_RECV] = {"GoBlockRecv", 1007, 0, 1, GOTRACE_EV_GO_BLOCK, "chan receive"},
    [V1_GO_BLOCK_SELECT] = {"GoBlockSelect", 1007, 0, 1, GOTRACE_EV_GO_BLOCK, "select"},
    [V1_GO_BLOCK_SYNC] = {"GoBlockSync", 1007, 0, 1, GOTRACE_EV_GO_BLOCK, "sync"},
    [V1_GO_BLOCK_COND] = {"GoBlockCond", 1007, 0, 1, GOTRACE_EV_GO_BLOCK, "sync.(*Cond).Wait"},
    [V1_GO_BLOCK_NET] = {"GoBlockNet", 1007, 0, 1, GOTRACE_EV_GO_BLOCK, "network"},
    [V1_GO_SYSCALL] = {"GoSysCall", 1007, 0, 1, GOTRACE_EV_GO_SYSCALL, NULL},
    [V1_GO_SYSEXIT] = {"GoSysExit", 1007, 3, 0, GOTRACE_EV_GO_SYSCALL_EXIT, NULL},
    [V1_GO_SYSBLOCK] = {"GoSysBlock", 1007, 0, 0, GOTRACE_EV_GO_SYSCALL_BLOCK, NULL},
    [V1_GO_WAITING] = {"GoWaiting", 1007, 1, 0, GOTRACE_EV_GO_STATUS, NULL},
    [V1_GO_INSYSCALL] = {"GoInSyscall", 1007, 1, 0, GOTRACE_EV_GO_STATUS, NULL},
    [V1_HEAP_ALLOC] = {"HeapAlloc", 1007, 1, 0, GOTRACE_EV_HEAP_ALLOC, NULL},
    [V1_HEAP_GOAL] = {"HeapGoal", 1007, 1, 0, GOTRACE_EV_HEAP_GOAL, NULL},
    [V1_TIMER_GOROUTINE] = {"TimerGoroutine", 1007, 1, 0, 0, NULL},
    [V1_FUTILE_WAKEUP] = {"FutileWakeup", 1007, 0, 0, GOTRACE_EV_FUTILE_WAKEUP, NULL},
    [V1_STRING] = {"String", 1007, 0, 0, 0, NULL},
    [V1_GO_START_LOCAL] = {"GoStartLocal", 1007, 1, 0, GOTRACE_EV_GO_START, NULL},
    [V1_GO_UNBLOCK_LOCAL] = {"GoUnblockLocal", 1007, 1, 1, GOTRACE_EV_GO_UNBLOCK, NULL},
    [V1_GO_SYSEXIT_LOCAL] = {"GoSysExitLocal", 1007, 2, 0, GOTRACE_EV_GO_SYSCALL_EXIT, NULL},
    [V1_GO_START_LABEL] = {"GoStartLabel", 1008, 3, 0, GOTRACE_EV_GO_START, NULL},
    [V1_GO_BLOCK_GC] = {"GoBlockGC", 1008, 0, 1, GOTRACE_EV_GO_BLOCK, "GC assist wait"},
    [V1_ASSIST_START] = {"GCMarkAssistStart", 1009, 0, 1, GOTRACE_EV_ASSIST_START, NULL},
    [V1_ASSIST_DONE] = {"GCMarkAssistDone", 1009, 0, 0, GOTRACE_EV_ASSIST_DONE, NULL},
    [V1_TASK_CREATE] = {"UserTaskCreate", 1011, 3, 1, GOTRACE_EV_TASK_BEGIN, NULL},
    [V1_TASK_END] = {"UserTaskEnd", 1011, 1, 1, GOTRACE_EV_TASK_END, NULL},
    [V1_REGION] = {"UserRegion", 1011, 3, 1, GOTRACE_EV_REGION_BEGIN, NULL},
    [V1_LOG] = {"UserLog", 1011, 2, 1, GOTRACE_EV_LOG, NULL},
    [V1_CPU_SAMPLE] = {"CPUSample", 1019, 3, 1, GOTRACE_EV_CPU_SAMPLE, NULL},
};

/* STW kinds: 0/1 before 1.21, runtime.stwReason from 1.21. */
static const char *const stw_old[] = {"mark termination", "sweep termination"};
static const char *const stw_121[] = {"unknown",
				      "GC mark termination",
				      "GC sweep termination",
				      "write heap dump",
				      "goroutine profile",
				      "goroutine profile cleanup",
				      "all goroutines stack trace",
				      "read mem stats",
				      "AllThreadsSyscall",
				      "GOMAXPROCS",
				      "start trace",
				      "stop trace",
				      "CountPagesInUse (test)",
				      "ReadMetricsSlow (test)",
				      "ReadMemStatsSlow (test)",
				      "PageCachePagesLeaked (test)",
				      "ResetDebugLog (test)"};

struct pstream {
	uint64_t p, lastg, m;
	struct gotrace_vec idx; /* uint32 event indexes, in stream order */
};

struct rawframe {
	uint64_t pc, fn, file, line;
};

struct rawstack {
	uint32_t id; /* dense */
	size_t first, n;
};

struct v1 {
	struct gotrace *t;
	const uint8_t *p;
	size_t n, pos;
	int ver;
	struct gotrace_vec args; /* uint64 values of the current event */
	struct oob_map pmap;	 /* P -> stream index */
	struct gotrace_vec ps;	 /* struct pstream */
	size_t cur, profile;	 /* current stream; the CPU sample stream + 1 (0 = none) */
	uint64_t last_ts, freq;
	struct oob_map strs;	   /* string id -> index in strv */
	struct gotrace_vec strv;   /* const char * */
	struct oob_map stk;	   /* raw stack id -> dense id */
	struct gotrace_vec frames; /* struct rawframe */
	struct gotrace_vec stacks; /* struct rawstack */
};

const char *gotrace_v1_type_name(unsigned type)
{
	return type < V1_COUNT && desc[type].name ? desc[type].name : "";
}

static size_t stream_of(struct v1 *v, uint64_t p)
{
	int fresh;
	uint64_t *slot = oob_map_put(&v->pmap, p, &fresh);
	if (fresh) {
		struct pstream *s = gotrace_vec_push(&v->ps, sizeof(*s));
		memset(s, 0, sizeof(*s));
		s->p = p;
		s->m = GOTRACE_NONE;
		*slot = v->ps.n - 1;
	}
	return (size_t)*slot;
}

static struct pstream *stream(struct v1 *v, size_t i)
{
	return &((struct pstream *)v->ps.p)[i];
}

static uint32_t stack_ref(struct v1 *v, uint64_t raw)
{
	if (raw == 0)
		return 0;
	int fresh;
	uint64_t *slot = oob_map_put(&v->stk, raw, &fresh);
	if (fresh)
		*slot = gotrace_stack_new(v->t);
	return (uint32_t)*slot;
}

static int uv_err(int rc, size_t off, const char *what, struct oob_err *err)
{
	return oob_err_set(err, -EINVAL,
			   rc == GOTRACE_UV_SHORT ? "truncated %s at offset 0x%zx"
						  : "bad varint in %s at offset 0x%zx",
			   what, off);
}

static int v1_string(struct v1 *v, size_t off, struct oob_err *err)
{
	uint64_t id, len;
	int rc;
	if ((rc = gotrace_uv(v->p, v->n, &v->pos, &id)) < 0 ||
	    (rc = gotrace_uv(v->p, v->n, &v->pos, &len)) < 0)
		return uv_err(rc, off, "String event", err);
	if (id == 0)
		return oob_err_set(err, -EINVAL, "String event at offset 0x%zx has invalid id %llu",
				   off, (unsigned long long)id);
	if (len > GOTRACE_MAX_STRING || len > v->n - v->pos)
		return oob_err_set(err, -EINVAL,
				   "String event at offset 0x%zx: length %llu runs past the end of "
				   "the trace or the 1 MiB limit",
				   off, (unsigned long long)len);
	int fresh;
	uint64_t *slot = oob_map_put(&v->strs, id, &fresh);
	if (!fresh)
		return oob_err_set(err, -EINVAL, "String event at offset 0x%zx: duplicate id %llu",
				   off, (unsigned long long)id);
	const char **s = gotrace_vec_push(&v->strv, sizeof(*s));
	*s = gotrace_strdup(v->t, v->p + v->pos, (size_t)len);
	*slot = v->strv.n - 1;
	v->pos += (size_t)len;
	v->t->info.strings++;
	return 0;
}

static const char *str_get(const struct v1 *v, uint64_t id)
{
	const uint64_t *i = id ? oob_map_get(&v->strs, id) : NULL;
	return i ? ((const char **)v->strv.p)[*i] : "";
}

/* Reads the values of the event whose type byte is at off into v->args. */
static int read_args(struct v1 *v, size_t off, unsigned narg, struct oob_err *err)
{
	uint64_t x, len;
	int rc;
	v->args.n = 0;
	if (narg < 4) {
		for (unsigned i = 0; i < narg; i++) {
			if ((rc = gotrace_uv(v->p, v->n, &v->pos, &x)) < 0)
				return uv_err(rc, off, "event", err);
			*(uint64_t *)gotrace_vec_push(&v->args, sizeof(x)) = x;
		}
		return 0;
	}
	if ((rc = gotrace_uv(v->p, v->n, &v->pos, &len)) < 0)
		return uv_err(rc, off, "event length", err);
	if (len > v->n - v->pos)
		return oob_err_set(
		    err, -EINVAL,
		    "event at offset 0x%zx: length %llu runs past the end of the trace", off,
		    (unsigned long long)len);
	size_t end = v->pos + (size_t)len;
	while (v->pos < end) {
		if ((rc = gotrace_uv(v->p, end, &v->pos, &x)) < 0)
			return oob_err_set(err, -EINVAL,
					   "event at offset 0x%zx has a wrong length (%llu bytes)",
					   off, (unsigned long long)len);
		*(uint64_t *)gotrace_vec_push(&v->args, sizeof(x)) = x;
	}
	return 0;
}

/* The number of values an event of this type must have (timestamp and stack
 * included), version differences applied. */
static size_t want_args(const struct v1 *v, unsigned typ)
{
	const uint64_t *a = v->args.p;
	switch (typ) {
	case V1_BATCH:
	case V1_FREQUENCY:
	case V1_TIMER_GOROUTINE:
		return desc[typ].nargs;
	case V1_STACK:
		return v->args.n >= 2 && a[1] <= GOTRACE_MAX_FRAMES ? 2 + 4 * (size_t)a[1] : 2;
	case V1_SWEEP_DONE:
		return v->ver < 1009 ? 1 : 3;
	case V1_STW_START:
		return v->ver < 1010 ? 1 : 2;
	default:
		return 1 + desc[typ].nargs + desc[typ].stack;
	}
}

static int v1_stack(struct v1 *v, size_t off, struct oob_err *err)
{
	const uint64_t *a = v->args.p;
	if (a[1] > GOTRACE_MAX_FRAMES)
		return oob_err_set(err, -EINVAL, "Stack at offset 0x%zx has %llu frames (max %u)",
				   off, (unsigned long long)a[1], GOTRACE_MAX_FRAMES);
	v->t->info.stacks++;
	if (a[0] == 0 || a[1] == 0)
		return 0;
	struct rawstack *s = gotrace_vec_push(&v->stacks, sizeof(*s));
	s->id = stack_ref(v, a[0]);
	s->first = v->frames.n;
	s->n = (size_t)a[1];
	for (size_t i = 0; i < s->n; i++) {
		struct rawframe *f = gotrace_vec_push(&v->frames, sizeof(*f));
		f->pc = a[2 + 4 * i];
		f->fn = a[3 + 4 * i];
		f->file = a[4 + 4 * i];
		f->line = a[5 + 4 * i];
	}
	return 0;
}

static void set_stw_kind(struct v1 *v, struct gotrace_event *e, uint64_t kind)
{
	if (v->ver >= 1021)
		e->str = kind < sizeof(stw_121) / sizeof(stw_121[0]) ? stw_121[kind] : "unknown";
	else
		e->str = kind < 2 ? stw_old[kind] : "unknown";
}

/* Fills the kind-specific fields of a timed event from its values a[] (after
 * the timestamp, stack excluded) and updates the P's current G and M. */
static int fill(struct v1 *v, struct pstream *ps, struct gotrace_event *e, const uint64_t *a,
		size_t na)
{
	unsigned typ = e->type;
	for (size_t i = 0; i < na && i < 3; i++)
		e->args[i] = a[i];
	switch (typ) {
	case V1_PROC_START:
		ps->m = e->m = a[0];
		break;
	case V1_PROC_STOP:
		ps->m = GOTRACE_NONE;
		break;
	case V1_GC_START:
	case V1_GC_DONE:
	case V1_STW_DONE:
		e->g = GOTRACE_NONE;
		break;
	case V1_STW_START:
		e->g = GOTRACE_NONE;
		set_stw_kind(v, e, na ? a[0] : 0);
		break;
	case V1_GO_START:
	case V1_GO_START_LOCAL:
	case V1_GO_START_LABEL:
		if (typ == V1_GO_START_LOCAL)
			e->args[1] = 0;
		ps->lastg = a[0];
		e->g = a[0];
		break;
	case V1_GO_SYSEXIT_LOCAL:
		e->args[1] = 0;
		e->args[2] = a[1];
		/* fall through */
	case V1_GO_SYSEXIT:
		e->g = a[0];
		break;
	case V1_GO_UNBLOCK_LOCAL:
		e->args[1] = 0;
		break;
	case V1_GO_WAITING:
	case V1_GO_INSYSCALL:
		e->g = a[0];
		e->args[1] = GOTRACE_NONE;
		e->args[2] = typ == V1_GO_WAITING ? GOTRACE_G_WAITING : GOTRACE_G_SYSCALL;
		break;
	case V1_REGION:
		if (a[1] > 1)
			return -1;
		e->kind = a[1] ? GOTRACE_EV_REGION_END : GOTRACE_EV_REGION_BEGIN;
		break;
	case V1_CPU_SAMPLE:
		e->ticks = a[0];
		e->p = a[1];
		e->g = a[2] ? a[2] : GOTRACE_NONE;
		e->m = GOTRACE_NONE;
		e->args[0] = e->args[1] = e->args[2] = 0;
		break;
	}
	if (desc[typ].kind == GOTRACE_EV_GO_BLOCK || desc[typ].kind == GOTRACE_EV_GO_YIELD ||
	    typ == V1_GO_END || typ == V1_GO_SYSBLOCK)
		ps->lastg = 0;
	return 0;
}

static int v1_timed(struct v1 *v, unsigned typ, size_t off, struct oob_err *err)
{
	const uint64_t *a = v->args.p;
	size_t na = v->args.n - 1 - desc[typ].stack;
	struct gotrace_event *e = gotrace_push(v->t);
	struct pstream *ps = stream(v, v->cur);
	e->off = off;
	e->type = (uint8_t)typ;
	e->kind = desc[typ].kind;
	e->str = desc[typ].reason;
	e->ticks = v->last_ts + a[0];
	v->last_ts = e->ticks;
	e->p = ps->p;
	e->g = ps->lastg ? ps->lastg : GOTRACE_NONE;
	e->m = ps->m;
	if (desc[typ].stack)
		e->stack = stack_ref(v, a[v->args.n - 1]);
	if (fill(v, ps, e, a + 1, na) < 0)
		return oob_err_set(err, -EINVAL, "UserRegion at offset 0x%zx has invalid mode %llu",
				   off, (unsigned long long)a[2]);
	if (typ == V1_GO_CREATE)
		e->args[1] = stack_ref(v, a[2]);
	size_t s = typ == V1_CPU_SAMPLE ? v->profile - 1 : v->cur;
	*(uint32_t *)gotrace_vec_push(&stream(v, s)->idx, sizeof(uint32_t)) =
	    (uint32_t)(v->t->nev - 1);
	return 0;
}

/* The UserLog value: a varint length and raw bytes after the event. */
static int log_value(struct v1 *v, size_t off, struct oob_err *err)
{
	uint64_t len;
	int rc = gotrace_uv(v->p, v->n, &v->pos, &len);
	if (rc < 0)
		return uv_err(rc, off, "UserLog value", err);
	if (len > GOTRACE_MAX_STRING || len > v->n - v->pos)
		return oob_err_set(err, -EINVAL,
				   "UserLog at offset 0x%zx: value length %llu runs past the end",
				   off, (unsigned long long)len);
	v->t->ev[v->t->nev - 1].str2 = gotrace_strdup(v->t, v->p + v->pos, (size_t)len);
	v->pos += (size_t)len;
	return 0;
}

static int v1_event(struct v1 *v, struct oob_err *err)
{
	size_t off = v->pos;
	uint8_t b = v->p[v->pos++];
	unsigned typ = b & 0x3f, narg = (b >> 6) + 1u;
	if (typ == 0 || typ >= V1_COUNT || desc[typ].minver > v->ver)
		return oob_err_set(err, -EINVAL, "unknown event type %u at offset 0x%zx", typ, off);
	v->t->counts[typ]++;
	if (typ == V1_STRING)
		return v1_string(v, off, err);
	int rc = read_args(v, off, narg, err);
	if (rc < 0)
		return rc;
	if (typ == V1_STACK && v->args.n >= 2 && ((uint64_t *)v->args.p)[1] > GOTRACE_MAX_FRAMES)
		return v1_stack(v, off, err);
	size_t want = want_args(v, typ);
	if (v->args.n != want)
		return oob_err_set(err, -EINVAL,
				   "%s at offset 0x%zx has %zu arguments, expected %zu",
				   desc[typ].name, off, v->args.n, want);
	const uint64_t *a = v->args.p;
	switch (typ) {
	case V1_BATCH:
		v->cur = stream_of(v, a[0]);
		v->last_ts = a[1];
		v->t->info.batches++;
		return 0;
	case V1_FREQUENCY:
		if (a[0] == 0 || a[0] > INT64_MAX)
			return oob_err_set(err, -EINVAL, "Frequency at offset 0x%zx is %llu", off,
					   (unsigned long long)a[0]);
		v->freq = a[0];
		return 0;
	case V1_STACK:
		return v1_stack(v, off, err);
	case V1_TIMER_GOROUTINE:
		return 0;
	}
	if (v->t->nev >= UINT32_MAX - 1)
		return oob_err_set(err, -EFBIG, "more than 4G events");
	if (typ == V1_CPU_SAMPLE && !v->profile) {
		v->profile = stream_of(v, OOB_MAP_EMPTY - 2) + 1;
		stream(v, v->profile - 1)->p = GOTRACE_NONE;
	}
	if ((rc = v1_timed(v, typ, off, err)) < 0)
		return rc;
	return typ == V1_LOG ? log_value(v, off, err) : 0;
}

/* --- ordering ---------------------------------------------------------- */

#define NOSEQ  UINT64_MAX
#define SEQINC (UINT64_MAX - 1)

enum { S_DEAD, S_RUNNABLE, S_RUNNING, S_WAITING };

struct gst {
	uint64_t seq;
	uint8_t st;
};

/* What an event requires of its goroutine and what it leaves behind. */
struct trans {
	uint64_t g, iseq, nseq;
	uint8_t ist, nst;
	uint8_t ordered, gc;
};

static uint64_t gkey(uint64_t g)
{
	return g == GOTRACE_NONE ? 0 : g == OOB_MAP_EMPTY - 1 ? g - 1 : g;
}

static void set_trans(struct trans *t, uint64_t g, uint64_t iseq, int ist, uint64_t nseq, int nst)
{
	t->g = gkey(g);
	t->iseq = iseq;
	t->ist = (uint8_t)ist;
	t->nseq = nseq;
	t->nst = (uint8_t)nst;
	t->ordered = 1;
}

static void transition(const struct gotrace_event *e, struct trans *t)
{
	memset(t, 0, sizeof(*t));
	const uint64_t *a = e->args;
	switch (e->type) {
	case V1_GO_CREATE:
		set_trans(t, a[0], 0, S_DEAD, 1, S_RUNNABLE);
		break;
	case V1_GO_WAITING:
	case V1_GO_INSYSCALL:
		set_trans(t, e->g, 1, S_RUNNABLE, 2, S_WAITING);
		break;
	case V1_GO_START:
	case V1_GO_START_LABEL:
		set_trans(t, e->g, a[1], S_RUNNABLE, a[1] + 1, S_RUNNING);
		break;
	case V1_GO_START_LOCAL:
		set_trans(t, e->g, NOSEQ, S_RUNNABLE, SEQINC, S_RUNNING);
		break;
	case V1_GO_BLOCK:
	case V1_GO_BLOCK_SEND:
	case V1_GO_BLOCK_RECV:
	case V1_GO_BLOCK_SELECT:
	case V1_GO_BLOCK_SYNC:
	case V1_GO_BLOCK_COND:
	case V1_GO_BLOCK_NET:
	case V1_GO_SLEEP:
	case V1_GO_SYSBLOCK:
	case V1_GO_BLOCK_GC:
		set_trans(t, e->g, NOSEQ, S_RUNNING, NOSEQ, S_WAITING);
		break;
	case V1_GO_SCHED:
	case V1_GO_PREEMPT:
		set_trans(t, e->g, NOSEQ, S_RUNNING, NOSEQ, S_RUNNABLE);
		break;
	case V1_GO_UNBLOCK:
	case V1_GO_SYSEXIT:
		set_trans(t, a[0], a[1], S_WAITING, a[1] + 1, S_RUNNABLE);
		break;
	case V1_GO_UNBLOCK_LOCAL:
	case V1_GO_SYSEXIT_LOCAL:
		set_trans(t, a[0], NOSEQ, S_WAITING, SEQINC, S_RUNNABLE);
		break;
	case V1_GC_START:
		t->gc = 1;
		break;
	}
}

struct order {
	struct oob_map gmap; /* g -> index in gv */
	struct gotrace_vec gv;
	uint64_t gc_seq;
};

static struct gst *gstate(struct order *o, uint64_t g)
{
	int fresh;
	uint64_t *slot = oob_map_put(&o->gmap, g, &fresh);
	if (fresh) {
		struct gst *s = gotrace_vec_push(&o->gv, sizeof(*s));
		s->seq = 0;
		s->st = S_DEAD;
		*slot = o->gv.n - 1;
	}
	return &((struct gst *)o->gv.p)[*slot];
}

static int ready(struct order *o, const struct gotrace_event *e, struct trans *t)
{
	transition(e, t);
	if (t->gc)
		return e->args[0] == o->gc_seq;
	if (!t->ordered)
		return 1;
	const struct gst *s = gstate(o, t->g);
	return (t->iseq == NOSEQ || t->iseq == s->seq) && t->ist == s->st;
}

static void apply(struct order *o, const struct gotrace_event *e, const struct trans *t)
{
	if (t->gc) {
		o->gc_seq = e->args[0] + 1;
		return;
	}
	if (!t->ordered)
		return;
	struct gst *s = gstate(o, t->g);
	s->seq = t->nseq == NOSEQ ? s->seq : t->nseq == SEQINC ? s->seq + 1 : t->nseq;
	s->st = t->nst;
}

static int stuck(struct v1 *v, const size_t *head, struct oob_err *err)
{
	const struct gotrace_event *best = NULL;
	for (size_t s = 0; s < v->ps.n; s++) {
		struct pstream *ps = stream(v, s);
		if (head[s] >= ps->idx.n)
			continue;
		const struct gotrace_event *e = &v->t->ev[((uint32_t *)ps->idx.p)[head[s]]];
		if (!best || e->ticks < best->ticks)
			best = e;
	}
	return oob_err_set(err, -EINVAL,
			   "no consistent ordering of events possible: %s at offset 0x%llx "
			   "(P %lld, G %lld) never becomes valid",
			   desc[best->type].name, (unsigned long long)best->off, (long long)best->p,
			   (long long)best->g);
}

static int cmp_ticks(const void *pa, const void *pb, void *ctx)
{
	const struct gotrace_event *ev = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	if (ev[a].ticks != ev[b].ticks)
		return ev[a].ticks < ev[b].ticks ? -1 : 1;
	return (a > b) - (a < b); /* stable */
}

/* Merges the per-P streams into out[] (event indexes). */
static int merge(struct v1 *v, uint32_t *out, struct oob_err *err)
{
	struct order o = {0};
	size_t *head = oob_xcalloc(v->ps.n + 1, sizeof(*head));
	struct trans t, best_t;
	int rc = 0;
	oob_map_init(&o.gmap, 64);
	if (v->profile) {
		struct pstream *ps = stream(v, v->profile - 1);
		qsort_r(ps->idx.p, ps->idx.n, sizeof(uint32_t), cmp_ticks, v->t->ev);
	}
	for (size_t k = 0; k < v->t->nev; k++) {
		size_t best = SIZE_MAX;
		for (size_t s = 0; s < v->ps.n; s++) {
			struct pstream *ps = stream(v, s);
			if (head[s] >= ps->idx.n)
				continue;
			const struct gotrace_event *e = &v->t->ev[((uint32_t *)ps->idx.p)[head[s]]];
			if (!ready(&o, e, &t))
				continue;
			if (best == SIZE_MAX ||
			    e->ticks <
				v->t->ev[((uint32_t *)stream(v, best)->idx.p)[head[best]]].ticks) {
				best = s;
				best_t = t;
			}
		}
		if (best == SIZE_MAX) {
			rc = stuck(v, head, err);
			goto out;
		}
		uint32_t i = ((uint32_t *)stream(v, best)->idx.p)[head[best]++];
		apply(&o, &v->t->ev[i], &best_t);
		out[k] = i;
	}
out:
	free(head);
	free(o.gv.p);
	oob_map_destroy(&o.gmap);
	return rc;
}

/* --- names, stacks, summary ------------------------------------------------ */

static void resolve_strings(struct v1 *v)
{
	for (size_t i = 0; i < v->t->nev; i++) {
		struct gotrace_event *e = &v->t->ev[i];
		switch (e->type) {
		case V1_GO_START_LABEL:
		case V1_TASK_CREATE:
		case V1_REGION:
			e->str = str_get(v, e->args[2]);
			break;
		case V1_LOG:
			e->str = str_get(v, e->args[1]);
			break;
		}
	}
}

static void resolve_stacks(struct v1 *v)
{
	struct gotrace *t = v->t;
	for (size_t i = 0; i < v->stacks.n; i++) {
		const struct rawstack *s = &((struct rawstack *)v->stacks.p)[i];
		struct gotrace_frame *f = oob_arena_alloc(t->arena, s->n * sizeof(*f));
		for (size_t k = 0; k < s->n; k++) {
			const struct rawframe *r = &((struct rawframe *)v->frames.p)[s->first + k];
			f[k].pc = r->pc;
			f[k].func = str_get(v, r->fn);
			f[k].file = str_get(v, r->file);
			f[k].line = r->line;
		}
		t->stacks[s->id].frames = f;
		t->stacks[s->id].n = (uint32_t)s->n;
	}
}

static void summarize(struct v1 *v)
{
	struct gotrace_info *in = &v->t->info;
	in->freq = v->freq;
	in->min_ticks = UINT64_MAX;
	for (size_t i = 0; i < v->t->nev; i++) {
		const struct gotrace_event *e = &v->t->ev[i];
		uint64_t ts = e->ticks;
		if (e->kind == GOTRACE_EV_GO_SYSCALL_EXIT && e->args[2])
			ts = e->args[2];
		in->min_ticks = ts < in->min_ticks ? ts : in->min_ticks;
		in->max_ticks = e->ticks > in->max_ticks ? e->ticks : in->max_ticks;
		in->timed_events += e->kind != GOTRACE_EV_CPU_SAMPLE;
	}
	if (!v->t->nev)
		in->min_ticks = 0;
}

static void v1_free(struct v1 *v)
{
	for (size_t s = 0; s < v->ps.n; s++)
		free(stream(v, s)->idx.p);
	free(v->ps.p);
	free(v->args.p);
	free(v->strv.p);
	free(v->frames.p);
	free(v->stacks.p);
	oob_map_destroy(&v->pmap);
	oob_map_destroy(&v->strs);
	oob_map_destroy(&v->stk);
}

int gotrace_v1_parse(struct gotrace *t, const uint8_t *p, size_t n, int ver, struct oob_err *err)
{
	struct v1 v = {.t = t, .p = p, .n = n, .pos = 16, .ver = ver};
	uint32_t *order = NULL;
	int rc = 0;
	oob_map_init(&v.pmap, 16);
	oob_map_init(&v.strs, 256);
	oob_map_init(&v.stk, 256);
	v.cur = stream_of(&v, 0);
	while (v.pos < n)
		if ((rc = v1_event(&v, err)) < 0)
			goto out;
	if (!v.freq) {
		rc = oob_err_set(
		    err, -EINVAL,
		    "no Frequency event before the end at offset 0x%zx (truncated trace?)", n);
		goto out;
	}
	if (!t->nev) {
		rc = oob_err_set(err, -EINVAL, "the trace has no events");
		goto out;
	}
	order = oob_xmalloc(t->nev * sizeof(*order));
	if ((rc = merge(&v, order, err)) < 0)
		goto out;
	gotrace_permute(t, order);
	resolve_strings(&v);
	resolve_stacks(&v);
	summarize(&v);
out:
	free(order);
	v1_free(&v);
	return rc;
}
