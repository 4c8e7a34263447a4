/*
 * stack: a shadow call stack of one task (DESIGN.md 4.2). User frames, then
 * for each trap a marker entry followed by the kernel frames of the handler,
 * so the whole thing reads like the unified stack we print. A "segment" is
 * the run of entries above the topmost marker: returns never unwind across a
 * marker, trap returns pop back to it.
 * Not thread-safe; inline push/pop, no allocation unless the stack grows.
 */
#ifndef OOB_STACK_H
#define OOB_STACK_H

#include <stdint.h>

#define STACK_RET_NONE UINT64_MAX

struct stack_entry {
	uint32_t frame;	 /* frame id */
	uint32_t node;	 /* calling-context-tree node of this entry */
	uint64_t ret;	 /* address the caller expects back, or STACK_RET_NONE */
	uint32_t marker; /* 0: a frame; else a marker (enum ids_mark, tasks/ids.h) */
	uint32_t walked; /* the unwinder's frames (_Unwind_RaiseException, _Unwind_Resume):
			    frames its phase 2 walked so far */
	uint64_t jmp;	 /* return site of the last setjmp call this frame made, 0: none
			    (a longjmp lands there while the frame lives) */
	uint64_t sp;	 /* register regime: the sp the call left (the callee's entry sp;
			    a trap marker: the interrupted sp), 0: unknown */
};

struct stack {
	struct stack_entry *v;
	uint32_t n, cap;
	uint32_t base; /* first entry of the top segment (one past the topmost marker) */
};

void stack_init(struct stack *s);
void stack_destroy(struct stack *s);
void stack_grow(struct stack *s);

static inline void stack_push(struct stack *s, uint32_t frame, uint32_t node, uint64_t ret,
			      uint32_t marker)
{
	if (s->n == s->cap)
		stack_grow(s);
	s->v[s->n++] = (struct stack_entry){frame, node, ret, marker, 0, 0, 0};
	if (marker)
		s->base = s->n;
}

void stack_rescan_base(struct stack *s);

/* Drops the entries from index n up. */
static inline void stack_truncate(struct stack *s, uint32_t n)
{
	s->n = n;
	if (n < s->base)
		stack_rescan_base(s);
}

static inline struct stack_entry *stack_top(struct stack *s)
{
	return &s->v[s->n - 1];
}

/* Index of the first entry of the top segment (0 if no marker). */
static inline uint32_t stack_segment_base(const struct stack *s)
{
	return s->base;
}

/* Index of the topmost marker, or -1 if none. */
static inline int64_t stack_last_marker(const struct stack *s)
{
	return (int64_t)s->base - 1;
}
/* Index of the topmost entry of the top segment whose ret equals ret, or -1. */
int64_t stack_find_ret(const struct stack *s, uint64_t ret);
/* Index of the topmost entry of the top segment for frame, or -1. */
int64_t stack_find_frame(const struct stack *s, uint32_t frame);

#endif
