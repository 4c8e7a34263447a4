/*
 * metrics: the counters of this oobprofd process that /metrics exports
 * (api_metrics.c renders them with the catalog's and the pool's gauges).
 * Monotonic since start; Prometheus derives rates (instructions/s is
 * rate(oobprof_job_instructions_total) / rate(oobprof_job_seconds_total)).
 *
 * Thread-safety: lock-free atomics; any thread.
 */
#ifndef OOB_METRICS_H
#define OOB_METRICS_H

#include <stdint.h>

struct metrics {
	uint64_t uploads;      /* bodies received whole (binaries, traces) */
	uint64_t upload_bytes; /* their bytes */
	uint64_t jobs_run;     /* job processes that ended (any outcome) */
	uint64_t job_insns;    /* instructions they reconstructed */
	double job_seconds;    /* their wall-clock time */
};

void metrics_upload(uint64_t bytes);
void metrics_job(double seconds, uint64_t insns);
void metrics_read(struct metrics *out);

#endif
