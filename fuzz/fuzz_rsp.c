/* Fuzz target: the GDB remote protocol client (sample/rsp.h) reading a
 * stub's whole output from the input: the packet decoder on the raw bytes,
 * then the client's requests (handshake, registers, a register, memory, a
 * target description, a stop) answered from a socketpair that holds the
 * input, so acks, resends, noise and every reply parser are exercised. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sample/rsp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decode_all(const uint8_t *data, size_t size)
{
	static char out[4096];
	const char *p = (const char *)data;
	size_t n = size, len, used;
	struct oob_err e;
	while (n) {
		int rc = rsp_unframe(p, n, out, sizeof(out), &len, &used, &e);
		if (rc == 1) {
			struct rsp_stop s;
			uint8_t b[64];
			rsp_parse_stop(out, len, &s, &e);
			rsp_hex_decode(out, len, b, sizeof(b));
			rsp_check_error("x", out, len, &e);
		}
		if (!used)
			break;
		p += used;
		n -= used;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	decode_all(data, size);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return 0;
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	ssize_t put = write(sv[1], data, size); /* what fits; the rest is cut */
	(void)put;
	shutdown(sv[1], SHUT_WR); /* the end of the input ends the stream */
	struct rsp *r = rsp_from_fd(sv[0], 200);
	struct oob_err e;
	struct rsp_stop s;
	uint64_t regs[33], v;
	uint8_t mem[600];
	size_t n, len;
	char *doc;
	const char *rep;
	if (rsp_start(r, &s, &e) == 0 && rsp_read_regs(r, regs, 33, &n, &e) == 0 &&
	    rsp_read_reg(r, 3140, &v, &e) == 0 &&
	    rsp_read_mem(r, 0x1000, mem, sizeof(mem), &e) == 0 &&
	    rsp_read_features(r, "target.xml", &doc, &e) == 0) {
		free(doc);
		rsp_wait_packet(r, &rep, &len, &e);
	}
	rsp_free(r);
	close(sv[1]);
	return 0;
}
