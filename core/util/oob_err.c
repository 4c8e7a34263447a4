#include "util/oob_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int oob_err_set(struct oob_err *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->code = code;
	}
	return code;
}

int oob_err_prefix(struct oob_err *err, const char *fmt, ...)
{
	if (!err)
		return -EINVAL;
	/* Built in a buffer large enough for both parts, then truncated once. */
	char both[2 * OOB_ERR_MSG_MAX + 2];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(both, OOB_ERR_MSG_MAX, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n > OOB_ERR_MSG_MAX - 1)
		n = OOB_ERR_MSG_MAX - 1;
	memcpy(both + n, ": ", 2);
	memcpy(both + n + 2, err->msg, OOB_ERR_MSG_MAX);
	both[n + 2 + OOB_ERR_MSG_MAX - 1] = '\0';
	memcpy(err->msg, both, OOB_ERR_MSG_MAX - 1);
	err->msg[OOB_ERR_MSG_MAX - 1] = '\0';
	return err->code;
}

void oob_err_clear(struct oob_err *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}

int oob_err_http_status(int code)
{
	switch (code) {
	case -EINVAL:
	case -EILSEQ:
	case -ERANGE:
		return 400;
	case -EACCES:
	case -EPERM:
		return 403;
	case -ENOENT:
		return 404;
	case -ECANCELED:
	case -EEXIST:
	case -EBUSY:
		return 409;
	case -EFBIG:
	case -E2BIG:
		return 413;
	case -ENOTSUP:
		return 415;
	case -ENOSPC:
	case -EDQUOT:
		return 507;
	default:
		return 500;
	}
}

const char *oob_err_code_name(int code)
{
	switch (oob_err_http_status(code)) {
	case 400:
		return "invalid_input";
	case 403:
		return "forbidden";
	case 404:
		return "not_found";
	case 409:
		return "conflict";
	case 413:
		return "too_large";
	case 415:
		return "unsupported";
	case 507:
		return "insufficient_storage";
	default:
		return "internal";
	}
}
