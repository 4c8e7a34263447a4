/* Fuzz target: the Go execution trace parser (v1 and v2) and its model. */
#include <stddef.h>
#include <stdint.h>

#include "go/gotrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oob_err e;
	struct gotrace *t = gotrace_open_mem(data, size, "fuzz", NULL, &e);
	if (!t)
		return 0;
	const struct gotrace_model *m = gotrace_model(t);
	size_t n;
	const struct gotrace_event *ev = gotrace_events(t, &n);
	volatile uint64_t sink = n + m->ngs + m->nsyscalls;
	for (size_t i = 0; i < m->ngspans; i++)
		sink += m->gspans[i].end - m->gspans[i].start;
	for (size_t i = 0; i < n; i++) {
		const struct gotrace_stack *s = gotrace_stack(t, ev[i].stack);
		sink += s && s->n ? s->frames[0].func[0] : 0;
	}
	(void)sink;
	gotrace_free(t);
	return 0;
}
