/*
 * sample_pprof: pprof's profile.proto (github.com/google/pprof, proto/
 * profile.proto) read into the sample builder. Two passes over the message:
 * the tables (strings, functions, locations) may come after the samples.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sample/sample_impl.h"
#include "util/oob_map.h"
#include "util/oob_mem.h"
#include "util/pb_read.h"

enum { P_SAMPLE_TYPE = 1, P_SAMPLE = 2, P_LOCATION = 4, P_FUNCTION = 5, P_STRING = 6 };
enum { P_DEFAULT_SAMPLE_TYPE = 14 };

struct pp_str {
	const char *s;
	size_t n;
};

struct pp_loc {
	uint64_t addr;
	uint64_t *funcs; /* function ids, line order (innermost first) */
	size_t n, cap;
};

struct pp {
	struct pp_str *str;
	size_t nstr, capstr;
	uint64_t *types; /* sample_type: the type's string index */
	size_t ntypes, captypes;
	uint64_t default_type;
	struct oob_map func_name; /* function id -> name string index */
	struct oob_map loc_index; /* location id -> index in locs */
	struct pp_loc *locs;
	size_t nlocs, caplocs;
};

static int field_err(struct pb_read *r, const char *what, struct oob_err *err)
{
	return oob_err_set(err, -EINVAL, "byte %zu: %s", pb_read_offset(r), what);
}

static int read_value_type(struct pp *pp, struct pb_read *m, struct oob_err *err)
{
	static const uint32_t fields[] = {1}; /* ValueType.type */
	uint64_t type = 0;
	int rc = pb_read_scalars(m, fields, &type, 1, err);
	if (rc < 0)
		return rc;
	oob_xgrow((void **)&pp->types, &pp->captypes, pp->ntypes + 1, sizeof(*pp->types));
	pp->types[pp->ntypes++] = type;
	return 0;
}

static int read_function(struct pp *pp, struct pb_read *m, struct oob_err *err)
{
	static const uint32_t fields[] = {1, 2}; /* Function.id, .name */
	uint64_t v[2] = {0, 0};
	int rc = pb_read_scalars(m, fields, v, 2, err);
	if (rc < 0)
		return rc;
	*oob_map_put(&pp->func_name, v[0], NULL) = v[1];
	return 0;
}

static int read_line(struct pp_loc *l, struct pb_read *m, struct oob_err *err)
{
	static const uint32_t fields[] = {1}; /* Line.function_id */
	uint64_t fid = 0;
	int rc = pb_read_scalars(m, fields, &fid, 1, err);
	if (rc < 0)
		return rc;
	oob_xgrow((void **)&l->funcs, &l->cap, l->n + 1, sizeof(*l->funcs));
	l->funcs[l->n++] = fid;
	return 0;
}

static int read_location(struct pp *pp, struct pb_read *m, struct oob_err *err)
{
	uint32_t f;
	enum pb_wire w;
	uint64_t id = 0;
	struct pp_loc l = {0};
	struct pb_read sub;
	int rc = 0;
	while (rc == 0 && pb_read_more(m)) {
		if ((rc = pb_read_key(m, &f, &w, err)) < 0)
			break;
		if (f == 1 && w == PB_VARINT)
			rc = pb_read_varint(m, &id, err);
		else if (f == 3 && w == PB_VARINT)
			rc = pb_read_varint(m, &l.addr, err);
		else if (f == 4 && w == PB_LEN)
			rc = pb_read_len(m, &sub, err) < 0 ? err->code : read_line(&l, &sub, err);
		else
			rc = pb_read_skip(m, w, err);
	}
	if (rc < 0) {
		free(l.funcs);
		return rc;
	}
	oob_xgrow((void **)&pp->locs, &pp->caplocs, pp->nlocs + 1, sizeof(*pp->locs));
	*oob_map_put(&pp->loc_index, id, NULL) = pp->nlocs;
	pp->locs[pp->nlocs++] = l;
	return 0;
}

/* Pass 1: every table; samples are left for pass 2. */
static int read_tables(struct pp *pp, const uint8_t *buf, size_t n, struct oob_err *err)
{
	struct pb_read r, sub;
	uint32_t f;
	enum pb_wire w;
	int rc = 0;
	pb_read_init(&r, buf, n);
	while (rc == 0 && pb_read_more(&r)) {
		if ((rc = pb_read_key(&r, &f, &w, err)) < 0)
			break;
		if (w != PB_LEN) {
			rc = f == P_DEFAULT_SAMPLE_TYPE && w == PB_VARINT
				 ? pb_read_varint(&r, &pp->default_type, err)
				 : pb_read_skip(&r, w, err);
			continue;
		}
		if ((rc = pb_read_len(&r, &sub, err)) < 0)
			break;
		if (f == P_STRING) {
			oob_xgrow((void **)&pp->str, &pp->capstr, pp->nstr + 1, sizeof(*pp->str));
			pp->str[pp->nstr++] =
			    (struct pp_str){(const char *)sub.p, (size_t)(sub.end - sub.p)};
		} else if (f == P_SAMPLE_TYPE) {
			rc = read_value_type(pp, &sub, err);
		} else if (f == P_FUNCTION) {
			rc = read_function(pp, &sub, err);
		} else if (f == P_LOCATION) {
			rc = read_location(pp, &sub, err);
		}
	}
	return rc;
}

static int str_is(const struct pp *pp, uint64_t i, const char *s)
{
	return i < pp->nstr && pp->str[i].n == strlen(s) && !memcmp(pp->str[i].s, s, pp->str[i].n);
}

/* Which value of a sample is its weight: the default sample type, else a
 * type called "samples", else the last (pprof's own default). */
static size_t weight_index(const struct pp *pp)
{
	for (size_t i = 0; pp->default_type && i < pp->ntypes; i++)
		if (pp->types[i] == pp->default_type)
			return i;
	for (size_t i = 0; i < pp->ntypes; i++)
		if (str_is(pp, pp->types[i], "samples"))
			return i;
	return pp->ntypes ? pp->ntypes - 1 : 0;
}

struct sample_acc {
	struct sample_builder *b;
	const struct pp *pp;
	size_t want, seen;
	uint64_t weight;
	struct pb_read *at;
	struct oob_err *err;
};

static int on_loc(void *ctx, uint64_t id)
{
	struct sample_acc *a = ctx;
	uint64_t *ix = oob_map_get(&a->pp->loc_index, id);
	if (!ix)
		return field_err(a->at, "sample names a location that is not in the profile",
				 a->err);
	const struct pp_loc *l = &a->pp->locs[*ix];
	if (!l->n) {
		sample_push_addr(a->b, l->addr, NULL, 0, NULL, 0);
		return 0;
	}
	for (size_t k = 0; k < l->n; k++) { /* line[0] is the innermost */
		uint64_t *name = oob_map_get(&a->pp->func_name, l->funcs[k]);
		const struct pp_str *s = name && *name < a->pp->nstr ? &a->pp->str[*name] : NULL;
		if (s && s->n)
			sample_push_name(a->b, s->s, s->n, PROFILE_FRAME_USER);
		else
			sample_push_addr(a->b, l->addr, NULL, 0, NULL, 0);
	}
	return 0;
}

static int on_value(void *ctx, uint64_t v)
{
	struct sample_acc *a = ctx;
	if (a->seen++ == a->want)
		a->weight = v;
	return 0;
}

static int read_sample(struct sample_acc *a, struct pb_read *m)
{
	uint32_t f;
	enum pb_wire w;
	int rc;
	a->seen = 0;
	a->weight = 0;
	a->at = m;
	while (pb_read_more(m)) {
		if ((rc = pb_read_key(m, &f, &w, a->err)) < 0)
			return rc;
		if (f == 1)
			rc = pb_read_varints(m, w, on_loc, a, a->err);
		else if (f == 2)
			rc = pb_read_varints(m, w, on_value, a, a->err);
		else
			rc = pb_read_skip(m, w, a->err);
		if (rc < 0)
			return rc;
	}
	if ((int64_t)a->weight < 0)
		return field_err(m, "negative sample value", a->err);
	sample_end(a->b, a->weight, SAMPLE_OK);
	return 0;
}

static int read_samples(struct sample_acc *a, const uint8_t *buf, size_t n)
{
	struct pb_read r, sub;
	uint32_t f;
	enum pb_wire w;
	int rc = 0;
	pb_read_init(&r, buf, n);
	while (rc == 0 && pb_read_more(&r)) {
		if ((rc = pb_read_key(&r, &f, &w, a->err)) < 0)
			break;
		if (f == P_SAMPLE && w == PB_LEN)
			rc =
			    pb_read_len(&r, &sub, a->err) < 0 ? a->err->code : read_sample(a, &sub);
		else
			rc = pb_read_skip(&r, w, a->err);
	}
	return rc;
}

int sample_read_pprof(struct sample_builder *b, const uint8_t *buf, size_t n, struct oob_err *err)
{
	struct pp pp = {0};
	oob_map_init(&pp.func_name, 64);
	oob_map_init(&pp.loc_index, 64);
	int rc = read_tables(&pp, buf, n, err);
	size_t wi = weight_index(&pp);
	struct sample_acc a = {.b = b, .pp = &pp, .want = wi, .err = err};
	if (rc == 0)
		rc = read_samples(&a, buf, n);
	/* Only a count of samples is a sampled profile; other weights (an exact
	 * profile's instructions, bytes) are the weights themselves. */
	if (rc == 0 && !(wi < pp.ntypes && (str_is(&pp, pp.types[wi], "samples") ||
					    str_is(&pp, pp.types[wi], "sample")))) {
		b->st.sampled = 0;
		b->st.instructions = b->st.samples;
		b->st.samples = 0;
	}
	for (size_t i = 0; i < pp.nlocs; i++)
		free(pp.locs[i].funcs);
	free(pp.locs);
	free(pp.str);
	free(pp.types);
	oob_map_destroy(&pp.func_name);
	oob_map_destroy(&pp.loc_index);
	return rc;
}
