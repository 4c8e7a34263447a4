/*
 * fuzz_jobspec: the job request (server/jobspec.c) on hostile text. A spec
 * that parses must survive the round trip through its normalized form
 * (jobspec_to_json, then parsed again to the same normalized form) and
 * give reconstruction options; a refusal must say why.
 * Seeds (fuzz/corpus/jobspec): the examples of jobspec.h and the API tests.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jobspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const struct jobspec *s)
{
	struct jobspec again;
	struct oob_err err = {0};
	json_t *j = jobspec_to_json(s), *j2;
	if (!j || jobspec_parse(j, &again, &err) < 0)
		abort(); /* the normalized form is refused */
	j2 = jobspec_to_json(&again);
	if (!j2 || !json_equal(j, j2))
		abort(); /* the normalized form does not read back as itself */
	json_decref(j);
	json_decref(j2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jobspec s;
	struct oob_err err = {0};
	struct recon_opts o;

	if (jobspec_parse_text((const char *)data, size, &s, &err) < 0) {
		if (err.code >= 0 || !err.msg[0])
			abort(); /* a refusal must say why */
		return 0;
	}
	jobspec_recon_opts(&s, &o);
	round_trip(&s);
	return 0;
}
