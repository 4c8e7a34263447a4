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
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_impl.h"
#include "export/export_pb.h"
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

/* One sample per calling context with any weight: its stack leaf first. */
static void put_samples(struct enc *e)
{
	const struct profile *p = e->p;
	for (uint32_t i = 0; i < profile_nnodes(p); i++) {
		const struct profile_node *n = profile_node(p, i);
		if (!n->self_insns && !n->self_cycles && !n->calls)
			continue;
		for (uint32_t x = i; x != 0; x = profile_node(p, x)->parent)
			export_pb_varint(&e->ids, profile_node(p, x)->frame + 1);
		if (i == 0)
			export_pb_varint(&e->ids, e->unknown_id);
		export_pb_varint(&e->vals, n->self_insns);
		if (e->cycles)
			export_pb_varint(&e->vals, n->self_cycles);
		export_pb_varint(&e->vals, n->calls);
		export_pb_bytes(&e->tmp, 1, e->ids.p, e->ids.n);
		export_pb_bytes(&e->tmp, 2, e->vals.p, e->vals.n);
		e->ids.n = e->vals.n = 0;
		put_msg(e, P_SAMPLE, &e->tmp);
	}
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
	put_mapping(e, o->name ? o->name : "oobprof");
}

static void put_strings(struct enc *e)
{
	for (size_t i = 0; i < e->st.n; i++) {
		export_pb_bytes(&e->out.buf, P_STRING_TABLE, e->st.v[i], strlen(e->st.v[i]));
		export_pb_gz_flush(&e->out);
	}
}

int export_pprof(const struct profile *p, const struct export_opts *o, FILE *out,
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
	put_frames(&e);
	put_samples(&e);
	put_strings(&e);
	int rc = export_pb_gz_finish(&e.out) < 0
		     ? oob_err_set(err, -EIO, "pprof export: zlib failed")
		     : 0;
	oob_map_destroy(&e.st.idx);
	free(e.st.v);
	export_pb_free(&e.tmp);
	export_pb_free(&e.ids);
	export_pb_free(&e.vals);
	return rc;
}
