/* test_rsp: the GDB remote protocol's wire format (sample/rsp.h) on
 * packets written out by hand from the protocol's definition: checksums
 * (sum of the bytes between '$' and '#', mod 256), escapes ("}x" is x ^
 * 0x20), run lengths ("c* " is c repeated 1 + 3 times), stop replies; the
 * thread list and Hg over a socket whose stub replies are written ahead. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "oobtest.h"
#include "sample/rsp.h"

static int unframe(const char *in, char *out, size_t cap, size_t *len, size_t *used)
{
	struct oob_err e = {0};
	return rsp_unframe(in, strlen(in), out, cap, len, used, &e);
}

static void packets(void)
{
	char out[64];
	size_t len = 0, used = 0;
	CHECK_EQ(unframe("+$OK#9a", out, sizeof(out), &len, &used), 1);
	CHECK_STR(out, "OK");
	CHECK_EQ(len, 2);
	CHECK_EQ(used, 7);
	CHECK_EQ(unframe("$0* #7a", out, sizeof(out), &len, &used), 1);
	CHECK_STR(out, "0000");
	CHECK_EQ(unframe("$a}]b#9d", out, sizeof(out), &len, &used), 1);
	CHECK_STR(out, "a}b");
	CHECK_EQ(unframe("$T05thread:p01.3212;#6d$OK#9a", out, sizeof(out), &len, &used), 1);
	CHECK_STR(out, "T05thread:p01.3212;");
	CHECK_EQ(used, 23); /* the second packet stays for the next call */
}

static void partial_and_noise(void)
{
	char out[64];
	size_t len = 0, used = 99;
	CHECK_EQ(unframe("$OK#9", out, sizeof(out), &len, &used), 0);
	CHECK_EQ(used, 0);
	CHECK_EQ(unframe("noise$O", out, sizeof(out), &len, &used), 0);
	CHECK_EQ(used, 5);
	CHECK_EQ(unframe("garbage", out, sizeof(out), &len, &used), 0);
	CHECK_EQ(used, 7);
}

static void bad_packets(void)
{
	char out[8];
	size_t len = 0, used = 0;
	struct oob_err e = {0};
	CHECK_EQ(rsp_unframe("$OK#00", 6, out, sizeof(out), &len, &used, &e), -EBADMSG);
	CHECK_EQ(used, 6); /* consumed: the caller asks for a resend */
	CHECK(strstr(e.msg, "bad checksum") != NULL);
	CHECK_EQ(unframe("$OK#zz", out, sizeof(out), &len, &used), -EBADMSG);
	CHECK_EQ(unframe("$*#2a", out, sizeof(out), &len, &used), -EBADMSG); /* nothing to repeat */
	CHECK_EQ(unframe("$0*#5a", out, sizeof(out), &len, &used), -EBADMSG); /* no count */
	CHECK_EQ(unframe("$a}#dd", out, sizeof(out), &len, &used),
		 -EBADMSG); /* escape at the end */
	/* 8 bytes of room, for 7 characters and the NUL: '"' repeats 34 - 29 = 5
	 * times (6 zeros), '%' 8 times (9 zeros: too many) */
	CHECK_EQ(unframe("$0*\"#7c", out, sizeof(out), &len, &used), 1);
	CHECK_STR(out, "000000");
	CHECK_EQ(unframe("$0*%#7f", out, sizeof(out), &len, &used), -EMSGSIZE);
}

static void hex_and_stops(void)
{
	uint8_t b[4];
	CHECK_EQ(rsp_hex_decode("0aff", 4, b, sizeof(b)), 2);
	CHECK_EQ(b[0], 0x0a);
	CHECK_EQ(b[1], 0xff);
	CHECK_EQ(rsp_hex_decode("0g", 2, b, sizeof(b)), -EBADMSG);
	CHECK_EQ(rsp_hex_decode("0a0", 3, b, sizeof(b)), -EBADMSG);
	CHECK_EQ(rsp_hex_decode("0011223344", 10, b, sizeof(b)), -EBADMSG); /* over cap */
	struct rsp_stop s;
	struct oob_err e = {0};
	CHECK_EQ(rsp_parse_stop("T05thread:p01.3212;", 19, &s, &e), 0);
	CHECK_EQ(s.kind, RSP_STOPPED);
	CHECK_EQ(s.sig, 5);
	CHECK_EQ(rsp_parse_stop("W00", 3, &s, &e), 0);
	CHECK_EQ(s.kind, RSP_EXITED);
	CHECK_EQ(rsp_parse_stop("X0b", 3, &s, &e), 0);
	CHECK_EQ(s.kind, RSP_KILLED);
	CHECK_EQ(s.sig, 11);
	CHECK_EQ(rsp_parse_stop("OK", 2, &s, &e), -EBADMSG);
	CHECK_EQ(rsp_parse_stop("", 0, &s, &e), -EBADMSG);
	CHECK_EQ(rsp_check_error("m0,8", "E14", 3, &e), -EIO);
	CHECK(strstr(e.msg, "E14") != NULL);
	CHECK_EQ(rsp_check_error("m0,8", "0011", 4, NULL), 0);
}

/* An ack and the packet of text, framed from the definition, into fd. */
static void stub_says(int fd, const char *text)
{
	unsigned sum = 0;
	char buf[256];
	for (const char *p = text; *p; p++)
		sum += (unsigned char)*p;
	int n = snprintf(buf, sizeof(buf), "+$%s#%02x", text, sum & 0xff);
	CHECK_EQ(write(fd, buf, (size_t)n), n);
}

/* The thread list over a stub whose replies wait in the socket: two
 * qfThreadInfo/qsThreadInfo pages (plain and multiprocess ids), "l" at the
 * end; Hg's OK; a list longer than the room; an error reply. */
static void threads(void)
{
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct rsp *r = rsp_from_fd(sv[0], 2000);
	struct oob_err e = {0};
	uint64_t ids[2];
	size_t n = 99;
	stub_says(sv[1], "m1,2");
	stub_says(sv[1], "mp01.3");
	stub_says(sv[1], "l");
	CHECK_EQ(rsp_threads(r, ids, 2, &n, &e), 0);
	CHECK_EQ(n, 3); /* counted; the third not kept */
	CHECK_EQ(ids[0], 1);
	CHECK_EQ(ids[1], 2);
	stub_says(sv[1], "OK");
	CHECK_EQ(rsp_select_thread(r, 2, &e), 0);
	stub_says(sv[1], "");
	CHECK_EQ(rsp_threads(r, ids, 2, &n, &e), 0);
	CHECK_EQ(n, 0); /* no thread list: the caller samples the one stopped */
	stub_says(sv[1], "E01");
	CHECK_EQ(rsp_select_thread(r, 7, &e), -EIO);
	CHECK(strstr(e.msg, "Hg7") != NULL);
	stub_says(sv[1], "mzz");
	CHECK_EQ(rsp_threads(r, ids, 2, &n, &e), -EBADMSG);
	rsp_free(r);
	close(sv[1]);
}

int main(void)
{
	OOBTEST_BEGIN("test_rsp");
	RUN(packets);
	RUN(partial_and_noise);
	RUN(bad_packets);
	RUN(hex_and_stops);
	RUN(threads);
	return OOBTEST_END();
}
