#include "flow/stack.h"

#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"

void stack_init(struct stack *s)
{
	memset(s, 0, sizeof(*s));
	s->cap = 64;
	s->v = oob_xmalloc(s->cap * sizeof(*s->v));
}

void stack_destroy(struct stack *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void stack_grow(struct stack *s)
{
	s->cap *= 2;
	s->v = oob_xrealloc(s->v, s->cap * sizeof(*s->v));
}

void stack_rescan_base(struct stack *s)
{
	uint32_t i = s->n;
	while (i > 0 && !s->v[i - 1].marker)
		i--;
	s->base = i;
}

int64_t stack_find_ret(const struct stack *s, uint64_t ret)
{
	for (int64_t i = (int64_t)s->n - 1; i >= (int64_t)s->base; i--)
		if (s->v[i].ret == ret)
			return i;
	return -1;
}

int64_t stack_find_frame(const struct stack *s, uint32_t frame)
{
	for (int64_t i = (int64_t)s->n - 1; i >= (int64_t)s->base; i--)
		if (s->v[i].frame == frame)
			return i;
	return -1;
}
