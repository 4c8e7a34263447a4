/*
 * oobt: constants of the oobt format (docs/formats/OOBT.md) and its encoder.
 *
 * The encoder turns batches into the uncompressed operation stream; the caller
 * (trace_write.c) frames it with LZ4 and writes the file. The decoder lives in
 * trace_oobt.c. This module depends on oob_err and oob_mem only, so that a
 * standalone writer (the QEMU plugin) can compile it without the rest of the
 * library. Not thread-safe: one encoder per writer.
 */
#ifndef OOB_OOBT_H
#define OOB_OOBT_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"
#include "trace/trace.h"

#define OOBT_MAGIC	     "\x89OOBT\r\n\x1a"
#define OOBT_MAGIC_LEN	     8
#define OOBT_VERSION	     2 /* 2: SYNC and the LZ4 body's sync markers */
#define OOBT_HEADER_SIZE     48
#define OOBT_HEADER_MAX	     4096
#define OOBT_ICACHE_DEFAULT  16
#define OOBT_ICACHE_MIN	     8
#define OOBT_ICACHE_MAX	     24
#define OOBT_X_PER_RECORD    1024	  /* extras pending for one record */
#define OOBT_TEXT_PER_RECORD (256 * 1024) /* event text pending for one record */
#define OOBT_EVENT_MAX	     65536	  /* bytes of one EVENT */
#define OOBT_SYNC_RECORDS    (8u << 20)	  /* our writer's sync points, at most this far apart */
/* A sync point's skippable LZ4 frame, before the frame that starts with
 * SYNC, and the trailer after the last frame (docs/formats/OOBT.md) */
#define OOBT_MARK_MAGIC 0x184D2A5Bu
#define OOBT_MARK_SIZE	16 /* content: tag, u64 records, u16 hart, u16 zero */
#define OOBT_MARK_SYNC	"OOBS"
#define OOBT_MARK_END	"OOBE"
#define OOBT_MANY_HARTS 0xffffu /* a mark's hart when several wrote records */

enum oobt_comp { OOBT_COMP_NONE = 0, OOBT_COMP_LZ4 = 1 };

enum oobt_op {
	OOBT_OP_INVALID = 0x00,
	OOBT_OP_NOP = 0x01,
	/* 0x02..0x7f RUN, 0x80..0xbf SHORT JUMP */
	OOBT_OP_SJUMP = 0x80,
	OOBT_OP_JUMP = 0xc0,
	OOBT_OP_INSN16 = 0xc1,
	OOBT_OP_INSN32 = 0xc2,
	OOBT_OP_HART = 0xc3,
	OOBT_OP_PRIV = 0xc4, /* ..0xc7 */
	OOBT_OP_SYNC = 0xc8, /* version 2 */
	OOBT_OP_X_REG = 0xd0,
	OOBT_OP_X_FREG = 0xd1,
	OOBT_OP_X_CSR = 0xd2,
	OOBT_OP_X_LOAD = 0xd3,
	OOBT_OP_X_STORE = 0xd4,
	OOBT_OP_X_TRAP = 0xd5,
	OOBT_OP_X_EVENT = 0xd6,
	OOBT_OP_X_ANY = 0xd7,
	OOBT_OP_END = 0xff,
};

struct oobt_header {
	uint16_t version;
	uint16_t header_size;
	uint32_t fields;    /* TRACE_F_* */
	uint64_t clock_num; /* base cycles = cycle * num / den */
	uint64_t clock_den;
	uint8_t compression; /* enum oobt_comp */
	uint8_t icache_log2;
	uint16_t source_format; /* enum trace_format */
};

/* Writes the 48-byte header. */
void oobt_header_encode(const struct oobt_header *h, uint8_t out[OOBT_HEADER_SIZE]);
/* Parses and checks a header from the first n bytes of a file. 0, or -EINVAL
 * with err saying which field is wrong (magic, version, size, cache, ratio). */
int oobt_header_decode(const uint8_t *p, size_t n, struct oobt_header *h, struct oob_err *err);

static inline uint64_t oobt_zz(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t oobt_unzz(uint64_t u)
{
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/* Appends a varint at p (room for 10 bytes needed); returns the end. */
static inline uint8_t *oobt_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

struct oobt_enc;

/* fields: TRACE_F_* the batches carry (stored ones only: the others are
 * ignored). icache_log2 0 = default. Never fails (aborts on OOM). */
struct oobt_enc *oobt_enc_new(unsigned fields, unsigned icache_log2);
void oobt_enc_free(struct oobt_enc *e);
unsigned oobt_enc_icache_log2(const struct oobt_enc *e);

/* Encodes a batch. -EINVAL with err if a record cannot be stored (priv > 3,
 * more than OOBT_X_PER_RECORD extras for one record, an event over
 * OOBT_EVENT_MAX, extras not sorted by idx or past n); the encoder is then
 * unusable. */
int oobt_enc_put(struct oobt_enc *e, const struct trace_batch *b, struct oob_err *err);
/* Flushes pending records and appends END. No put afterwards. */
void oobt_enc_finish(struct oobt_enc *e);
/* The encoded bytes not yet taken (borrowed until the next call), and taking
 * them. Callers drain after every put to keep the buffer small. */
const uint8_t *oobt_enc_data(const struct oobt_enc *e, size_t *n);
void oobt_enc_drain(struct oobt_enc *e);
/* Records encoded so far. */
uint64_t oobt_enc_records(const struct oobt_enc *e);
/* The hart every record so far was of, OOBT_MANY_HARTS when several were,
 * 0 before any. */
uint16_t oobt_enc_hart(const struct oobt_enc *e);
/* A sync point: appends SYNC (every hart's state, the records so far) and
 * forgets what later operations would refer to (the instruction cache, the
 * memory address), so that a decoder can start there. Returns the offset in
 * the data (oobt_enc_data) where SYNC starts: the bytes before it end the
 * stream before the sync point. */
size_t oobt_enc_sync(struct oobt_enc *e);
/* A mark's 8-byte skippable-frame header and content (OOBT_MARK_*). */
void oobt_mark_encode(const char tag[4], uint64_t records, uint16_t hart,
		      uint8_t out[8 + OOBT_MARK_SIZE]);

#endif
