/* Fuzz target: every sampled-stack reader (uniprof, perf script, folded,
 * pprof), detected and then forced by the input's length; and the
 * unwinder's prologue scan over the input as a function's code. */
#include <stddef.h>
#include <stdint.h>

#include "sample/sample.h"
#include "sample/sampler_prologue.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum trace_format f[] = {TRACE_FMT_UNIPROF, TRACE_FMT_PERF_SCRIPT,
					      TRACE_FMT_FOLDED, TRACE_FMT_PPROF};
	struct oob_err e;
	struct profile *p;
	struct sample_opts o = {.format = TRACE_FMT_AUTO};
	if (sample_read_mem(data, size, "fuzz", &o, &p, &e) == 0)
		profile_free(p);
	o.format = f[size % 4];
	if (sample_read_mem(data, size, "fuzz", &o, &p, &e) == 0)
		profile_free(p);
	struct sampler_frame fr;
	for (size_t pc = 0; pc <= size; pc += 1 + size / 8)
		sampler_prologue_scan(data, size, pc, (int)(pc & 1), &fr);
	return 0;
}
