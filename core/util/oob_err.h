/*
 * oob_err: the one error convention of oobprof.
 *
 * Functions that can fail return 0 (or a count) on success and a negative
 * errno on failure; pointer-returning functions return NULL. Either way they
 * fill an optional struct oob_err with the code and a human message that says
 * what went wrong and where (file, byte offset or line). The HTTP layer turns
 * the code into a status (oob_err_http_status) and the message into its JSON
 * error body, so messages are written for the person who sent the input.
 *
 * Codes used across the project:
 *   -EINVAL     malformed input (bad format, corrupt record)       -> 400
 *   -ENOENT     unknown id or missing file                         -> 404
 *   -EFBIG      input over a configured limit                      -> 413
 *   -ENOTSUP    valid input we do not handle (format, arch)        -> 415/422
 *   -ECANCELED  a job was cancelled                                -> 409
 *   -ENOMEM, -EIO, -ENOSPC  server-side trouble                    -> 5xx
 */
#ifndef OOB_ERR_H
#define OOB_ERR_H

#include <errno.h>

#define OOB_ERR_MSG_MAX 512

struct oob_err {
	int code;		   /* negative errno, 0 when no error was recorded */
	char msg[OOB_ERR_MSG_MAX]; /* NUL-terminated, never empty when code != 0 */
};

/*
 * Records an error in err (which may be NULL) and returns code, so a caller can
 * write `return oob_err_set(err, -EINVAL, "...", ...)`. code must be negative.
 * A second call overwrites the first: the innermost failure usually reports
 * the most precise location, so callers add context with oob_err_prefix.
 */
int oob_err_set(struct oob_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "context: " to an already recorded message; returns err->code. */
int oob_err_prefix(struct oob_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clears err (NULL is fine). */
void oob_err_clear(struct oob_err *err);

/* The HTTP status that a code maps to (400, 404, 413, 415, 409, 500, 507). */
int oob_err_http_status(int code);

/* A short machine-readable name for a code ("invalid_input", "not_found", ...). */
const char *oob_err_code_name(int code);

#endif
