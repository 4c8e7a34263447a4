#include "util/oob_mem.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n)
{
	fprintf(stderr, "oobprof: out of memory allocating %zu bytes\n", n);
	abort();
}

void *oob_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *oob_xcalloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size ? size : 1);
	if (!p)
		oom(count * size);
	return p;
}

void *oob_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

char *oob_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(oob_xmalloc(n), s, n);
}

void oob_xgrow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return;
	size_t c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	if (c > SIZE_MAX / elem)
		oom(SIZE_MAX);
	*p = oob_xrealloc(*p, c * elem);
	*cap = c;
}

/* Blocks are chained; big requests get a block of their own so that the
 * current block's free tail is not wasted. */
struct arena_block {
	struct arena_block *next;
	size_t size, used;
	max_align_t data[];
};

struct oob_arena {
	struct arena_block *head;
	size_t used;
};

enum { ARENA_BLOCK = 64 * 1024 };

struct oob_arena *oob_arena_new(void)
{
	return oob_xcalloc(1, sizeof(struct oob_arena));
}

void oob_arena_free(struct oob_arena *a)
{
	if (!a)
		return;
	for (struct arena_block *b = a->head, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(a);
}

static struct arena_block *block_new(size_t size)
{
	struct arena_block *b = oob_xmalloc(sizeof(*b) + size);
	b->size = size;
	b->used = 0;
	return b;
}

void *oob_arena_alloc(struct oob_arena *a, size_t n)
{
	size_t align = _Alignof(max_align_t);
	n = (n + align - 1) & ~(align - 1);
	struct arena_block *b = a->head;
	if (!b || b->size - b->used < n) {
		if (n > ARENA_BLOCK / 4) {
			b = block_new(n);
			if (a->head) {
				b->next = a->head->next;
				a->head->next = b;
			} else {
				b->next = NULL;
				a->head = b;
			}
			b->used = n;
			a->used += n;
			return b->data;
		}
		b = block_new(ARENA_BLOCK);
		b->next = a->head;
		a->head = b;
	}
	void *p = (char *)b->data + b->used;
	b->used += n;
	a->used += n;
	return p;
}

void *oob_arena_zalloc(struct oob_arena *a, size_t n)
{
	return memset(oob_arena_alloc(a, n), 0, n);
}

char *oob_arena_strndup(struct oob_arena *a, const char *s, size_t n)
{
	char *p = oob_arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *oob_arena_strdup(struct oob_arena *a, const char *s)
{
	return oob_arena_strndup(a, s, strlen(s));
}

size_t oob_arena_used(const struct oob_arena *a)
{
	return a->used;
}
