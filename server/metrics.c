/* metrics: process-wide counters behind /metrics. */
#include "metrics.h"

#include <stdatomic.h>

static atomic_ullong uploads, upload_bytes, jobs_run, job_insns, job_us;

void metrics_upload(uint64_t bytes)
{
	atomic_fetch_add(&uploads, 1);
	atomic_fetch_add(&upload_bytes, bytes);
}

void metrics_job(double seconds, uint64_t insns)
{
	atomic_fetch_add(&jobs_run, 1);
	atomic_fetch_add(&job_insns, insns);
	atomic_fetch_add(&job_us, (unsigned long long)(seconds * 1e6));
}

void metrics_read(struct metrics *out)
{
	out->uploads = atomic_load(&uploads);
	out->upload_bytes = atomic_load(&upload_bytes);
	out->jobs_run = atomic_load(&jobs_run);
	out->job_insns = atomic_load(&job_insns);
	out->job_seconds = (double)atomic_load(&job_us) * 1e-6;
}
