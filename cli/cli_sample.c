/*
 * cli_sample: `oobprof sample HOST:PORT`, the out-of-band sampler
 * (sample/sampler.h) with its figures on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_go.h"
#include "cli_impl.h"
#include "cli_opts.h"
#include "sample/sampler.h"
#include "util/oob_mem.h"

static int number(const char *opt, const char *val, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(val, &end);
	if (end == val || *end || !(v >= lo && v <= hi))
		return cli_bad_value(opt, val);
	*out = v;
	return 0;
}

int cli_sample_opt(struct cli *c, int opt, const char *val)
{
	struct sampler_opts *s = &c->so;
	double v = 0;
	switch (opt) {
	case OPT_HZ:
		return number("--hz", val, 0.001, 100000, &s->hz);
	case OPT_DURATION:
		if (number("--duration", val, 0.001, 1e7, &v) < 0)
			return -EINVAL;
		s->duration_ms = (uint64_t)(v * 1000);
		return 0;
	case OPT_MAX_SAMPLES:
		if (number("--max-samples", val, 1, 1e15, &v) < 0)
			return -EINVAL;
		s->max_samples = (uint64_t)v;
		return 0;
	case OPT_PID:
		if (number("--pid", val, 1, 1 << 30, &v) < 0)
			return -EINVAL;
		s->pid = (pid_t)v;
		return 0;
	case OPT_UNWIND:
		c->unwind_set = 1;
		if (!strcmp(val, "fp") || !strcmp(val, "cfi")) {
			s->unwind = val[0] == 'c' ? SAMPLER_UNWIND_CFI : SAMPLER_UNWIND_FP;
			return 0;
		}
		return cli_bad_value("--unwind", val);
	case OPT_INSTRET:
		s->instret = 1;
		return 0;
	case OPT_ONE_THREAD:
		s->one_thread = 1;
		return 0;
	default: /* OPT_TIMEOUT */
		if (number("--timeout", val, 1, 3600000, &v) < 0)
			return -EINVAL;
		s->timeout_ms = (int)v;
		return 0;
	}
}

int cli_cmd_sample(struct cli *c, int argc, char **argv)
{
	if (argc - optind != 1) {
		fprintf(stderr, "oobprof sample: give one target, HOST:PORT of a GDB stub\n");
		return 2;
	}
	struct sampler_opts o = c->so;
	struct sample_elf *elfs = oob_xcalloc(c->nelfs + 1, sizeof(*elfs));
	for (size_t i = 0; i < c->nelfs; i++)
		elfs[i] = (struct sample_elf){c->elfs[i].path, c->elfs[i].base};
	o.target = argv[optind];
	o.hz = o.hz > 0 ? o.hz : 100;
	o.elfs = elfs;
	o.nelfs = c->nelfs;
	o.max_depth = c->ro.max_depth;
	if (!c->unwind_set)
		o.unwind = c->nelfs ? SAMPLER_UNWIND_CFI : SAMPLER_UNWIND_FP;
	struct sampler_stats st;
	struct oob_err err = {0};
	int rc = cli_out_begin(c->out) < 0 ? -EIO : sampler_run(&o, stdout, &st, &err);
	if (rc < 0 && err.code)
		fprintf(stderr, "oobprof sample: %s\n", err.msg);
	if (rc == 0 || st.samples) {
		double per = st.samples ? 1e3 * st.stopped_s / (double)st.samples : 0;
		fprintf(stderr,
			"oobprof sample: %llu samples (%llu failed walks, %llu past a leaf "
			"without CFI, %llu frames without CFI stepped by their prologue; %llu "
			"stops sampled several threads) in %.3f s, %.3f ms "
			"stopped per sample (%.2f%% of the time), %llu memory reads, %llu ticks "
			"late; target %s\n",
			(unsigned long long)st.samples, (unsigned long long)st.failed,
			(unsigned long long)st.leaf_walks, (unsigned long long)st.prologue_steps,
			(unsigned long long)st.multi_stops, st.wall_s, per,
			st.wall_s > 0 ? 100 * st.stopped_s / st.wall_s : 0,
			(unsigned long long)st.mem_reads, (unsigned long long)st.late,
			st.exited ? "exited" : "detached");
	}
	free(elfs);
	return rc < 0 ? 1 : 0;
}
