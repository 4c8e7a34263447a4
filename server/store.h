/*
 * store: the content-addressed blob store of the data folder.
 *
 *   DATA/blobs/sha256/ab/cdef...   one file per distinct content (SHA-256)
 *   DATA/tmp/                      bodies being received (removed at start-up)
 *   DATA/streams/<name>            streamed uploads, readable while they grow
 *
 * An upload streams into a writer: a temporary file, hashed on the way with
 * nettle's SHA-256 (never whole in memory). store_writer_finish flushes and
 * fsyncs it; the caller may then read the temporary file to validate it;
 * store_writer_commit renames it into its content address and fsyncs the
 * directories, so that a blob that has a name is complete and durable. Only
 * after that does the caller register it in the catalog: a crash at any point
 * leaves either nothing visible or a complete blob (at worst one that no
 * catalog row names, which a later upload of the same content reuses).
 *
 * Paths handed out are relative to the data folder ("blobs/sha256/...") so
 * the folder can move; store_abspath makes them absolute. Every path is built
 * from a hash or a server-chosen name, never from client input.
 *
 * Thread-safety: a struct store is immutable after store_open and may be
 * shared; a writer belongs to one thread at a time.
 */
#ifndef OOB_STORE_H
#define OOB_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"

#define STORE_SHA256_HEX 65 /* 64 hex digits + NUL */
#define STORE_REL_MAX	 128

struct store;
struct store_writer;

struct store_blob {
	char sha256[STORE_SHA256_HEX];
	char rel[STORE_REL_MAX]; /* "blobs/sha256/ab/cdef..." */
	uint64_t size;
	int existed; /* 1 if the same content was already stored */
};

/* Opens (creating the folders if needed) the store under dir and empties its
 * tmp/ folder. NULL + err (-EACCES, -ENOTDIR, ...) on failure. */
struct store *store_open(const char *dir, struct oob_err *err);
/* The same for a data folder that several nodes share (NFS): the node's
 * uploads are received in DATA/tmp/node-<node>/, and only that folder is
 * emptied (other nodes' bodies in flight are theirs). Blobs need nothing
 * more: a content address is written by rename of a complete, fsynced
 * file, so two nodes storing the same content at once leave one blob. */
struct store *store_open_node(const char *dir, const char *node, struct oob_err *err);
/* The store another process opened at root (absolute, as store_root gave
 * it), without its start-up cleaning: a job's own process works in it while
 * the server runs. */
struct store *store_attach(const char *root, struct oob_err *err);
void store_free(struct store *s);
/* The data folder as given to store_open (borrowed). */
const char *store_root(const struct store *s);
/* Writes "<root>/<rel>" into buf; -ENAMETOOLONG if it does not fit. */
int store_abspath(const struct store *s, const char *rel, char *buf, size_t n);

/* A writer over a new temporary file. NULL + err on failure. */
struct store_writer *store_writer_new(struct store *s, struct oob_err *err);
/*
 * A writer over DATA/streams/<name>, written through at once (no buffering)
 * so that a job can follow the file while it grows. name is chosen by the
 * server (e.g. "trace-12"); it must match [A-Za-z0-9._-]+ (-EINVAL).
 */
struct store_writer *store_writer_new_stream(struct store *s, const char *name,
					     struct oob_err *err);
/*
 * A finished writer over the stream file DATA/<rel> ("streams/<name>") that
 * a server which stopped mid-upload left behind: its bytes are hashed as
 * they are, so that store_writer_commit keeps them as a blob. -ENOENT if
 * the file is gone.
 */
struct store_writer *store_writer_adopt_stream(struct store *s, const char *rel,
					       struct oob_err *err);
/* Appends n bytes. -EIO/-ENOSPC on failure (the writer stays abortable). */
int store_writer_write(struct store_writer *w, const void *p, size_t n, struct oob_err *err);
uint64_t store_writer_size(const struct store_writer *w);
/* Relative path of the file being written (the stream file for streams). */
const char *store_writer_rel(const struct store_writer *w);
/* Flushes, fsyncs and computes the digest; after it, write is refused. */
int store_writer_finish(struct store_writer *w, struct oob_err *err);
/* Lower-case hex SHA-256 of everything written; valid after finish. */
const char *store_writer_sha256(const struct store_writer *w);
/*
 * Gives the finished content its address and frees w (also on error). A
 * temporary file is renamed (or dropped when the blob exists); a stream file
 * is hard-linked so that its streams/ path stays valid for readers that
 * already hold it: remove it with store_remove once nobody needs that name.
 */
int store_writer_commit(struct store_writer *w, struct store_blob *out, struct oob_err *err);
/* Removes the file being written and frees w; NULL is fine. */
void store_writer_abort(struct store_writer *w);

/* Unlinks DATA/<rel> (ENOENT is not an error). */
int store_remove(struct store *s, const char *rel, struct oob_err *err);

/* Writes data to DATA/<rel> atomically: temporary file, fsync, rename, fsync
 * of the folder, creating the folder if needed. */
int store_put_file(struct store *s, const char *rel, const void *data, size_t n,
		   struct oob_err *err);

/*
 * For a result file written by other means (a log that grows as a job runs):
 * a temporary path beside DATA/<rel> into buf, its folder created if needed,
 * then store_install makes it DATA/<rel> as store_put_file would (fsync,
 * rename, fsync of the folder; the temporary file removed on failure). A
 * crash in between leaves a temporary file that store_open removes.
 */
int store_temp_path(struct store *s, const char *rel, char *buf, size_t n, struct oob_err *err);
int store_install(struct store *s, const char *tmp, const char *rel, struct oob_err *err);

/* Makes DATA/<rel> (one level below an existing folder) exist. */
int store_mkdir(struct store *s, const char *rel, struct oob_err *err);
/* Removes the folder DATA/<rel> and the files directly in it. */
int store_rmdir(struct store *s, const char *rel, struct oob_err *err);

/* fsyncs a folder, so that a rename or unlink inside it is durable. */
int store_fsync_dir(const char *path, struct oob_err *err);

#endif
