#include "util/oob_log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static enum oob_log_level threshold = OOB_LOG_WARN;
static const char *const names[] = {"error", "warn", "info", "debug"};

void oob_log_set_level(enum oob_log_level level)
{
	threshold = level;
}

enum oob_log_level oob_log_get_level(void)
{
	return threshold;
}

int oob_log_parse_level(const char *name, enum oob_log_level *out)
{
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(name, names[i]) == 0) {
			*out = (enum oob_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void oob_log(enum oob_log_level level, const char *fmt, ...)
{
	if (level > threshold)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "oobprof %s: %s\n", names[level], line);
}
