/*
 * in: a buffered byte source over a file descriptor that transparently
 * decompresses an LZ4 frame (magic 04 22 4D 18) and can follow a file that is
 * still being written (a streamed upload).
 *
 * Readers never load a whole file: they peek and consume through a window of
 * at least IN_WINDOW bytes. Offsets reported in errors are offsets in the
 * *decompressed* stream, which is what a person can check with `lz4 -d | xxd`
 * (LZ4 errors name the compressed offset too).
 *
 * With in_opts.threads > 1, LZ4 frames are decompressed ahead on that many
 * threads (lz4par.h), which read the fd (or the stream under a sub-stream)
 * until in_close.
 *
 * Not thread-safe; one in_stream per reader.
 */
#ifndef OOB_IN_H
#define OOB_IN_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"

#define IN_WINDOW (1u << 20)
/* Bytes after a window returned by in_peek that may be read (their contents
 * are unspecified): a decoder may over-read by a bounded amount and check the
 * position afterwards instead of before every byte. */
#define IN_PAD 256

/* For a growing file: called when read() hits end of file. Return 1 if more
 * bytes may still arrive (the stream is open; the callee may sleep briefly
 * first), 0 if the file is complete, negative errno to abort (cancel). */
typedef int (*in_more_fn)(void *ctx);

struct in_opts {
	in_more_fn more; /* NULL: end of file is the end */
	void *more_ctx;
	uint64_t max_bytes; /* decompressed-size cap, 0 = none; over it -> -EFBIG */
	/* The source may end inside a record (an upload cut short): a reader
	 * drops a cut last record and counts it (in_cut_tail) instead of
	 * failing. A complete file's last record must be whole. */
	int tail_may_be_cut;
	/* LZ4 input: decompress on this many threads (lz4par.h) when > 1, the
	 * stream is complete (no more, no cut tail) and its frames declare
	 * their sizes (as our writers' do); else, and by default, in the
	 * caller's thread. The result is the same bytes either way. */
	unsigned threads;
};

struct in_stream;

/* Opens path (read-only). opts may be NULL. Returns NULL and fills err on failure. */
struct in_stream *in_open(const char *path, const struct in_opts *opts, struct oob_err *err);
/* Takes ownership of fd. name is used in error messages. */
struct in_stream *in_open_fd(int fd, const char *name, const struct in_opts *opts,
			     struct oob_err *err);
/* Wraps a memory buffer (borrowed; must outlive the stream). For tests and fuzzers. */
struct in_stream *in_open_mem(const void *buf, size_t n, const char *name, struct oob_err *err);
/* Plain bytes read where they are, not copied (a piece of a trace that a
 * thread decompressed: trace_split): buf is borrowed, must have IN_PAD
 * readable bytes after its n, and in_getline writes its NULs into it.
 * Never fails. */
struct in_stream *in_open_mem_in_place(uint8_t *buf, size_t n, const char *name);
/* A stream whose raw bytes are the rest of `under` (borrowed: close this one
 * first). lz4: 1 = they are LZ4 frames, 0 = plain, -1 = detect by magic. Used
 * for a compressed body after a plain header (oobt). opts->more is ignored
 * (under follows its file itself). */
struct in_stream *in_open_sub(struct in_stream *under, const char *name, int lz4,
			      const struct in_opts *opts, struct oob_err *err);
void in_close(struct in_stream *s);

/*
 * Makes up to want bytes (want <= IN_WINDOW; larger is treated as IN_WINDOW)
 * available at *p without consuming them. Returns the number available (less
 * than want only at end of stream; 0 at end) or a negative errno (I/O error,
 * corrupt or truncated LZ4 frame, cap exceeded, more() said cancel). Errors are
 * sticky. The bytes stay valid until the next call on s; IN_PAD bytes after
 * them are readable.
 */
long in_peek(struct in_stream *s, const uint8_t **p, size_t want, struct oob_err *err);
/* Consumes n bytes that a previous in_peek made available. */
void in_consume(struct in_stream *s, size_t n);

/* Reads one line (without its '\n' or '\r\n'; a final line without '\n'
 * counts). Returns its length, 0 for an empty line, -1 at end of stream (no
 * line), or a negative errno < -1. *line is NUL-terminated and valid until the
 * next call (it may contain NUL bytes of its own: trust the length). Lines
 * longer than IN_WINDOW are an -EINVAL error naming the line number. */
long in_getline(struct in_stream *s, const char **line, struct oob_err *err);

/* Offset of the next unconsumed byte in the decompressed stream. */
uint64_t in_offset(const struct in_stream *s);
/* 1-based number of the line in_getline returned last. */
uint64_t in_lineno(const struct in_stream *s);
/* 1 if the line in_getline returned last ended the stream without its '\n':
 * the last line of a complete file whose writer left it out, or a record cut
 * short (the format's reader tells which: trace_line_cut). */
int in_line_unterminated(const struct in_stream *s);
/* With in_opts.tail_may_be_cut: notes that the stream ended inside a record
 * (or an LZ4 frame), which is dropped; returns 1. Without it: 0 (the caller
 * fails). */
int in_drop_cut_tail(struct in_stream *s);
/* How many cut records were dropped (in_drop_cut_tail; a sub-stream's
 * count its underlying stream's too), 0 if none. */
uint64_t in_cut_tail(const struct in_stream *s);
/* Offset in the decompressed stream of that line's first byte. */
uint64_t in_line_offset(const struct in_stream *s);
/* Raw (possibly compressed) bytes read from the fd so far: progress reporting. */
uint64_t in_raw_bytes(const struct in_stream *s);
/* The first bytes of an LZ4 frame (LZ4F_MAGICNUMBER, little-endian): the one
 * spelling of it for every module that tells LZ4 data from plain data. */
#define IN_LZ4_MAGIC	 "\x04\x22\x4d\x18"
#define IN_LZ4_MAGIC_LEN 4

/* 1 if the source is LZ4 framed. */
int in_is_lz4(const struct in_stream *s);
const char *in_name(const struct in_stream *s);

#endif
