/*
 * lz4par: LZ4 frames decompressed on several threads, delivered in order.
 *
 * A reader thread pulls the compressed bytes (through the caller's read
 * function), finds the frames by their headers and block sizes (the frame
 * layout, not the compression: liblz4 does all decompression and checking)
 * and hands each frame that declares its content size (at most
 * LZ4PAR_FRAME_MAX) to a worker, which decompresses it whole with its own
 * LZ4F context, checksums included. Frames without a content size (one
 * frame for a whole file, as `lz4` writes) cannot be cut up: they are
 * passed on as compressed chunks and decompressed by the consumer in order,
 * i.e. sequentially. Our writers (trace_write) emit frames of at most
 * 4 MiB of content with the size declared, so their files parallelize.
 *
 * Memory is bounded: at most 2 * threads + 2 frames are in flight (read,
 * being decompressed or waiting for the consumer).
 *
 * Errors name the compressed byte offset of the frame or block at fault and
 * the decompressed offset where its content starts. The first error ends
 * the stream; everything before it is delivered first.
 *
 * The consumer side (lz4par_next) is used by one thread; the read function
 * is called on the reader thread only.
 */
#ifndef OOB_LZ4PAR_H
#define OOB_LZ4PAR_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"

#define LZ4PAR_FRAME_MAX (64u << 20)

/* Reads up to n compressed bytes into dst: count, 0 at the end, or a
 * negative errno with err filled. */
typedef long (*lz4par_read_fn)(void *ctx, uint8_t *dst, size_t n, struct oob_err *err);

struct lz4par;

/* Starts the reader and threads workers (1..64). first/nfirst: compressed
 * bytes the caller has already read (copied). name is for messages. NULL on
 * failure (threads cannot start), err filled. */
struct lz4par *lz4par_new(unsigned threads, lz4par_read_fn rd, void *ctx, const uint8_t *first,
			  size_t nfirst, const char *name, struct oob_err *err);
/* Stops the threads (even mid-stream) and frees everything. NULL is a no-op. */
void lz4par_free(struct lz4par *p);

/* The next decompressed bytes in order: returns their count with *out
 * pointing at them (valid until the next call), 0 at the end of the
 * stream, or a negative errno with err filled (corrupt data: -EINVAL;
 * truncated: -EPIPE, so that a caller that accepts a cut tail can tell). */
long lz4par_next(struct lz4par *p, const uint8_t **out, struct oob_err *err);

#endif
