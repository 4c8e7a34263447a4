/*
 * api_cache: loaded results (result.h), shared by the requests that read
 * them, so that a flame graph polled by many clients is parsed once.
 *
 * Entries are keyed by job id and validated against the result file's size
 * and modification time, so a partial result replaced by a newer snapshot or
 * by the final one is reloaded. At most API_CACHE_SLOTS results are kept;
 * the least recently used one is dropped first (when nobody holds it).
 *
 * Thread-safety: all functions may be called from any thread. A result is
 * loaded outside the lock, so a slow load never blocks hits on other jobs.
 */
#ifndef OOB_API_CACHE_H
#define OOB_API_CACHE_H

#include <stdint.h>

#include "util/oob_err.h"
#include "result.h"

#define API_CACHE_SLOTS 16

struct api_cache;
struct api_cache_ref;

struct api_cache *api_cache_new(void);
/* Frees every entry; no reference may be held any more. */
void api_cache_free(struct api_cache *c);

/*
 * The result of job from the file at path, loaded if needed. Returns a
 * reference (release it with api_cache_put) and sets *r, or NULL + err
 * (-ENOENT, -EINVAL for a damaged file).
 */
struct api_cache_ref *api_cache_get(struct api_cache *c, int64_t job, const char *path,
				    const struct result **r, struct oob_err *err);
void api_cache_put(struct api_cache *c, struct api_cache_ref *ref);
/*
 * Responses rendered from an entry's result, by a key naming the view and
 * its parameters (e.g. "flame metric=0 priv=0 max=500"): a copy of the body
 * (malloc'd, caller frees) or NULL. The last API_CACHE_RENDERED are kept per
 * entry and go with it when the result changes.
 */
#define API_CACHE_RENDERED 4
char *api_cache_rendered(struct api_cache *c, struct api_cache_ref *ref, const char *key,
			 size_t *len);
/* Keeps a copy of body as the rendering of key. */
void api_cache_keep_rendered(struct api_cache *c, struct api_cache_ref *ref, const char *key,
			     const char *body, size_t len);

/* Drops job's entry (after its results were deleted). */
void api_cache_forget(struct api_cache *c, int64_t job);

#endif
