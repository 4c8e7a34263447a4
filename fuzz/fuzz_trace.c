/* Fuzz target: every trace reader. The bytes are read with format
 * auto-detection, then once more forced to one format (chosen by the input's
 * length) so that each parser also sees inputs it would not detect. */
#include <stddef.h>
#include <stdint.h>

#include "util/in.h"
#include "trace/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_all(const uint8_t *data, size_t size, enum trace_format f)
{
	struct oob_err e;
	struct trace_opts o = {.format = f};
	struct in_stream *s = in_open_mem(data, size, "fuzz", &e);
	struct trace_reader *r = s ? trace_open_stream(s, &o, &e) : NULL;
	const struct trace_batch *b;
	if (!r)
		return;
	(void)trace_reader_describe(r);
	while (trace_next(r, &b, &e) > 0) {
		/* touch what the contract promises */
		volatile uint64_t sink = b->pc[b->n - 1] + b->seq;
		for (uint32_t i = 0; i < b->nx; i++)
			sink += b->x[i].idx < b->n ? b->x[i].val : 0;
		if (b->x && b->nx && b->x[b->nx - 1].text)
			sink += (uint8_t)b->x[b->nx - 1].text[0];
		(void)sink;
	}
	trace_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	read_all(data, size, TRACE_FMT_AUTO);
	read_all(data, size, (enum trace_format)(1 + size % TRACE_FMT_OOBT));
	return 0;
}
