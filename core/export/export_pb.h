/*
 * export_pb: a protobuf encoder and a gzip stream, what the protobuf exports
 * (pprof's profile.proto, Perfetto's trace) share.
 *
 * A protobuf message is a sequence of (field key, value) pairs that may come
 * in any order, and two encoded messages concatenated are one message with
 * both sets of fields. So a large message (a pprof profile, a Perfetto Trace
 * of millions of packets) is written one top-level field at a time into a
 * buffer that goes through zlib's gzip deflate whenever it fills: memory
 * stays at one field, however long the output.
 *
 * Not thread-safe; one encoder per export.
 */
#ifndef OOB_EXPORT_PB_H
#define OOB_EXPORT_PB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <zlib.h>

/* A growing buffer of encoded fields; {0} is an empty one. */
struct export_pb {
	uint8_t *p;
	size_t n, cap;
};

void export_pb_raw(struct export_pb *b, const void *d, size_t n);
void export_pb_varint(struct export_pb *b, uint64_t v);
/* A varint field; zero is the default and is left out. */
void export_pb_uint(struct export_pb *b, unsigned field, uint64_t v);
/* A varint field written even when zero (proto2 optional fields whose
 * presence matters: a pid 0, a timestamp 0). */
void export_pb_uint_set(struct export_pb *b, unsigned field, uint64_t v);
/* A length-delimited field (bytes, string, embedded message). */
void export_pb_bytes(struct export_pb *b, unsigned field, const void *d, size_t n);
void export_pb_str(struct export_pb *b, unsigned field, const char *s);
/* The message m as field of b; m is emptied for reuse. */
void export_pb_msg(struct export_pb *b, unsigned field, struct export_pb *m);
void export_pb_free(struct export_pb *b);

/* A gzip stream to a FILE: fields are encoded into buf, then
 * export_pb_gz_flush passes them on. */
struct export_pb_gz {
	FILE *f;
	z_stream z;
	struct export_pb buf;
	int zerr;
};

/* Starts a gzip stream (deflateInit2, windowBits 15 + 16) to f. -ENOMEM
 * when zlib cannot start. */
int export_pb_gz_init(struct export_pb_gz *g, FILE *f);
/* Compresses buf once it holds enough to be worth it (256 KiB). */
void export_pb_gz_flush(struct export_pb_gz *g);
/* Compresses what is left, ends the stream and frees the encoder. 0, or
 * -EIO when zlib failed (write errors are left in f's error flag). */
int export_pb_gz_finish(struct export_pb_gz *g);

#endif
