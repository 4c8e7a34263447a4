/*
 * trace_split's insides, shared by its TracerV part (trace_split.c) and its
 * oobt part (trace_split_oobt.c). Not for other modules.
 */
#ifndef OOB_TRACE_SPLIT_IMPL_H
#define OOB_TRACE_SPLIT_IMPL_H

#include "trace/oobt.h"
#include "trace/trace_split.h"
#include "trace/trace_impl.h"

struct split_frame {
	uint64_t zoff, zlen; /* compressed bytes in the file */
	uint64_t doff, dlen; /* its content in the decompressed stream */
	int sync;	     /* oobt: a sync mark before it: its content starts with SYNC */
	uint64_t first;	     /* oobt: records before the sync point */
};

struct split_piece {
	uint64_t off, len; /* raw: bytes of whole records; LZ4: compressed bytes */
	size_t f0, nf;	   /* LZ4: its frames */
	uint64_t skip;	   /* LZ4: content bytes before its first record */
	uint64_t nrec;	   /* records (of rec_bytes) in it */
	uint64_t first;	   /* oobt: records before it */
	uint64_t dlen;	   /* oobt: its frames' content */
};

struct trace_split {
	char *name;
	int fd; /* read, not mapped: see split_read_at */
	uint64_t size;
	struct trace_tracerv_layout lay;
	uint16_t hart;
	int lz4;
	uint64_t data_off; /* TracerV: decompressed offset of the first record;
			    * oobt: file offset of the body's first frame */
	struct split_frame *f;
	size_t nf, fcap;
	struct split_piece *p;
	size_t np, pcap;
	/* oobt */
	int oobt;
	uint8_t hdr[OOBT_HEADER_SIZE]; /* the file's header, for a plain body */
	struct trace_opts topts;       /* the readers' options */
	uint64_t mark_sync;	       /* records of the sync mark just read, +1 */
	int mark_end;		       /* the trailer was read */
	uint64_t total;		       /* the trailer's records */
};

/* Little-endian fields of LZ4 frame headers and oobt's marks. */
static inline uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

int split_nosplit(struct oob_err *err, const char *path, const char *why);
/* n bytes at off into buf: 0 or a negative errno naming the byte. */
int split_read_at(const struct trace_split *s, uint8_t *buf, size_t n, uint64_t off,
		  struct oob_err *err);
struct split_piece *split_piece_add(struct trace_split *s);
/* Frame k's content into dst (its dlen bytes; cap >= dlen, and liblz4
 * decodes in place, without a copy, when cap leaves room for its largest
 * block): 0 or a negative errno. */
int split_inflate(const struct trace_split *s, struct trace_split_cur *c, size_t k, uint8_t *dst,
		  size_t cap, struct oob_err *err);

/* oobt (trace_split_oobt.c): the header (0, or -ENOTSUP without sync
 * points); a skippable frame of the body at z, of n content bytes (a mark
 * or not); after the frame walk, whether the file can be cut; the cut
 * (-ENOTSUP when its pieces would be over four times want_records); the next
 * batch of a cursor. */
int split_oobt_probe(struct trace_split *s, const struct trace_opts *opts, struct oob_err *err);
int split_oobt_skippable(struct trace_split *s, uint64_t z, uint32_t n, struct oob_err *err);
int split_oobt_check(struct trace_split *s, struct oob_err *err);
int split_oobt_cut(struct trace_split *s, uint64_t want_records, struct oob_err *err);
long split_oobt_next(const struct trace_split *s, struct trace_split_cur *c, struct oob_err *err);

#endif
