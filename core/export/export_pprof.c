/*
 * pprof's profile.proto, gzipped. A protobuf message is a sequence of
 * (field key, value) pairs that may come in any order and be concatenated,
 * so the top-level fields are encoded one at a time and streamed through
 * zlib's gzip deflate: memory stays at one sample plus the string table,
 * however deep and wide the tree is.
 *
 * Ids: function i + 1 and location i + 1 for frame i; the root's own weight
 * (instructions before any frame was known) goes to an "[unknown]" function.
 * One mapping covers every address and says functions are resolved, so pprof
 * never tries to symbolize the addresses itself.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "export/export_impl.h"
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

#define FLUSH_AT (256 * 1024)

struct pb {
	uint8_t *p;
	size_t n, cap;
};

static void pb_raw(struct pb *b, const void *d, size_t n)
{
	oob_xgrow((void **)&b->p, &b->cap, b->n + n, 1);
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;
	while (v >= 0x80) {
		t[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	t[n++] = (uint8_t)v;
	pb_raw(b, t, n);
}

/* A varint field; zero is the default and is left out. */
static void pb_uint(struct pb *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

static void pb_bytes(struct pb *b, unsigned field, const void *d, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_raw(b, d, n);
}

/* ---- the gzip stream ---- */

struct out {
	FILE *f;
	z_stream z;
	struct pb buf;
	int zerr;
};

static void deflate_to(struct out *o, int flush)
{
	uint8_t chunk[64 * 1024];
	o->z.next_in = o->buf.p;
	o->z.avail_in = (uInt)o->buf.n;
	do {
		o->z.next_out = chunk;
		o->z.avail_out = sizeof(chunk);
		int rc = deflate(&o->z, flush);
		if (rc == Z_STREAM_ERROR)
			o->zerr = 1;
		fwrite(chunk, 1, sizeof(chunk) - o->z.avail_out, o->f);
	} while (o->z.avail_out == 0 && !o->zerr);
	o->buf.n = 0;
}

static void maybe_flush(struct out *o)
{
	if (o->buf.n >= FLUSH_AT)
		deflate_to(o, Z_NO_FLUSH);
}

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
	struct out out;
	struct strtab st;
	struct pb tmp, ids, vals;
	int cycles;
	uint32_t unknown_id; /* function and location of the root's weight */
};

static void put_msg(struct enc *e, unsigned field, struct pb *m)
{
	pb_bytes(&e->out.buf, field, m->p, m->n);
	m->n = 0;
	maybe_flush(&e->out);
}

static void put_value_type(struct enc *e, unsigned field, const char *type, const char *unit)
{
	pb_uint(&e->tmp, 1, str_id(&e->st, type));
	pb_uint(&e->tmp, 2, str_id(&e->st, unit));
	put_msg(e, field, &e->tmp);
}

static void put_function(struct enc *e, uint64_t id, const char *name, const char *file,
			 uint32_t line)
{
	pb_uint(&e->tmp, 1, id);
	pb_uint(&e->tmp, 2, str_id(&e->st, name));
	pb_uint(&e->tmp, 3, str_id(&e->st, name));
	if (file)
		pb_uint(&e->tmp, 4, str_id(&e->st, file));
	pb_uint(&e->tmp, 5, line);
	put_msg(e, P_FUNCTION, &e->tmp);
}

static void put_location(struct enc *e, uint64_t id, uint64_t addr, uint32_t line)
{
	struct pb ln = {0};
	pb_uint(&ln, 1, id); /* function_id */
	pb_uint(&ln, 2, line);
	pb_uint(&e->tmp, 1, id);
	pb_uint(&e->tmp, 2, 1); /* mapping_id */
	pb_uint(&e->tmp, 3, addr);
	pb_bytes(&e->tmp, 4, ln.p, ln.n);
	free(ln.p);
	put_msg(e, P_LOCATION, &e->tmp);
}

static void put_mapping(struct enc *e, const char *name)
{
	pb_uint(&e->tmp, 1, 1);
	pb_uint(&e->tmp, 3, UINT64_MAX); /* memory_limit: every address */
	pb_uint(&e->tmp, 5, str_id(&e->st, name));
	pb_uint(&e->tmp, 7, 1); /* has_functions */
	pb_uint(&e->tmp, 8, 1); /* has_filenames */
	pb_uint(&e->tmp, 9, 1); /* has_line_numbers */
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
			pb_varint(&e->ids, profile_node(p, x)->frame + 1);
		if (i == 0)
			pb_varint(&e->ids, e->unknown_id);
		pb_varint(&e->vals, n->self_insns);
		if (e->cycles)
			pb_varint(&e->vals, n->self_cycles);
		pb_varint(&e->vals, n->calls);
		pb_bytes(&e->tmp, 1, e->ids.p, e->ids.n);
		pb_bytes(&e->tmp, 2, e->vals.p, e->vals.n);
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
	pb_uint(&e->out.buf, P_PERIOD, 1);
	pb_uint(&e->out.buf, P_DEFAULT_SAMPLE_TYPE, str_id(&e->st, profile_metric_name(m)));
	pb_uint(&e->out.buf, P_COMMENT, str_id(&e->st, export_tool_name()));
	put_mapping(e, o->name ? o->name : "oobprof");
}

static void put_strings(struct enc *e)
{
	for (size_t i = 0; i < e->st.n; i++) {
		pb_bytes(&e->out.buf, P_STRING_TABLE, e->st.v[i], strlen(e->st.v[i]));
		maybe_flush(&e->out);
	}
}

int export_pprof(const struct profile *p, const struct export_opts *o, FILE *out,
		 struct oob_err *err)
{
	struct enc e = {.p = p, .cycles = profile_has_cycles(p)};
	const struct profile_node *root = profile_node(p, 0);
	if (root->self_insns || root->self_cycles)
		e.unknown_id = (uint32_t)profile_nframes(p) + 1;
	e.out.f = out;
	if (deflateInit2(&e.out.z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return oob_err_set(err, -ENOMEM, "pprof export: zlib cannot start");
	oob_map_init(&e.st.idx, 2 * profile_nframes(p) + 16);
	put_header(&e, o);
	put_frames(&e);
	put_samples(&e);
	put_strings(&e);
	deflate_to(&e.out, Z_FINISH);
	deflateEnd(&e.out.z);
	int rc = e.out.zerr ? oob_err_set(err, -EIO, "pprof export: zlib failed") : 0;
	oob_map_destroy(&e.st.idx);
	free(e.st.v);
	free(e.out.buf.p);
	free(e.tmp.p);
	free(e.ids.p);
	free(e.vals.p);
	return rc;
}
