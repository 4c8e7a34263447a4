/* Fuzz target: the FirePerf stack-event reader. */
#include <stddef.h>
#include <stdint.h>

#include "trace/fireperf.h"
#include "util/in.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oob_err e;
	struct in_stream *s = in_open_mem(data, size, "fuzz", &e);
	struct fireperf_reader *r = s ? fireperf_open_stream(s, &e) : NULL;
	const struct fireperf_event *ev;
	if (!r)
		return 0;
	while (fireperf_next(r, &ev, &e) > 0) {
		volatile size_t sink = ev->label[0] + ev->cycle + ev->indent;
		(void)sink;
	}
	fireperf_close(r);
	return 0;
}
