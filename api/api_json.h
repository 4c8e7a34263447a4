/*
 * api_json: the JSON shapes of catalog rows as the API shows them, and the
 * small parsers every handler needs (query numbers, names). The shapes are
 * documented in api/openapi.yaml (schemas Binary, Trace, Job).
 *
 * Functions returning json_t * return a new reference (caller decrefs or
 * hands it to http_respond_json). Pure, thread-safe.
 */
#ifndef OOB_API_JSON_H
#define OOB_API_JSON_H

#include <stdint.h>

#include <jansson.h>

#include "catalog.h"
#include "job.h"
#include "util/oob_err.h"

json_t *api_json_binary(const struct catalog_binary *b);
json_t *api_json_trace(const struct catalog_trace *t);
/* progress: the pool's live view of a queued/running job, or NULL; r: its
 * result row, or NULL. */
json_t *api_json_job(const struct catalog_job *j, const struct job_progress *progress,
		     const struct catalog_result *r);

/* j as a rendering's body (api_cache_serve's builds): compact JSON,
 * malloc'd, *len its length; takes over j. NULL when j is NULL or cannot be
 * serialized. */
char *api_json_body(json_t *j, size_t *len);

/* "riscv", "x86_64", "aarch64", ... from an ELF e_machine ("em_<n>" else). */
const char *api_arch_name(unsigned machine);

/* Parses an optional decimal query argument: *out keeps its value when s is
 * NULL. -EINVAL (message naming key and range) if malformed or out of range. */
int api_arg_uint(const char *key, const char *s, uint64_t lo, uint64_t hi, uint64_t *out,
		 struct oob_err *err);

/*
 * Checks a user-given name (of a trace or binary): 1..128 bytes of letters,
 * digits and . _ - + @ , : = and spaces, not starting with '.' or a space.
 * Anything path-like ('/', '\\', "..") or a control character is refused
 * with -EINVAL: names are labels, never paths.
 */
int api_name_check(const char *name, struct oob_err *err);

#endif
