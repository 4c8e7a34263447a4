/* gotrace: reading the file, the header, shared tables and accessors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "go/gotrace_impl.h"
#include "util/in.h"

#define DEFAULT_MAX_BYTES (256ull << 20)

struct gotrace_event *gotrace_push(struct gotrace *t)
{
	oob_xgrow((void **)&t->ev, &t->cap_ev, t->nev + 1, sizeof(*t->ev));
	struct gotrace_event *e = &t->ev[t->nev++];
	memset(e, 0, sizeof(*e));
	e->g = e->p = e->m = GOTRACE_NONE;
	return e;
}

uint32_t gotrace_stack_new(struct gotrace *t)
{
	if (t->nstacks == 0) {
		oob_xgrow((void **)&t->stacks, &t->cap_stacks, 1, sizeof(*t->stacks));
		memset(&t->stacks[0], 0, sizeof(t->stacks[0]));
		t->nstacks = 1;
	}
	oob_xgrow((void **)&t->stacks, &t->cap_stacks, t->nstacks + 1, sizeof(*t->stacks));
	memset(&t->stacks[t->nstacks], 0, sizeof(t->stacks[0]));
	return (uint32_t)t->nstacks++;
}

const char *gotrace_strdup(struct gotrace *t, const uint8_t *s, size_t n)
{
	return oob_arena_strndup(t->arena, (const char *)s, n);
}

void gotrace_permute(struct gotrace *t, const uint32_t *order)
{
	struct gotrace_event *v = oob_xmalloc(t->nev * sizeof(*v) + 1);
	for (size_t i = 0; i < t->nev; i++)
		v[i] = t->ev[order[i]];
	free(t->ev);
	t->ev = v;
	t->cap_ev = t->nev;
}

/*
 * "go 1.N trace" then NULs up to 16 bytes. Returns 1000 + N, 0 if this is not
 * a Go trace header at all, -1 if it is one but malformed.
 */
static int parse_header(const uint8_t *p, size_t n)
{
	if (n < 16 || memcmp(p, "go 1.", 5) != 0)
		return 0;
	int minor = 0;
	size_t i = 5;
	for (; i < 8 && p[i] >= '0' && p[i] <= '9'; i++)
		minor = minor * 10 + (p[i] - '0');
	if (i == 5 || memcmp(p + i, " trace", 6) != 0)
		return -1;
	for (i += 6; i < 16; i++)
		if (p[i] != 0)
			return -1;
	return 1000 + minor;
}

static int version_format(int ver)
{
	switch (ver) {
	case 1007:
	case 1008:
	case 1009:
	case 1010:
	case 1011:
	case 1019:
	case 1021:
		return 1;
	case 1022:
	case 1023:
	case 1025:
	case 1026:
		return 2;
	default:
		return 0;
	}
}

static int parse(struct gotrace *t, const uint8_t *p, size_t n, struct oob_err *err)
{
	int ver = parse_header(p, n);
	if (ver == 0) {
		char hex[64] = "";
		for (size_t i = 0; i < n && i < 8; i++)
			snprintf(hex + 3 * i, sizeof(hex) - 3 * i, "%02x ", p[i]);
		return oob_err_set(
		    err, -ENOTSUP,
		    "%s: not a Go execution trace (first bytes: %s; expected \"go 1.N "
		    "trace\")",
		    t->name, n ? hex : "none");
	}
	if (ver < 0)
		return oob_err_set(err, -EINVAL, "%s: malformed Go trace header at offset 0",
				   t->name);
	int fmt = version_format(ver);
	if (!fmt)
		return oob_err_set(err, -ENOTSUP,
				   "%s: Go trace version 1.%d is not supported (we read 1.7-1.11, "
				   "1.19, 1.21, 1.22, 1.23, 1.25, 1.26 headers)",
				   t->name, ver - 1000);
	t->info.format = fmt;
	t->info.version = ver;
	t->info.bytes = n;
	int rc =
	    fmt == 1 ? gotrace_v1_parse(t, p, n, ver, err) : gotrace_v2_parse(t, p, n, ver, err);
	if (rc < 0)
		return oob_err_prefix(err, "%s", t->name);
	if (gotrace_model_build(t, err) < 0)
		return oob_err_prefix(err, "%s", t->name);
	return 0;
}

static struct gotrace *trace_new(const char *name)
{
	struct gotrace *t = oob_xcalloc(1, sizeof(*t));
	t->arena = oob_arena_new();
	t->name = oob_arena_strdup(t->arena, name ? name : "go trace");
	return t;
}

struct gotrace *gotrace_open_mem(const void *buf, size_t n, const char *name,
				 const struct gotrace_opts *opts, struct oob_err *err)
{
	uint64_t cap = opts && opts->max_bytes ? opts->max_bytes : DEFAULT_MAX_BYTES;
	struct gotrace *t = trace_new(name);
	if (n > cap) {
		oob_err_set(err, -EFBIG, "%s: %zu bytes is over the limit of %llu", t->name, n,
			    (unsigned long long)cap);
		gotrace_free(t);
		return NULL;
	}
	if (parse(t, buf, n, err) < 0) {
		gotrace_free(t);
		return NULL;
	}
	return t;
}

/* Reads the whole (decompressed) stream; the caller frees *out. */
static long slurp(struct in_stream *s, uint64_t cap, uint8_t **out, struct oob_err *err)
{
	struct gotrace_vec v = {0};
	const uint8_t *p;
	long k;
	while ((k = in_peek(s, &p, IN_WINDOW, err)) > 0) {
		if (v.n + (size_t)k > cap) {
			free(v.p);
			return oob_err_set(err, -EFBIG, "%s: over the limit of %llu bytes",
					   in_name(s), (unsigned long long)cap);
		}
		oob_xgrow(&v.p, &v.cap, v.n + (size_t)k + 1, 1);
		memcpy((uint8_t *)v.p + v.n, p, (size_t)k);
		v.n += (size_t)k;
		in_consume(s, (size_t)k);
	}
	if (k < 0) {
		free(v.p);
		return k;
	}
	*out = v.p ? v.p : oob_xmalloc(1);
	return (long)v.n;
}

struct gotrace *gotrace_open(const char *path, const struct gotrace_opts *opts, struct oob_err *err)
{
	uint64_t cap = opts && opts->max_bytes ? opts->max_bytes : DEFAULT_MAX_BYTES;
	struct in_opts io = {.max_bytes = cap + 1};
	struct in_stream *s = in_open(path, &io, err);
	if (!s)
		return NULL;
	uint8_t *buf = NULL;
	long n = slurp(s, cap, &buf, err);
	in_close(s);
	if (n < 0)
		return NULL;
	struct gotrace *t = gotrace_open_mem(buf, (size_t)n, path, opts, err);
	free(buf);
	return t;
}

void gotrace_free(struct gotrace *t)
{
	if (!t)
		return;
	gotrace_model_free(t);
	free(t->ev);
	free(t->stacks);
	oob_arena_free(t->arena);
	free(t);
}

const struct gotrace_info *gotrace_info(const struct gotrace *t)
{
	return &t->info;
}

const struct gotrace_event *gotrace_events(const struct gotrace *t, size_t *n)
{
	*n = t->nev;
	return t->ev;
}

const struct gotrace_model *gotrace_model(const struct gotrace *t)
{
	return &t->model;
}

const struct gotrace_stack *gotrace_stack(const struct gotrace *t, uint32_t id)
{
	return id && id < t->nstacks ? &t->stacks[id] : NULL;
}

const uint64_t *gotrace_type_counts(const struct gotrace *t)
{
	return t->counts;
}

const char *gotrace_type_name(const struct gotrace *t, unsigned type)
{
	if (type > 255)
		return "";
	return t->info.format == 2 ? gotrace_v2_type_name(type) : gotrace_v1_type_name(type);
}

double gotrace_ns(const struct gotrace *t, uint64_t ticks)
{
	if (!t->info.freq)
		return 0;
	return (double)(int64_t)(ticks - t->info.min_ticks) * (1e9 / (double)t->info.freq);
}

const char *gotrace_kind_name(unsigned kind)
{
	static const char *const names[GOTRACE_EV_COUNT] = {
	    [GOTRACE_EV_NONE] = "None",
	    [GOTRACE_EV_PROCS] = "Gomaxprocs",
	    [GOTRACE_EV_PROC_START] = "ProcStart",
	    [GOTRACE_EV_PROC_STOP] = "ProcStop",
	    [GOTRACE_EV_PROC_STEAL] = "ProcSteal",
	    [GOTRACE_EV_PROC_STATUS] = "ProcStatus",
	    [GOTRACE_EV_GC_START] = "GCStart",
	    [GOTRACE_EV_GC_DONE] = "GCDone",
	    [GOTRACE_EV_GC_ACTIVE] = "GCActive",
	    [GOTRACE_EV_STW_START] = "STWStart",
	    [GOTRACE_EV_STW_DONE] = "STWDone",
	    [GOTRACE_EV_SWEEP_START] = "SweepStart",
	    [GOTRACE_EV_SWEEP_DONE] = "SweepDone",
	    [GOTRACE_EV_SWEEP_ACTIVE] = "SweepActive",
	    [GOTRACE_EV_GO_CREATE] = "GoCreate",
	    [GOTRACE_EV_GO_CREATE_BLOCKED] = "GoCreateBlocked",
	    [GOTRACE_EV_GO_CREATE_SYSCALL] = "GoCreateSyscall",
	    [GOTRACE_EV_GO_START] = "GoStart",
	    [GOTRACE_EV_GO_END] = "GoEnd",
	    [GOTRACE_EV_GO_END_SYSCALL] = "GoEndSyscall",
	    [GOTRACE_EV_GO_YIELD] = "GoYield",
	    [GOTRACE_EV_GO_BLOCK] = "GoBlock",
	    [GOTRACE_EV_GO_UNBLOCK] = "GoUnblock",
	    [GOTRACE_EV_GO_SYSCALL] = "GoSyscall",
	    [GOTRACE_EV_GO_SYSCALL_END] = "GoSyscallEnd",
	    [GOTRACE_EV_GO_SYSCALL_BLOCK] = "GoSyscallBlock",
	    [GOTRACE_EV_GO_SYSCALL_EXIT] = "GoSyscallExit",
	    [GOTRACE_EV_GO_STATUS] = "GoStatus",
	    [GOTRACE_EV_GO_SWITCH] = "GoSwitch",
	    [GOTRACE_EV_GO_SWITCH_DESTROY] = "GoSwitchDestroy",
	    [GOTRACE_EV_GO_LABEL] = "GoLabel",
	    [GOTRACE_EV_HEAP_ALLOC] = "HeapAlloc",
	    [GOTRACE_EV_HEAP_GOAL] = "HeapGoal",
	    [GOTRACE_EV_ASSIST_START] = "MarkAssistStart",
	    [GOTRACE_EV_ASSIST_DONE] = "MarkAssistDone",
	    [GOTRACE_EV_ASSIST_ACTIVE] = "MarkAssistActive",
	    [GOTRACE_EV_TASK_BEGIN] = "TaskBegin",
	    [GOTRACE_EV_TASK_END] = "TaskEnd",
	    [GOTRACE_EV_REGION_BEGIN] = "RegionBegin",
	    [GOTRACE_EV_REGION_END] = "RegionEnd",
	    [GOTRACE_EV_LOG] = "Log",
	    [GOTRACE_EV_CPU_SAMPLE] = "CPUSample",
	    [GOTRACE_EV_FUTILE_WAKEUP] = "FutileWakeup",
	    [GOTRACE_EV_OTHER] = "Other",
	};
	return kind < GOTRACE_EV_COUNT && names[kind] ? names[kind] : "";
}

const char *gotrace_gstate_name(unsigned state)
{
	static const char *const names[] = {"unknown", "runnable", "running",
					    "syscall", "waiting",  "dead"};
	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "";
}
