/*
 * Perfetto's protobuf trace from stack events, in one pass over the log.
 *
 * Which slices are written, and when, is export_slices()'s rule, as for
 * the JSON (a frame is written once it is known to last min_duration);
 * only the encoding and the tracks differ. Every TrackEvent is a TracePacket of its
 * own on one sequence, encoded into a buffer that is deflated as it fills.
 *
 * Field numbers are those of Perfetto's protos (protos/perfetto/trace/ in
 * the Perfetto repository), named below after the message and field.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_impl.h"
#include "export/export_pb.h"
#include "util/oob_mem.h"

/* trace.proto: Trace */
enum { TRACE_PACKET = 1 };
/* trace_packet.proto: TracePacket, and its SequenceFlags */
enum {
	PKT_TIMESTAMP = 8,
	PKT_SEQUENCE_ID = 10, /* trusted_packet_sequence_id */
	PKT_TRACK_EVENT = 11,
	PKT_INTERNED_DATA = 12,
	PKT_SEQUENCE_FLAGS = 13,
	PKT_TRACK_DESCRIPTOR = 60,
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
	SEQ_NEEDS_INCREMENTAL_STATE = 2,
};
/* track_event/track_event.proto: TrackEvent, its Type; EventName and
 * EventCategory are both {iid = 1, name = 2} */
enum {
	EV_CATEGORY_IIDS = 3,
	EV_DEBUG_ANNOTATIONS = 4,
	EV_TYPE = 9,
	EV_NAME_IID = 10,
	EV_TRACK_UUID = 11,
	TYPE_SLICE_BEGIN = 1,
	TYPE_SLICE_END = 2,
	INTERNED_IID = 1,
	INTERNED_NAME = 2,
};
/* track_event/debug_annotation.proto: DebugAnnotation */
enum { ANN_NAME_IID = 1, ANN_STRING_VALUE_IID = 17 };
/* interned_data/interned_data.proto: InternedData; its strings are
 * InternedString {iid = 1, str = 2} (profiling/profile_common.proto), the
 * other entries {iid = 1, name = 2} as well */
enum {
	IN_EVENT_CATEGORIES = 1,
	IN_EVENT_NAMES = 2,
	IN_DEBUG_ANNOTATION_NAMES = 3,
	IN_DEBUG_ANNOTATION_STRING_VALUES = 29,
};
/* track_event/track_descriptor.proto, process_descriptor.proto,
 * thread_descriptor.proto (every number here checked against upstream's
 * protos, 2026-11-27) */
enum {
	TD_UUID = 1,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	PD_PID = 1,
	PD_PROCESS_NAME = 6,
	THD_PID = 1,
	THD_TID = 2,
	THD_THREAD_NAME = 5,
};

#define SEQ_ID	   1
#define ANN_SOURCE 1 /* iid of the debug annotation name "source" */
/* Pids and tids we make up start above Linux's PID_MAX_LIMIT (2^22). */
#define SYN_BASE    (1u << 24)
#define MACHINE_PID SYN_BASE
#define GO_PID	    (SYN_BASE + 1)
#define HART_TID(h) (SYN_BASE + 2 + (h))
#define GO_TID(k)   (SYN_BASE + 0x10002 + (k))
/* Track uuids: the machine process 1, hart h 2 + h; guest process i
 * PROC_UUID + 2i, its thread one above; Go tracks GO_UUID + k. */
#define HART_UUID(h) (2 + (uint64_t)(h))
#define PROC_UUID(i) ((1ull << 20) + 2 * (uint64_t)(i))
#define GO_UUID	     (1ull << 40)

struct hart {
	uint64_t *track_last; /* the time of the track its stack is on */
	uint64_t track;
	uint64_t own_last; /* the time of the hart's own track */
};

struct pb {
	struct export_pb_gz gz;
	struct export_pb pkt, ev, in, tmp;
	const struct profile *p;
	struct export_clock clk;
	uint64_t min;
	uint32_t *proc_of_frame; /* per frame: the guest process it is the root of */
	uint64_t *proc_last;	 /* per guest process: its thread track's time */
	uint8_t *interned;	 /* per frame: its name is interned */
	struct hart *h;
	unsigned nharts;
	uint8_t *hart_described;
	const char *name;
	uint64_t kept, dropped;
	/* Go tracks */
	uint64_t go_track;
	const char **go_name; /* interned Go state names, iid = nframes + 1 + i */
	size_t go_nname, go_cap;
};

/* The packet in x->pkt as one Trace.packet, then emptied. */
static void put_packet(struct pb *x)
{
	export_pb_msg(&x->gz.buf, TRACE_PACKET, &x->pkt);
	export_pb_gz_flush(&x->gz);
}

static void put_interned(struct export_pb *in, unsigned field, uint64_t iid, const char *name,
			 struct export_pb *tmp)
{
	export_pb_uint(tmp, INTERNED_IID, iid);
	export_pb_str(tmp, INTERNED_NAME, name);
	export_pb_msg(in, field, tmp);
}

/* The first packet: clears the sequence's incremental state and interns
 * what every event may use (the frame kinds as categories, "source"). */
static void put_first(struct pb *x)
{
	for (unsigned k = 0; k <= PROFILE_FRAME_FIRMWARE; k++)
		put_interned(&x->in, IN_EVENT_CATEGORIES, k + 1, profile_frame_kind_name(k),
			     &x->tmp);
	put_interned(&x->in, IN_DEBUG_ANNOTATION_NAMES, ANN_SOURCE, "source", &x->tmp);
	export_pb_uint(&x->pkt, PKT_SEQUENCE_ID, SEQ_ID);
	export_pb_msg(&x->pkt, PKT_INTERNED_DATA, &x->in);
	export_pb_uint(&x->pkt, PKT_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	put_packet(x);
}

/* A TrackDescriptor of a process (tid < 0) or of a thread. */
static void put_track(struct pb *x, uint64_t uuid, int64_t pid, int64_t tid, const char *name)
{
	struct export_pb d = {0};
	if (tid < 0) {
		export_pb_uint_set(&x->tmp, PD_PID, (uint64_t)pid);
		export_pb_str(&x->tmp, PD_PROCESS_NAME, name);
	} else {
		export_pb_uint_set(&x->tmp, THD_PID, (uint64_t)pid);
		export_pb_uint_set(&x->tmp, THD_TID, (uint64_t)tid);
		export_pb_str(&x->tmp, THD_THREAD_NAME, name);
	}
	export_pb_uint(&d, TD_UUID, uuid);
	export_pb_msg(&d, tid < 0 ? TD_PROCESS : TD_THREAD, &x->tmp);
	export_pb_uint(&x->pkt, PKT_SEQUENCE_ID, SEQ_ID);
	export_pb_msg(&x->pkt, PKT_TRACK_DESCRIPTOR, &d);
	export_pb_free(&d);
	put_packet(x);
}

/* Guest pids as they are, unless unknown or taken by an earlier process. */
static int64_t guest_pid(const struct profile *p, size_t i)
{
	int64_t pid = profile_process(p, i)->pid;
	if (pid < 0 || pid >= SYN_BASE)
		return SYN_BASE + 0x20002 + (int64_t)i;
	for (size_t j = 0; j < i; j++)
		if (profile_process(p, j)->pid == pid)
			return SYN_BASE + 0x20002 + (int64_t)i;
	return pid;
}

static void put_processes(struct pb *x)
{
	const struct profile *p = x->p;
	size_t np = profile_nprocesses(p);
	put_track(x, 1, MACHINE_PID, -1, x->name);
	for (size_t i = 0; i < np; i++) {
		const struct profile_process *pr = profile_process(p, i);
		int64_t pid = guest_pid(p, i);
		const char *comm = pr->comm && pr->comm[0] ? pr->comm : "?";
		put_track(x, PROC_UUID(i), pid, -1, comm);
		put_track(x, PROC_UUID(i) + 1, pid, pid, comm);
		if (pr->frame < profile_nframes(p) && x->proc_of_frame[pr->frame] == PROFILE_NONE)
			x->proc_of_frame[pr->frame] = (uint32_t)i;
	}
}

/* ---- the events ---- */

static void event_packet(struct pb *x, uint64_t ns, int needs_state)
{
	export_pb_uint_set(&x->pkt, PKT_TIMESTAMP, ns);
	export_pb_uint(&x->pkt, PKT_SEQUENCE_ID, SEQ_ID);
	export_pb_msg(&x->pkt, PKT_TRACK_EVENT, &x->ev);
	if (x->in.n)
		export_pb_msg(&x->pkt, PKT_INTERNED_DATA, &x->in);
	if (needs_state)
		export_pb_uint(&x->pkt, PKT_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	put_packet(x);
}

/* A frame's name and source, interned with the first event that uses
 * them: iid frame + 1 in both indexes. */
static void intern_frame(struct pb *x, uint32_t frame, const struct profile_frame *fr)
{
	put_interned(&x->in, IN_EVENT_NAMES, (uint64_t)frame + 1, fr->name, &x->tmp);
	if (fr->file) {
		char src[4200];
		int n = fr->line ? snprintf(src, sizeof(src), "%s:%" PRIu32, fr->file, fr->line)
				 : snprintf(src, sizeof(src), "%s", fr->file);
		export_pb_uint(&x->tmp, INTERNED_IID, (uint64_t)frame + 1);
		export_pb_bytes(&x->tmp, INTERNED_NAME, src,
				n < (int)sizeof(src) ? (size_t)n : sizeof(src) - 1);
		export_pb_msg(&x->in, IN_DEBUG_ANNOTATION_STRING_VALUES, &x->tmp);
	}
	x->interned[frame] = 1;
}

static void put_begin(struct pb *x, uint64_t track, uint32_t frame, uint64_t ns)
{
	const struct profile_frame *fr = profile_frame(x->p, frame);
	if (!x->interned[frame])
		intern_frame(x, frame, fr);
	export_pb_uint(&x->ev, EV_CATEGORY_IIDS, (uint64_t)fr->kind + 1);
	export_pb_uint(&x->ev, EV_TYPE, TYPE_SLICE_BEGIN);
	export_pb_uint(&x->ev, EV_NAME_IID, (uint64_t)frame + 1);
	export_pb_uint(&x->ev, EV_TRACK_UUID, track);
	if (fr->file) {
		export_pb_uint(&x->tmp, ANN_NAME_IID, ANN_SOURCE);
		export_pb_uint(&x->tmp, ANN_STRING_VALUE_IID, (uint64_t)frame + 1);
		export_pb_msg(&x->ev, EV_DEBUG_ANNOTATIONS, &x->tmp);
	}
	event_packet(x, ns, 1);
}

static void put_end(struct pb *x, uint64_t track, uint64_t ns)
{
	export_pb_uint(&x->ev, EV_TYPE, TYPE_SLICE_END);
	export_pb_uint(&x->ev, EV_TRACK_UUID, track);
	event_packet(x, ns, 1);
}

/* The track a hart's stack goes on, chosen by its bottom frame. */
static void choose_track(struct pb *x, struct hart *t, unsigned hart, uint32_t bottom)
{
	uint32_t i = x->proc_of_frame[bottom];
	if (i != PROFILE_NONE) {
		t->track = PROC_UUID(i) + 1;
		t->track_last = &x->proc_last[i];
		return;
	}
	if (!x->hart_described[hart]) {
		char label[32];
		snprintf(label, sizeof(label), "hart %u", hart);
		put_track(x, HART_UUID(hart), MACHINE_PID, HART_TID(hart), label);
		x->hart_described[hart] = 1;
	}
	t->track = HART_UUID(hart);
	t->track_last = &t->own_last;
}

/* A thread's time never goes back, whichever hart's clock it follows. */
static uint64_t track_time(struct hart *t, uint64_t ns)
{
	if (ns < *t->track_last)
		ns = *t->track_last;
	return *t->track_last = ns;
}

static void slice_begin(void *ctx, unsigned hart, uint32_t depth, uint32_t frame, uint64_t ns)
{
	struct pb *x = ctx;
	struct hart *t = &x->h[hart];
	if (depth == 0)
		choose_track(x, t, hart, frame);
	put_begin(x, t->track, frame, track_time(t, ns));
}

static void slice_end(void *ctx, unsigned hart, uint32_t frame, uint64_t ns)
{
	struct pb *x = ctx;
	struct hart *t = &x->h[hart];
	(void)frame;
	put_end(x, t->track, track_time(t, ns));
}

/* ---- the Go runtime's tracks ---- */

static void go_thread(void *ctx, const char *label)
{
	struct pb *x = ctx;
	uint64_t k = x->go_track++;
	put_track(x, GO_UUID + 1 + k, GO_PID, GO_TID(k), label);
}

/* Go state names are few: a linear search, iids after the frames'. */
static uint64_t go_name_iid(struct pb *x, const char *name)
{
	size_t i = 0;
	while (i < x->go_nname && strcmp(x->go_name[i], name))
		i++;
	uint64_t iid = profile_nframes(x->p) + 1 + i;
	if (i == x->go_nname) {
		oob_xgrow((void **)&x->go_name, &x->go_cap, i + 1, sizeof(*x->go_name));
		x->go_name[x->go_nname++] = name;
		put_interned(&x->in, IN_EVENT_NAMES, iid, name, &x->tmp);
	}
	return iid;
}

/* Intervals of one track come in time order and do not overlap, except GC
 * and STW phases: STW ones lie within a GC, and Perfetto orders a track's
 * events by time before it nests them. */
static void go_slice(void *ctx, uint64_t s, uint64_t e, const char *name)
{
	struct pb *x = ctx;
	uint64_t track = GO_UUID + x->go_track;
	export_pb_uint(&x->ev, EV_TYPE, TYPE_SLICE_BEGIN);
	export_pb_uint(&x->ev, EV_NAME_IID, go_name_iid(x, name));
	export_pb_uint(&x->ev, EV_TRACK_UUID, track);
	event_packet(x, s, 1);
	put_end(x, track, e);
}

static void put_go(struct pb *x, const struct timeline_go *go)
{
	struct export_go_sink s = {.ctx = x, .thread = go_thread, .slice = go_slice};
	put_track(x, GO_UUID, GO_PID, -1, "Go runtime");
	export_go_tracks(&x->clk, go, x->min, &s);
}

/* ---- the entry point ---- */

static void pb_free(struct pb *x)
{
	free(x->h);
	free(x->hart_described);
	free(x->proc_of_frame);
	free(x->proc_last);
	free(x->interned);
	free(x->go_name);
	export_pb_free(&x->pkt);
	export_pb_free(&x->ev);
	export_pb_free(&x->in);
	export_pb_free(&x->tmp);
}

int export_perfetto_pb(const struct profile *p, struct evlog *ev, const struct export_opts *o,
		       FILE *out, struct oob_err *err)
{
	struct pb x = {.p = p, .min = o->min_duration, .name = o->name ? o->name : "oobprof"};
	size_t nf = profile_nframes(p), np = profile_nprocesses(p);
	if (!ev)
		return oob_err_set(err, -EINVAL, "perfetto-pb export: needs the stack events");
	int rc = export_clock_init(&x.clk, p, ev, o, err);
	if (rc < 0)
		return rc;
	if (export_pb_gz_init(&x.gz, out) < 0)
		return oob_err_set(err, -ENOMEM, "perfetto-pb export: zlib cannot start");
	x.nharts = evlog_nharts(ev);
	x.h = oob_xcalloc(x.nharts ? x.nharts : 1, sizeof(*x.h));
	x.hart_described = oob_xcalloc(x.nharts ? x.nharts : 1, 1);
	x.proc_of_frame = oob_xmalloc((nf ? nf : 1) * sizeof(*x.proc_of_frame));
	memset(x.proc_of_frame, 0xff, (nf ? nf : 1) * sizeof(*x.proc_of_frame));
	x.proc_last = oob_xcalloc(np ? np : 1, sizeof(*x.proc_last));
	x.interned = oob_xcalloc(nf ? nf : 1, 1);
	put_first(&x);
	put_processes(&x);
	struct export_slice_sink sink = {.ctx = &x, .begin = slice_begin, .end = slice_end};
	rc = export_slices(ev, (uint32_t)nf, &x.clk, x.min, &sink, &x.kept, &x.dropped, err);
	if (rc == 0 && o->go)
		put_go(&x, o->go);
	if (export_pb_gz_finish(&x.gz) < 0 && rc == 0)
		rc = oob_err_set(err, -EIO, "perfetto-pb export: zlib failed");
	else if (rc < 0)
		oob_err_prefix(err, "perfetto-pb export");
	pb_free(&x);
	return rc;
}
