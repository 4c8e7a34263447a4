/*
 * oob_mem: the out-of-memory policy and the per-job arena.
 *
 * Policy (decided once, here): small allocations whose size the program
 * chooses go through oob_x* and abort the process on failure, so callers never
 * handle NULL from them. Sizes that come from input (a record count, a
 * decompressed block, an upload) must be checked against a limit first and
 * turned into an -EFBIG error; they never reach these wrappers unchecked.
 *
 * An arena hands out memory that lives until oob_arena_free: everything a job
 * allocates that has the job's lifetime (names, frames, per-task state) comes
 * from one arena and is released at once. Not thread-safe: one arena per job
 * or per worker.
 */
#ifndef OOB_MEM_H
#define OOB_MEM_H

#include <stddef.h>

void *oob_xmalloc(size_t n);
void *oob_xcalloc(size_t count, size_t size);
void *oob_xrealloc(void *p, size_t n);
char *oob_xstrdup(const char *s);
/* Grows *p (an array of *cap elements of elem bytes) to hold at least need. */
void oob_xgrow(void **p, size_t *cap, size_t need, size_t elem);

struct oob_arena;

struct oob_arena *oob_arena_new(void);
/* Frees every block the arena handed out; NULL is fine. */
void oob_arena_free(struct oob_arena *a);
/* n bytes aligned for any type; aborts on OOM like oob_xmalloc. */
void *oob_arena_alloc(struct oob_arena *a, size_t n);
void *oob_arena_zalloc(struct oob_arena *a, size_t n);
char *oob_arena_strdup(struct oob_arena *a, const char *s);
char *oob_arena_strndup(struct oob_arena *a, const char *s, size_t n);
/* Bytes handed out so far (for memory reports). */
size_t oob_arena_used(const struct oob_arena *a);

#endif
