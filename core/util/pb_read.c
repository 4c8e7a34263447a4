#include "util/pb_read.h"

#include <errno.h>

void pb_read_init(struct pb_read *r, const void *buf, size_t n)
{
	r->p = r->origin = buf;
	r->end = r->p + n;
}

int pb_read_more(const struct pb_read *r)
{
	return r->p < r->end;
}

size_t pb_read_offset(const struct pb_read *r)
{
	return (size_t)(r->p - r->origin);
}

int pb_read_varint(struct pb_read *r, uint64_t *v, struct oob_err *err)
{
	uint64_t x = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			return oob_err_set(err, -EINVAL, "byte %zu: varint cut by the end",
					   pb_read_offset(r));
		uint8_t b = *r->p++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return oob_err_set(err, -EINVAL, "byte %zu: varint longer than 10 bytes",
			   pb_read_offset(r));
}

int pb_read_key(struct pb_read *r, uint32_t *field, enum pb_wire *wire, struct oob_err *err)
{
	size_t at = pb_read_offset(r);
	uint64_t k;
	int rc = pb_read_varint(r, &k, err);
	if (rc < 0)
		return rc;
	unsigned w = (unsigned)(k & 7);
	if ((k >> 3) == 0 || (k >> 3) > UINT32_MAX ||
	    (w != PB_VARINT && w != PB_I64 && w != PB_LEN && w != PB_I32))
		return oob_err_set(err, -EINVAL, "byte %zu: bad field key 0x%llx", at,
				   (unsigned long long)k);
	*field = (uint32_t)(k >> 3);
	*wire = (enum pb_wire)w;
	return 0;
}

int pb_read_len(struct pb_read *r, struct pb_read *sub, struct oob_err *err)
{
	uint64_t n;
	int rc = pb_read_varint(r, &n, err);
	if (rc < 0)
		return rc;
	if (n > (uint64_t)(r->end - r->p))
		return oob_err_set(err, -EINVAL, "byte %zu: length %llu runs past the end",
				   pb_read_offset(r), (unsigned long long)n);
	sub->origin = r->origin;
	sub->p = r->p;
	sub->end = r->p + n;
	r->p += n;
	return 0;
}

int pb_read_skip(struct pb_read *r, enum pb_wire wire, struct oob_err *err)
{
	uint64_t v;
	struct pb_read sub;
	size_t k = wire == PB_I64 ? 8 : 4;
	switch (wire) {
	case PB_VARINT:
		return pb_read_varint(r, &v, err);
	case PB_LEN:
		return pb_read_len(r, &sub, err);
	case PB_I64:
	case PB_I32:
		if ((size_t)(r->end - r->p) < k)
			return oob_err_set(err, -EINVAL, "byte %zu: fixed field cut by the end",
					   pb_read_offset(r));
		r->p += k;
		return 0;
	}
	return oob_err_set(err, -EINVAL, "byte %zu: bad wire type", pb_read_offset(r));
}

int pb_read_scalars(struct pb_read *r, const uint32_t *fields, uint64_t *v, size_t n,
		    struct oob_err *err)
{
	uint32_t f;
	enum pb_wire w;
	int rc;
	while (pb_read_more(r)) {
		if ((rc = pb_read_key(r, &f, &w, err)) < 0)
			return rc;
		size_t i = 0;
		while (i < n && !(fields[i] == f && w == PB_VARINT))
			i++;
		rc = i < n ? pb_read_varint(r, &v[i], err) : pb_read_skip(r, w, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int pb_read_varints(struct pb_read *r, enum pb_wire wire, int (*fn)(void *ctx, uint64_t v),
		    void *ctx, struct oob_err *err)
{
	uint64_t v;
	int rc;
	if (wire == PB_VARINT)
		return (rc = pb_read_varint(r, &v, err)) < 0 ? rc : fn(ctx, v);
	if (wire != PB_LEN)
		return oob_err_set(err, -EINVAL, "byte %zu: a repeated varint of wire type %d",
				   pb_read_offset(r), (int)wire);
	struct pb_read sub;
	if ((rc = pb_read_len(r, &sub, err)) < 0)
		return rc;
	while (pb_read_more(&sub))
		if ((rc = pb_read_varint(&sub, &v, err)) < 0 || (rc = fn(ctx, v)) < 0)
			return rc;
	return 0;
}
