#include "util/oob_io.h"

#include <errno.h>
#include <sys/types.h>
#include <unistd.h>

int oob_pread_all(int fd, void *p, size_t n, uint64_t at)
{
	uint8_t *b = p;
	while (n) {
		ssize_t k = pread(fd, b, n, (off_t)at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EINVAL;
		b += k, n -= (size_t)k, at += (uint64_t)k;
	}
	return 0;
}

int oob_pwrite_all(int fd, const void *p, size_t n, uint64_t at)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t k = pwrite(fd, b, n, (off_t)at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		b += k, n -= (size_t)k, at += (uint64_t)k;
	}
	return 0;
}
