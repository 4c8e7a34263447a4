/*
 * oob_io: what the core's on-disk formats share (the event log, its index,
 * the timeline summaries): little-endian integers in byte buffers, and
 * positioned reads and writes that finish in spite of EINTR and short
 * counts.
 */
#ifndef OOB_IO_H
#define OOB_IO_H

#include <stddef.h>
#include <stdint.h>

static inline void oob_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t oob_get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* All n bytes at offset at: 0, -errno, or -EINVAL when the file ends
 * first (a cut file is malformed input to its readers). */
int oob_pread_all(int fd, void *p, size_t n, uint64_t at);
/* All n bytes at offset at: 0, -errno (-EIO if nothing could be written). */
int oob_pwrite_all(int fd, const void *p, size_t n, uint64_t at);

#endif
