/*
 * upload: what the server knows about uploads in flight. Two things:
 *
 * - a limit on simultaneous upload bodies (each holds a thread, a file and
 *   disk bandwidth): upload_begin refuses beyond it (-EBUSY, HTTP 503);
 * - the set of traces whose streamed upload (?stream=1) is still open, so
 *   that a job following such a trace knows whether to wait for more bytes
 *   (in_opts.more) or stop: upload_stream_wait blocks briefly until new
 *   bytes arrive or the stream closes.
 *
 * In memory only: after a restart no stream is open (the catalog marks those
 * traces "incomplete").
 *
 * Thread-safety: every function may be called from any thread.
 */
#ifndef OOB_UPLOAD_H
#define OOB_UPLOAD_H

#include <stdint.h>

struct upload_registry;

struct upload_registry *upload_registry_new(unsigned max_uploads);
/* Wakes every waiter (streams count as closed from then on) and frees. */
void upload_registry_free(struct upload_registry *u);

/* Takes an upload slot; -EBUSY when max_uploads are in flight. */
int upload_begin(struct upload_registry *u);
void upload_end(struct upload_registry *u);
unsigned upload_active(struct upload_registry *u);

/* Marks trace id's stream open / closed (closing wakes its followers). */
void upload_stream_open(struct upload_registry *u, int64_t id);
void upload_stream_close(struct upload_registry *u, int64_t id);
/* Bytes arrived on stream id: wakes its followers. */
void upload_stream_grew(struct upload_registry *u, int64_t id);
int upload_stream_is_open(struct upload_registry *u, int64_t id);
/* Waits up to ms milliseconds for stream id to grow or close. Returns 1 if it
 * is still open (more may come), 0 if it is closed. */
int upload_stream_wait(struct upload_registry *u, int64_t id, unsigned ms);

#endif
