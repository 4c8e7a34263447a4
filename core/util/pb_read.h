/*
 * pb_read: a protobuf wire-format decoder, the reading sibling of
 * export/export_pb's encoder (pprof profiles read back, sample/).
 *
 * A cursor over a borrowed buffer. Each call checks the bytes it needs
 * against the end, so truncated or corrupt input is an error, never an
 * over-read; errors say the byte offset from the start of the outermost
 * buffer. Groups (wire types 3 and 4, deprecated) are refused.
 *
 * Not thread-safe; a cursor per message.
 */
#ifndef OOB_PB_READ_H
#define OOB_PB_READ_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"

enum pb_wire { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };

struct pb_read {
	const uint8_t *p, *end;
	const uint8_t *origin; /* start of the outermost buffer, for offsets */
};

/* A cursor over buf[0..n) (borrowed). */
void pb_read_init(struct pb_read *r, const void *buf, size_t n);
/* 1 while bytes are left. */
int pb_read_more(const struct pb_read *r);
/* Reads a field key: its number and wire type. 0, or -EINVAL (bad varint,
 * field 0, a group or an unknown wire type) naming the offset. */
int pb_read_key(struct pb_read *r, uint32_t *field, enum pb_wire *wire, struct oob_err *err);
/* A varint value. */
int pb_read_varint(struct pb_read *r, uint64_t *v, struct oob_err *err);
/* A length-delimited value: *sub is a cursor over its bytes (same origin). */
int pb_read_len(struct pb_read *r, struct pb_read *sub, struct oob_err *err);
/* Skips a value of the given wire type. */
int pb_read_skip(struct pb_read *r, enum pb_wire wire, struct oob_err *err);
/* A repeated varint field's values, packed (PB_LEN) or one (PB_VARINT):
 * calls fn(ctx, v) for each; stops at fn's first negative return. */
int pb_read_varints(struct pb_read *r, enum pb_wire wire, int (*fn)(void *ctx, uint64_t v),
		    void *ctx, struct oob_err *err);
/* A message of scalar varint fields (to its end): v[i] gets the last value
 * of field fields[i] (left as it was when absent); other fields are
 * skipped. */
int pb_read_scalars(struct pb_read *r, const uint32_t *fields, uint64_t *v, size_t n,
		    struct oob_err *err);
/* Byte offset of the cursor in the outermost buffer. */
size_t pb_read_offset(const struct pb_read *r);

#endif
