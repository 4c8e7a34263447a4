/*
 * oob_log: the one logging macro family. Messages go to stderr with a level
 * tag; the level threshold is process-wide (set once at start-up, read
 * without locking: a torn read only risks one message more or less).
 * Thread-safe: each message is written with a single fprintf.
 */
#ifndef OOB_LOG_H
#define OOB_LOG_H

enum oob_log_level { OOB_LOG_ERROR, OOB_LOG_WARN, OOB_LOG_INFO, OOB_LOG_DEBUG };

void oob_log_set_level(enum oob_log_level level);
enum oob_log_level oob_log_get_level(void);
/* Parses "error", "warn", "info", "debug"; returns -EINVAL for anything else. */
int oob_log_parse_level(const char *name, enum oob_log_level *out);
void oob_log(enum oob_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define OOB_ERROR(...) oob_log(OOB_LOG_ERROR, __VA_ARGS__)
#define OOB_WARN(...)  oob_log(OOB_LOG_WARN, __VA_ARGS__)
#define OOB_INFO(...)  oob_log(OOB_LOG_INFO, __VA_ARGS__)
#define OOB_DEBUG(...)                                                                             \
	do {                                                                                       \
		if (oob_log_get_level() >= OOB_LOG_DEBUG)                                          \
			oob_log(OOB_LOG_DEBUG, __VA_ARGS__);                                       \
	} while (0)

#endif
