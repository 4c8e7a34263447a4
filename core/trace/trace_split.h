/*
 * trace_split: one trace file cut into pieces that threads decode on their
 * own (RECONSTRUCTION.md 16), so that the thread that hands out the pieces
 * reads nothing.
 *
 * Only inputs whose records can be found without reading what comes before
 * them are cut:
 * - raw TracerV binary (fixed-size records after the header line): a
 *   piece is a range of whole records, read a batch at a time;
 * - TracerV binary in LZ4 frames that declare their content size (as
 *   trace_write writes them): a piece is a run of whole frames whose first
 *   byte of content starts a record; each piece's thread decompresses its
 *   own frames (liblz4, checksums included);
 * - oobt of one hart in LZ4 frames with sync points (version 2, as
 *   trace_write writes it: docs/formats/OOBT.md): a piece is a run of whole
 *   frames that starts at the body's start or at a sync point, read by an
 *   oobt reader of its own (trace_open_stream, trace_opts.oobt_piece).
 * Everything else (pipes, growing files, a size cap, a cut tail allowed,
 * other formats, one LZ4 frame for a whole file, a file whose records do
 * not fill its last bytes, oobt without sync points or its trailer, oobt
 * of several harts) is refused with -ENOTSUP and read sequentially with
 * trace.h.
 *
 * The file is read with pread, not mapped (trace_split.c says why): a file
 * that shrinks while it is open gives a read error, not SIGBUS.
 *
 * Thread-safety: after trace_split_open, every function may be called from
 * any thread at once, each with its own cursor.
 */
#ifndef OOB_TRACE_SPLIT_H
#define OOB_TRACE_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"
#include "trace/trace.h"

struct trace_split;

/* Opens path and lists its pieces of about records_per_piece records each.
 * NULL + err: -ENOTSUP when the input cannot be cut (above: read it
 * sequentially), else why it cannot be read. opts as for trace_open (may be
 * NULL). */
struct trace_split *trace_split_open(const char *path, const struct trace_opts *opts,
				     uint64_t records_per_piece, struct oob_err *err);
void trace_split_close(struct trace_split *s);
size_t trace_split_pieces(const struct trace_split *s);
/* The file's size in bytes (what a sequential read consumes). */
uint64_t trace_split_raw_bytes(const struct trace_split *s);
/* The raw bytes up to the end of piece k (progress). */
uint64_t trace_split_raw_end(const struct trace_split *s, size_t k);
/* The hart of every record (trace_opts.hart). */
uint16_t trace_split_hart(const struct trace_split *s);
/* The number of instruction slots before piece k: its first record's
 * number when every slot before it is valid (TracerV width 1 always has
 * them valid but for bubbles; oobt: exact), else an upper bound. */
uint64_t trace_split_first(const struct trace_split *s, size_t k);

/* A cursor over one piece, decoding a batch at a time into buffers that
 * stay in the cache (zero-initialize; trace_split_cur_free). */
struct trace_split_cur {
	size_t piece, frame; /* LZ4: the next frame of the piece to inflate */
	uint64_t off, end;   /* raw: the piece's bytes not read yet */
	const uint8_t *p;    /* whole or partial records not decoded yet */
	size_t left;
	uint64_t *pc, *cycle; /* TRACE_BATCH_MAX + slack of each */
	uint8_t *raw;	      /* one frame's content or read, and a partial record */
	size_t rawcap;
	uint8_t *z; /* LZ4: one frame as the file has it */
	size_t zcap;
	void *dctx;		 /* LZ4F_dctx */
	struct trace_reader *tr; /* oobt: the piece's reader */
	size_t loaded;		 /* oobt: raw holds the content of piece loaded - 1 */
	struct trace_batch b;	 /* what trace_split_cur_next gave (seq unset) */
};
/* Starts c at the first record of piece k. */
void trace_split_cur_start(const struct trace_split *s, size_t k, struct trace_split_cur *c);
/* The next records of the piece (at most TRACE_BATCH_MAX) in c->b (TracerV:
 * pc and cycle; oobt: what its reader gives, valid until the next call):
 * their count, 0 at the piece's end, or a negative errno with err naming
 * the file and the offset (corrupt LZ4 data, a bad operation). */
long trace_split_cur_next(const struct trace_split *s, struct trace_split_cur *c,
			  struct oob_err *err);
void trace_split_cur_free(struct trace_split_cur *c);

#endif
