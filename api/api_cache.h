/*
 * api_cache: loaded results (result.h) and the responses rendered from them
 * (a flame graph, folded stacks), shared by the requests that read them, so
 * that a flame graph polled by many clients is loaded and built once.
 *
 * Entries are keyed by job id and validated against the result file's size
 * and modification time, so a partial result replaced by a newer snapshot or
 * by the final one is reloaded.
 *
 * Single flight: the first request for a result loads it, and the first for
 * a rendering (job, key) builds it; requests that come meanwhile wait for
 * that load or build (a condition variable) instead of doing it again, so
 * 64 concurrent requests cost one build, not 64.
 *
 * Memory: bounded by bytes, least recently used first. An entry weighs its
 * result file's size (the loaded result is of the same order) plus its
 * renderings; beyond the budget (api_cache_new) whole entries are dropped
 * from the table, and freed once the last request holding them is done. A
 * rendering is an immutable refcounted body sent without a copy
 * (api_cache_respond), so concurrent responses share one buffer. At most
 * API_CACHE_SLOTS results and API_CACHE_RENDERED renderings per result are
 * kept.
 *
 * Thread-safety: all functions may be called from any thread. Loads and
 * builds run outside the lock, so a slow one never blocks hits on others.
 */
#ifndef OOB_API_CACHE_H
#define OOB_API_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"
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
 * The rendering of ref's result named key (the view and its parameters,
 * e.g. "flame m=0 p=0 n=500", < 128 bytes): kept, or built now by
 * build(arg, &len) (a malloc'd body the cache takes over; NULL on failure),
 * or waited for while another request builds it. Returns a reference to
 * release with api_blob_put (or hand to api_cache_respond), or NULL when
 * the build failed.
 */
struct api_blob *api_cache_render(struct api_cache *c, struct api_cache_ref *ref, const char *key,
				  char *(*build)(void *arg, size_t *len), void *arg);
/* The body of a rendering: borrowed while the reference is held. */
const char *api_blob_data(const struct api_blob *b, size_t *len);
void api_blob_put(struct api_blob *b);
/* Responds 200 with b's body, sent without a copy; takes over the reference. */
void api_cache_respond(struct http_req *r, struct api_blob *b, const char *ctype);

/* Older interface, kept for its callers: a malloc'd copy of key's rendering
 * (NULL if none), and keeping a copy of body as key's rendering. */
char *api_cache_rendered(struct api_cache *c, struct api_cache_ref *ref, const char *key,
			 size_t *len);
void api_cache_keep_rendered(struct api_cache *c, struct api_cache_ref *ref, const char *key,
			     const char *body, size_t len);

/* Drops job's entry (after its results were deleted). */
void api_cache_forget(struct api_cache *c, int64_t job);
/* Bytes the table holds now (results and renderings). */
uint64_t api_cache_bytes(struct api_cache *c);

#endif
