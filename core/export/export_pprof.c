/*
 * pprof's profile.proto, gzipped. A protobuf message is a sequence of
 * (field key, value) pairs that may come in any order and be concatenated,
 * so the top-level fields are encoded one at a time and streamed through
 * zlib's gzip deflate (export_pb): memory stays at one sample plus the
 * string table, however deep and wide the tree is.
 *
 * Ids: function i + 1 and location i + 1 for frame i; the root's own weight
 * (instructions before any frame was known) goes to an "[unknown]" function.
 * One mapping covers every address and says functions are resolved, so pprof
 * never tries to symbolize the addresses itself.
 *
 * A profile with per-pc counts (recon_opts.pcs) is written at the exact pc
 * instead (put_pc_profile): one mapping per binary and load bias, with its
 * build-id; one location per pc with its line, an inline chain as several
 * lines (innermost first, as profile.proto orders them), so `pprof -list`
 * shows exact per-line counts; the contexts above the leaf are located at
 * their function's entry. Process roots become pid and comm labels rather
 * than frames, and the hart that ran a sample is a label too (rows and
 * entries are counted per hart: the same stack on two harts is two samples).
 * The calls sample type stays "times the context was entered", on a sample
 * of its own at the function's entry.
 *
 * A task without a pid gets a task label too, its root's name ("? [task 5]"),
 * so that two of one comm stay apart.
 *
 * The per-context form (no per-pc counts) has the same labels: process
 * roots become pid and comm, and with the run's stack events each context
 * is one sample per hart that ran it, its weights those of a replay of
 * that hart alone (timeline_profile over the whole run, whose weights per
 * context add up to the profile's over the harts). Without the events
 * there is no hart label.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_impl.h"
#include "export/export_pb.h"
#include "timeline/timeline.h"
#include "util/oob_map.h"
#include "util/oob_mem.h"

/* profile.proto field numbers */
enum {
	P_SAMPLE_TYPE = 1,
	P_SAMPLE = 2,
	P_MAPPING = 3,
	P_LOCATION = 4,
	P_FUNCTION = 5,
	P_STRING_TABLE = 6,
	P_PERIOD_TYPE = 11,
	P_PERIOD = 12,
	P_COMMENT = 13,
	P_DEFAULT_SAMPLE_TYPE = 14,
};

/* ---- strings ---- */

struct strtab {
	struct oob_map idx; /* hash -> index in v */
	const char **v;
	size_t n, cap;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h >> 1; /* never OOB_MAP_EMPTY */
}

/* The string's index in the table, added if new (open addressing on the
 * hash, as two strings may share one). */
static uint64_t str_id(struct strtab *t, const char *s)
{
	for (uint64_t h = str_hash(s);; h = (h + 1) & (UINT64_MAX >> 1)) {
		int inserted;
		uint64_t *v = oob_map_put(&t->idx, h, &inserted);
		if (inserted) {
			oob_xgrow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v));
			t->v[t->n] = s;
			*v = t->n++;
			return *v;
		}
		if (!strcmp(t->v[*v], s))
			return *v;
	}
}

/* ---- the profile ---- */

struct enc {
	const struct profile *p;
	struct export_pb_gz out;
	struct strtab st;
	struct export_pb tmp, ids, vals;
	int cycles;
	uint32_t unknown_id; /* function and location of the root's weight */
	/* exact-pc form: function ids by (name, file) string ids, the first
	 * location id of frames (after the sites'), mapping id per site */
	struct oob_map fn_ids, loc_ids;
	uint64_t nfns, nlocs, frame_loc0;
	uint32_t *site_map;
	const struct profile_process **proc_of; /* per frame: its process, or NULL */
};

static void put_msg(struct enc *e, unsigned field, struct export_pb *m)
{
	export_pb_bytes(&e->out.buf, field, m->p, m->n);
	m->n = 0;
	export_pb_gz_flush(&e->out);
}

static void put_value_type(struct enc *e, unsigned field, const char *type, const char *unit)
{
	export_pb_uint(&e->tmp, 1, str_id(&e->st, type));
	export_pb_uint(&e->tmp, 2, str_id(&e->st, unit));
	put_msg(e, field, &e->tmp);
}

static void put_function(struct enc *e, uint64_t id, const char *name, const char *file,
			 uint32_t line)
{
	export_pb_uint(&e->tmp, 1, id);
	export_pb_uint(&e->tmp, 2, str_id(&e->st, name));
	export_pb_uint(&e->tmp, 3, str_id(&e->st, name));
	if (file)
		export_pb_uint(&e->tmp, 4, str_id(&e->st, file));
	export_pb_uint(&e->tmp, 5, line);
	put_msg(e, P_FUNCTION, &e->tmp);
}

static void put_location(struct enc *e, uint64_t id, uint64_t addr, uint32_t line)
{
	struct export_pb ln = {0};
	export_pb_uint(&ln, 1, id); /* function_id */
	export_pb_uint(&ln, 2, line);
	export_pb_uint(&e->tmp, 1, id);
	export_pb_uint(&e->tmp, 2, 1); /* mapping_id */
	export_pb_uint(&e->tmp, 3, addr);
	export_pb_bytes(&e->tmp, 4, ln.p, ln.n);
	export_pb_free(&ln);
	put_msg(e, P_LOCATION, &e->tmp);
}

static void put_mapping(struct enc *e, const char *name)
{
	export_pb_uint(&e->tmp, 1, 1);
	export_pb_uint(&e->tmp, 3, UINT64_MAX); /* memory_limit: every address */
	export_pb_uint(&e->tmp, 5, str_id(&e->st, name));
	export_pb_uint(&e->tmp, 7, 1); /* has_functions */
	export_pb_uint(&e->tmp, 8, 1); /* has_filenames */
	export_pb_uint(&e->tmp, 9, 1); /* has_line_numbers */
	put_msg(e, P_MAPPING, &e->tmp);
}

/* ---- at the exact pc ---- */

static uint64_t fn_id(struct enc *e, const char *name, const char *file, uint32_t line)
{
	uint64_t ns = str_id(&e->st, name), fs = file ? str_id(&e->st, file) : 0;
	uint64_t *v = oob_map_put(&e->fn_ids, ns << 32 | fs, NULL);
	if (!*v) {
		*v = ++e->nfns;
		put_function(e, *v, name, file, line);
	}
	return *v;
}

struct pc_mapping {
	uint64_t lo, hi, bias;
	const struct profile_site *s;
};

/* Mappings: one per (binary, bias), over the hull of its counted pcs. */
static void put_pc_mappings(struct enc *e)
{
	const struct profile *p = e->p;
	size_t ns = profile_nsites(p), nm = 0;
	struct pc_mapping *m = oob_xcalloc(ns + 1, sizeof(*m));
	e->site_map = oob_xcalloc(ns + 1, sizeof(*e->site_map));
	for (uint32_t i = 0; i < ns; i++) {
		const struct profile_site *s = profile_site(p, i);
		if (!s->binary)
			continue;
		uint64_t bias = s->pc - s->link;
		size_t k = 0; /* a few binaries: a linear search */
		while (k < nm && (m[k].bias != bias || strcmp(m[k].s->binary, s->binary)))
			k++;
		if (k == nm)
			m[nm++] = (struct pc_mapping){s->pc, s->pc, bias, s};
		if (s->pc < m[k].lo)
			m[k].lo = s->pc;
		if (s->pc >= m[k].hi)
			m[k].hi = s->pc + 4;
		e->site_map[i] = (uint32_t)k + 1;
	}
	for (size_t k = 0; k < nm; k++) {
		export_pb_uint(&e->tmp, 1, k + 1);
		export_pb_uint(&e->tmp, 2, m[k].lo);
		export_pb_uint(&e->tmp, 3, m[k].hi);
		export_pb_uint(&e->tmp, 4, m[k].lo - m[k].bias); /* file_offset: link address */
		/* the file's name: where the run found it is the runner's business
		 * (the server's jobs use temporary links) */
		const char *base = strrchr(m[k].s->binary, '/');
		export_pb_uint(&e->tmp, 5, str_id(&e->st, base ? base + 1 : m[k].s->binary));
		if (m[k].s->build_id)
			export_pb_uint(&e->tmp, 6, str_id(&e->st, m[k].s->build_id));
		export_pb_uint(&e->tmp, 7, 1);
		export_pb_uint(&e->tmp, 8, 1);
		export_pb_uint(&e->tmp, 9, 1);
		put_msg(e, P_MAPPING, &e->tmp);
	}
	free(m);
}

static void put_line(struct export_pb *loc, uint64_t fn, uint32_t line)
{
	struct export_pb ln = {0};
	export_pb_uint(&ln, 1, fn);
	export_pb_uint(&ln, 2, line);
	export_pb_bytes(loc, 4, ln.p, ln.n);
	export_pb_free(&ln);
}

/* The location of site i run as part of frame f (the calling context's
 * function: code without symbols is named by where control entered it, so
 * one pc may belong to several): made on first use. Its lines: the
 * innermost first, then each caller it was inlined into, f last. */
static uint64_t pc_location(struct enc *e, uint32_t i, uint32_t f)
{
	uint64_t *id = oob_map_put(&e->loc_ids, (uint64_t)i << 32 | f, NULL);
	if (*id)
		return *id;
	*id = ++e->nlocs;
	const struct profile_site *s = profile_site(e->p, i);
	const struct profile_frame *fr = f < profile_nframes(e->p) ? profile_frame(e->p, f) : NULL;
	const char *outer = fr ? fr->name : "[unknown]";
	const char *ofile = fr ? (fr->file ? fr->file : fr->binary) : NULL;
	struct export_pb loc = {0}; /* e->tmp carries the functions made on the way */
	export_pb_uint(&loc, 1, *id);
	if (e->site_map[i])
		export_pb_uint(&loc, 2, e->site_map[i]);
	export_pb_uint(&loc, 3, s->pc);
	uint32_t line = s->line;
	for (uint32_t k = s->ninl; k-- > 0;) {
		put_line(&loc, fn_id(e, s->inl[k].name, s->file, 0), line);
		line = s->inl[k].call_line;
	}
	put_line(&loc, fn_id(e, outer, ofile, fr ? fr->line : 0), line);
	put_msg(e, P_LOCATION, &loc);
	export_pb_free(&loc);
	return *id;
}

/* A numeric label carries a unit (its key): pprof drops a label whose num
 * and unit are both 0, as hart 0's and pid 0's were. */
static void put_label(struct export_pb *m, struct enc *e, const char *key, const char *str,
		      int64_t num)
{
	struct export_pb l = {0};
	export_pb_uint(&l, 1, str_id(&e->st, key));
	if (str) {
		export_pb_uint(&l, 2, str_id(&e->st, str));
	} else {
		export_pb_uint(&l, 3, (uint64_t)num);
		export_pb_uint(&l, 4, str_id(&e->st, key));
	}
	export_pb_bytes(m, 3, l.p, l.n);
	export_pb_free(&l);
}

static void index_processes(struct enc *e)
{
	const struct profile *p = e->p;
	size_t nf = profile_nframes(p);
	e->proc_of = oob_xcalloc(nf ? nf : 1, sizeof(*e->proc_of));
	for (size_t k = 0; k < profile_nprocesses(p); k++) {
		const struct profile_process *q = profile_process(p, k);
		if (q->frame < nf && !e->proc_of[q->frame])
			e->proc_of[q->frame] = q;
	}
}

/* A sample: its ids (leaf first; the stack of node above skip, with loc0 +
 * frame for each frame but process roots, which become labels, as the hart
 * does unless PROFILE_HART_UNKNOWN), then the values. */
static void put_sample(struct enc *e, uint32_t node, uint32_t skip, uint64_t loc0, uint32_t hart,
		       uint64_t insns, uint64_t cycles, uint64_t calls)
{
	const struct profile *p = e->p;
	const struct profile_process *proc = NULL;
	for (uint32_t x = node; x != 0; x = profile_node(p, x)->parent) {
		uint32_t f = profile_node(p, x)->frame;
		/* a process root that is the leaf (weight before any function was
		 * known) stays its frame: a sample needs a location */
		if (profile_frame(p, f)->kind != PROFILE_FRAME_PROCESS ||
		    (x == node && x != skip)) {
			if (x != skip)
				export_pb_varint(&e->ids, loc0 + f);
			if (profile_frame(p, f)->kind != PROFILE_FRAME_PROCESS)
				continue;
		}
		if (!(proc = e->proc_of[f]))
			put_label(&e->tmp, e, "comm", profile_frame(p, f)->name, 0);
	}
	export_pb_varint(&e->vals, insns);
	if (e->cycles)
		export_pb_varint(&e->vals, cycles);
	export_pb_varint(&e->vals, calls);
	export_pb_bytes(&e->tmp, 1, e->ids.p, e->ids.n);
	export_pb_bytes(&e->tmp, 2, e->vals.p, e->vals.n);
	if (proc && proc->pid >= 0)
		put_label(&e->tmp, e, "pid", NULL, proc->pid);
	if (proc && proc->comm)
		put_label(&e->tmp, e, "comm", proc->comm, 0);
	if (proc && proc->pid < 0) /* no pid: the task's own name tells tasks apart */
		put_label(&e->tmp, e, "task", profile_frame(p, proc->frame)->name, 0);
	if (hart != PROFILE_HART_UNKNOWN)
		put_label(&e->tmp, e, "hart", NULL, hart);
	e->ids.n = e->vals.n = 0;
	put_msg(e, P_SAMPLE, &e->tmp);
}

/* At the exact pc: the leaf location, then node's stack above it. */
static void put_pc_sample(struct enc *e, uint64_t leaf, uint32_t node, uint32_t hart,
			  uint64_t insns, uint64_t cycles, uint64_t calls)
{
	export_pb_varint(&e->ids, leaf);
	put_sample(e, node, node, e->frame_loc0, hart, insns, cycles, calls);
}

static void put_pc_profile(struct enc *e)
{
	const struct profile *p = e->p;
	uint32_t ns = (uint32_t)profile_nsites(p);
	oob_map_init(&e->fn_ids, 2 * profile_nframes(p) + 16);
	oob_map_init(&e->loc_ids, 2 * ns + 16);
	put_pc_mappings(e);
	e->frame_loc0 = 1;
	e->nlocs = profile_nframes(p);
	for (uint32_t f = 0; f < profile_nframes(p); f++) {
		const struct profile_frame *fr = profile_frame(p, f);
		uint64_t fn = fn_id(e, fr->name, fr->file ? fr->file : fr->binary, fr->line);
		export_pb_uint(&e->tmp, 1, e->frame_loc0 + f);
		export_pb_uint(&e->tmp, 3, fr->addr);
		put_line(&e->tmp, fn, fr->line);
		put_msg(e, P_LOCATION, &e->tmp);
	}
	for (size_t i = 0; i < profile_npcs(p); i++) {
		const struct profile_pc *r = profile_pc(p, i);
		uint32_t f = r->node ? profile_node(p, r->node)->frame : PROFILE_NONE;
		put_pc_sample(e, pc_location(e, r->site, f), r->node, r->hart, r->insns, r->cycles,
			      0);
	}
	/* a profile stored before entries were kept per hart has the nodes' */
	for (size_t i = 0; i < profile_nhart_calls(p); i++) {
		const struct profile_hart_calls *c = profile_hart_calls(p, i);
		put_pc_sample(e, e->frame_loc0 + profile_node(p, c->node)->frame, c->node, c->hart,
			      0, 0, c->calls);
	}
	for (uint32_t i = 1; i < profile_nnodes(p) && !profile_nhart_calls(p); i++) {
		const struct profile_node *n = profile_node(p, i);
		if (n->calls)
			put_pc_sample(e, e->frame_loc0 + n->frame, i, PROFILE_HART_UNKNOWN, 0, 0,
				      n->calls);
	}
	oob_map_destroy(&e->fn_ids);
	oob_map_destroy(&e->loc_ids);
	free(e->site_map);
}

static void put_frames(struct enc *e)
{
	const struct profile *p = e->p;
	for (uint32_t i = 0; i < profile_nframes(p); i++) {
		const struct profile_frame *fr = profile_frame(p, i);
		put_function(e, i + 1, fr->name, fr->file ? fr->file : fr->binary, fr->line);
		put_location(e, i + 1, fr->addr, fr->line);
	}
	if (e->unknown_id) {
		put_function(e, e->unknown_id, "[unknown]", NULL, 0);
		put_location(e, e->unknown_id, 0, 0);
	}
}

/* One calling context's sample on one hart (PROFILE_HART_UNKNOWN: all):
 * its stack leaf first, n's weights. */
static void put_node_sample(struct enc *e, uint32_t i, uint32_t hart, const struct profile_node *n)
{
	if (!n->self_insns && !n->self_cycles && !n->calls)
		return;
	if (i == 0)
		export_pb_varint(&e->ids, e->unknown_id);
	put_sample(e, i, 0, 1, hart, n->self_insns, n->self_cycles, n->calls);
}

/* One sample per calling context with any weight, and per hart when the
 * stack events say which ran it (a profile per hart, replayed). */
static int put_samples(struct enc *e, struct evlog *ev, struct oob_err *err)
{
	const struct profile *p = e->p;
	unsigned nh = ev ? evlog_nharts(ev) : 0;
	struct profile **ph = oob_xcalloc(nh ? nh : 1, sizeof(*ph));
	int rc = 0;
	for (unsigned h = 0; h < nh && rc == 0; h++)
		if (evlog_hart(ev, h).events)
			rc = timeline_profile(ev, p, (int)h, 0, 0, &ph[h], err);
	for (uint32_t i = 0; i < profile_nnodes(p) && rc == 0; i++) {
		if (!nh)
			put_node_sample(e, i, PROFILE_HART_UNKNOWN, profile_node(p, i));
		for (unsigned h = 0; h < nh; h++)
			if (ph[h])
				put_node_sample(e, i, h, profile_node(ph[h], i));
	}
	for (unsigned h = 0; h < nh; h++)
		profile_free(ph[h]);
	free(ph);
	return rc;
}

static void put_header(struct enc *e, const struct export_opts *o)
{
	enum profile_metric m =
	    o->metric == PROFILE_CYCLES && !e->cycles ? PROFILE_INSNS : o->metric;
	str_id(&e->st, ""); /* string_table[0] must be "" */
	put_value_type(e, P_SAMPLE_TYPE, "instructions", "count");
	if (e->cycles)
		put_value_type(e, P_SAMPLE_TYPE, "cycles", "count");
	put_value_type(e, P_SAMPLE_TYPE, "calls", "count");
	put_value_type(e, P_PERIOD_TYPE, "instructions", "count");
	export_pb_uint(&e->out.buf, P_PERIOD, 1);
	export_pb_uint(&e->out.buf, P_DEFAULT_SAMPLE_TYPE, str_id(&e->st, profile_metric_name(m)));
	export_pb_uint(&e->out.buf, P_COMMENT, str_id(&e->st, export_tool_name()));
	if (!profile_npcs(e->p))
		put_mapping(e, o->name ? o->name : "oobprof");
}

static void put_strings(struct enc *e)
{
	for (size_t i = 0; i < e->st.n; i++) {
		export_pb_bytes(&e->out.buf, P_STRING_TABLE, e->st.v[i], strlen(e->st.v[i]));
		export_pb_gz_flush(&e->out);
	}
}

int export_pprof(const struct profile *p, struct evlog *ev, const struct export_opts *o, FILE *out,
		 struct oob_err *err)
{
	struct enc e = {.p = p, .cycles = profile_has_cycles(p)};
	const struct profile_node *root = profile_node(p, 0);
	if (root->self_insns || root->self_cycles)
		e.unknown_id = (uint32_t)profile_nframes(p) + 1;
	if (export_pb_gz_init(&e.out, out) < 0)
		return oob_err_set(err, -ENOMEM, "pprof export: zlib cannot start");
	oob_map_init(&e.st.idx, 2 * profile_nframes(p) + 16);
	put_header(&e, o);
	index_processes(&e);
	int rc = 0;
	if (profile_npcs(p)) {
		put_pc_profile(&e);
	} else {
		put_frames(&e);
		rc = put_samples(&e, ev, err);
	}
	put_strings(&e);
	if (export_pb_gz_finish(&e.out) < 0 && rc == 0)
		rc = oob_err_set(err, -EIO, "pprof export: zlib failed");
	free(e.proc_of);
	oob_map_destroy(&e.st.idx);
	free(e.st.v);
	export_pb_free(&e.tmp);
	export_pb_free(&e.ids);
	export_pb_free(&e.vals);
	return rc;
}
