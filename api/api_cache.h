/*
 * api_cache: loaded results (result.h) and the responses rendered from them
 * (a flame graph, folded stacks, a timeline, ...), shared by the requests
 * that read them, so that a flame graph polled by many clients is loaded and
 * built once.
 *
 * Entries are keyed by job id and validated against the result file's size
 * and modification time, so a partial result replaced by a newer snapshot or
 * by the final one is reloaded.
 *
 * Single flight: the first request for a result loads it, and the first for
 * a rendering (job, key) builds it; requests that come meanwhile wait for
 * that load or build (a condition variable) instead of doing it again, so
 * 64 concurrent requests cost one build, not 64. A build reports its
 * progress and may be answered for asynchronously (api_cache_serve).
 *
 * Memory: bounded by bytes, least recently used first. An entry weighs its
 * result file's size (the loaded result is of the same order) plus its
 * renderings; beyond the budget (api_cache_new) whole entries are dropped
 * from the table, and freed once the last request holding them is done. A
 * rendering is an immutable refcounted body sent without a copy, so
 * concurrent responses share one buffer. At most API_CACHE_SLOTS results
 * and API_CACHE_RENDERED renderings per result are kept.
 *
 * Thread-safety: all functions may be called from any thread. Loads and
 * builds run outside the lock, so a slow one never blocks hits on others.
 */
#ifndef OOB_API_CACHE_H
#define OOB_API_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"
#include "util/oob_progress.h"
#include "http.h"
#include "result.h"

#define API_CACHE_SLOTS	   64
#define API_CACHE_RENDERED 8
/* The default budget (--cache-size). */
#define API_CACHE_DEFAULT_BYTES ((uint64_t)256 << 20)

struct api_cache;
struct api_cache_ref;
struct api_blob;

/* A cache of at most budget bytes (0: the default). */
struct api_cache *api_cache_new(uint64_t budget);
/* Frees every entry; no reference may be held any more. */
void api_cache_free(struct api_cache *c);

/*
 * The result of job from the file at path, loaded if needed (or waited for
 * while another request loads it). Returns a reference (release it with
 * api_cache_put) and sets *r, or NULL + err (-ENOENT, -EINVAL for a damaged
 * file).
 */
struct api_cache_ref *api_cache_get(struct api_cache *c, int64_t job, const char *path,
				    const struct result **r, struct oob_err *err);
void api_cache_put(struct api_cache *c, struct api_cache_ref *ref);

/*
 * What a rendering's build is handed: the progress it reports, whose cancel
 * flag it heeds (a build that replays the event log hands it to
 * evlog_watch), and the error it fills when it fails.
 */
struct api_build {
	struct oob_progress progress;
	struct oob_err err;
	int fd; /* -1, or a body left in a file (see api_build_fn) */
};
/*
 * Builds a rendering: a malloc'd body the cache takes over (*len bytes), or
 * NULL with b->err filled (code 0: out of memory). A body too large for
 * memory (an export) is left in an unlinked file instead: NULL, b->fd (the
 * cache's to close) and *len its size. Such a body is not kept: it goes to
 * the requests that wait for it, or, when its build was answered 202, to
 * the next request for it (within API_CACHE_ONCE_S).
 */
typedef char *(*api_build_fn)(void *arg, struct api_build *b, size_t *len);

/*
 * Responds to r with ref's rendering named key (the view and its
 * parameters, e.g. "flame m=0 p=0 n=500", < 128 bytes), as ctype: kept,
 * built now by build(arg, ...), or waited for while another request builds
 * it. A failed build answers its error to the requests that waited for it.
 * A body in a file (api_build_fn) is sent from it.
 *
 * With "Prefer: respond-async" (RFC 7240) a request waits at most the
 * preference's wait= seconds (API_CACHE_ASYNC_WAIT_MS without one): then it
 * is answered 202 with the build's progress and Retry-After, the build goes
 * on, and the same request made again gets the rendering (or the error of
 * the build, once). The request that runs the build is answered from inside
 * it (http_detach), so build and arg must not use r nor what r owns, and
 * the caller must not touch r after this call.
 */
void api_cache_serve(struct api_cache *c, struct http_req *r, struct api_cache_ref *ref,
		     const char *key, api_build_fn build, void *arg, const char *ctype);
#define API_CACHE_ASYNC_WAIT_MS 1000
/* How long the body or error of a build answered 202 waits for its request
 * (any request on the same result drops those older). */
#define API_CACHE_ONCE_S 600

/* Cancels every build running or to come (the server stops). */
void api_cache_close(struct api_cache *c);

/* Drops job's entry (after its results were deleted), cancelling its builds. */
void api_cache_forget(struct api_cache *c, int64_t job);
/* Bytes the table holds now (results and renderings). */
uint64_t api_cache_bytes(struct api_cache *c);

#endif
