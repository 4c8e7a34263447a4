/*
 * rsp: the GDB remote serial protocol, client side (rsp.h). Replies are
 * waited for with poll() against one deadline per call, so no stub can
 * hold us longer than the connection's timeout.
 */
#include "sample/rsp.h"

#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/oob_mem.h"

/* Encoded bytes kept: a whole reply, escaped, plus noise before it. */
#define RSP_IN_CAP (2 * RSP_MAX_PACKET + 64)
/* Bad checksums in a row before giving up (GDB's own limit is similar). */
#define RSP_MAX_RETRIES 3
/* Bytes that are neither an ack nor a packet, tolerated per wait. */
#define RSP_MAX_NOISE 4096

struct rsp {
	int fd;
	int timeout_ms;
	size_t pkt_max; /* the stub's PacketSize, encoded bytes */
	char *in;	/* received, not yet consumed */
	size_t inlen;
	char *reply; /* the last decoded reply */
	char *cmd;   /* the last sent packet, encoded, for resending */
	size_t cmdlen, cmdcap;
	char what[48]; /* the command waited for, for messages */
};

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 32;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int rsp_hex_decode(const char *hex, size_t n, uint8_t *out, size_t cap)
{
	if (n % 2 || n / 2 > cap)
		return -EBADMSG;
	for (size_t i = 0; i < n; i += 2) {
		int h = hexval((unsigned char)hex[i]), l = hexval((unsigned char)hex[i + 1]);
		if (h < 0 || l < 0)
			return -EBADMSG;
		out[i / 2] = (uint8_t)(h << 4 | l);
	}
	return (int)(n / 2);
}

/* Decodes the packet body in[0..n) (escapes, run lengths) into out. */
static int decode_body(const char *in, size_t n, char *out, size_t cap, size_t *outlen,
		       struct oob_err *err)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		size_t rep = 1;
		if (c == '}') {
			if (++i == n)
				return oob_err_set(err, -EBADMSG, "escape '}' at a packet's end");
			c = (unsigned char)in[i] ^ 0x20;
		} else if (c == '*') {
			if (!o || ++i == n || (unsigned char)in[i] < 29 + 3 ||
			    (unsigned char)in[i] > 126)
				return oob_err_set(err, -EBADMSG, "bad run length at byte %zu", i);
			rep = (unsigned char)in[i] - 29u;
			c = (unsigned char)out[o - 1];
		}
		if (o + rep >= cap)
			return oob_err_set(err, -EMSGSIZE, "a reply over %zu bytes", cap - 1);
		memset(out + o, c, rep);
		o += rep;
	}
	out[o] = '\0';
	*outlen = o;
	return 0;
}

int rsp_unframe(const char *in, size_t n, char *out, size_t cap, size_t *outlen, size_t *used,
		struct oob_err *err)
{
	const char *start = memchr(in, '$', n);
	*used = start ? (size_t)(start - in) : n;
	if (!start)
		return 0;
	size_t rest = n - *used;
	const char *hash = memchr(start, '#', rest);
	if (!hash || (size_t)(hash - start) + 3 > rest)
		return 0;
	*used = (size_t)(hash - in) + 3;
	unsigned sum = 0;
	for (const char *p = start + 1; p < hash; p++)
		sum += (unsigned char)*p;
	int h = hexval((unsigned char)hash[1]), l = hexval((unsigned char)hash[2]);
	if (h < 0 || l < 0 || (unsigned)(h << 4 | l) != (sum & 0xff))
		return oob_err_set(err, -EBADMSG, "bad checksum '%.2s' (the data sums to %02x)",
				   hash + 1, sum & 0xff);
	int rc = decode_body(start + 1, (size_t)(hash - start - 1), out, cap, outlen, err);
	return rc < 0 ? rc : 1;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads what the socket has into r->in, waiting until deadline. */
static int fill(struct rsp *r, int64_t deadline, struct oob_err *err)
{
	if (r->inlen == RSP_IN_CAP)
		return oob_err_set(err, -EMSGSIZE, "%s: a reply over %u bytes", r->what,
				   RSP_MAX_PACKET);
	for (;;) {
		int64_t left = deadline - now_ms();
		struct pollfd p = {.fd = r->fd, .events = POLLIN};
		int k = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return oob_err_set(err, -errno, "%s: poll: %s", r->what, strerror(errno));
		if (k == 0)
			return oob_err_set(err, -ETIMEDOUT, "%s: no answer from the stub in %d ms",
					   r->what, r->timeout_ms);
		ssize_t got = recv(r->fd, r->in + r->inlen, RSP_IN_CAP - r->inlen, 0);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0 && errno != ECONNRESET)
			return oob_err_set(err, -errno, "%s: %s", r->what, strerror(errno));
		if (got <= 0) /* a reset is a close with our request unread */
			return oob_err_set(err, -ECONNRESET, "%s: the stub closed the connection",
					   r->what);
		r->inlen += (size_t)got;
		return 0;
	}
}

static void consume(struct rsp *r, size_t n)
{
	memmove(r->in, r->in + n, r->inlen - n);
	r->inlen -= n;
}

static int write_all(struct rsp *r, const char *p, size_t n, struct oob_err *err)
{
	int64_t deadline = now_ms() + r->timeout_ms;
	while (n) {
		ssize_t k = send(r->fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EAGAIN && now_ms() < deadline) {
			struct pollfd pf = {.fd = r->fd, .events = POLLOUT};
			poll(&pf, 1, (int)(deadline - now_ms()));
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EPIPE || errno == ECONNRESET))
			return oob_err_set(err, -ECONNRESET, "%s: the stub closed the connection",
					   r->what);
		if (k < 0)
			return oob_err_set(err, -errno, "%s: sending: %s", r->what,
					   strerror(errno));
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Waits for '+' (resending on '-'). A packet arriving first counts as the
 * ack: stubs in no-ack mode send none. */
static int wait_ack(struct rsp *r, int64_t deadline, struct oob_err *err)
{
	size_t noise = 0;
	int nacks = 0;
	for (;;) {
		while (r->inlen) {
			char c = r->in[0];
			if (c == '$')
				return 0;
			consume(r, 1);
			if (c == '+')
				return 0;
			if (c == '-' && ++nacks > RSP_MAX_RETRIES)
				return oob_err_set(err, -EBADMSG,
						   "%s: the stub rejected the packet %d times",
						   r->what, nacks);
			if (c == '-' && write_all(r, r->cmd, r->cmdlen, err) < 0)
				return err ? err->code : -EIO;
			if (c != '-' && ++noise > RSP_MAX_NOISE)
				return oob_err_set(err, -EBADMSG,
						   "%s: %zu bytes of garbage instead of an ack",
						   r->what, noise);
		}
		int rc = fill(r, deadline, err);
		if (rc < 0)
			return rc;
	}
}

static int wait_packet(struct rsp *r, int64_t deadline, size_t *len, struct oob_err *err)
{
	int bad = 0;
	size_t noise = 0;
	for (;;) {
		size_t used, n = 0;
		struct oob_err e = {0};
		int rc = rsp_unframe(r->in, r->inlen, r->reply, RSP_MAX_PACKET + 1, &n, &used, &e);
		noise += rc == 0 ? used : 0;
		consume(r, used);
		if (rc == 1) {
			*len = n;
			return write_all(r, "+", 1, err);
		}
		if (rc == -EBADMSG && ++bad <= RSP_MAX_RETRIES) {
			if (write_all(r, "-", 1, err) < 0)
				return err ? err->code : -EIO;
			continue;
		}
		if (rc < 0)
			return oob_err_set(err, rc, "%s: %s%s", r->what, e.msg,
					   rc == -EBADMSG ? " (and again on every resend)" : "");
		if (noise > RSP_MAX_NOISE)
			return oob_err_set(err, -EBADMSG, "%s: %zu bytes of garbage, no packet",
					   r->what, noise);
		if ((rc = fill(r, deadline, err)) < 0)
			return rc;
	}
}

/* cmd framed into r->cmd. */
static void frame(struct rsp *r, const char *cmd)
{
	size_t n = strlen(cmd);
	oob_xgrow((void **)&r->cmd, &r->cmdcap, 2 * n + 8, 1);
	char *o = r->cmd;
	unsigned sum = 0;
	*o++ = '$';
	for (size_t i = 0; i < n; i++) {
		char c = cmd[i];
		if (c == '$' || c == '#' || c == '}' || c == '*') {
			*o++ = '}';
			sum += '}';
			c ^= 0x20;
		}
		*o++ = c;
		sum += (unsigned char)c;
	}
	o += sprintf(o, "#%02x", sum & 0xff);
	r->cmdlen = (size_t)(o - r->cmd);
}

int rsp_request(struct rsp *r, const char *cmd, const char **reply, size_t *len,
		struct oob_err *err)
{
	snprintf(r->what, sizeof(r->what), "%.40s", cmd);
	frame(r, cmd);
	int64_t deadline = now_ms() + r->timeout_ms;
	int rc = write_all(r, r->cmd, r->cmdlen, err);
	if (rc == 0)
		rc = wait_ack(r, deadline, err);
	if (rc < 0 || !reply)
		return rc;
	if ((rc = wait_packet(r, deadline, len, err)) < 0)
		return rc;
	*reply = r->reply;
	return 0;
}

int rsp_wait_packet(struct rsp *r, const char **reply, size_t *len, struct oob_err *err)
{
	snprintf(r->what, sizeof(r->what), "waiting for a stop");
	int rc = wait_packet(r, now_ms() + r->timeout_ms, len, err);
	if (rc == 0)
		*reply = r->reply;
	return rc;
}

int rsp_interrupt(struct rsp *r, struct oob_err *err)
{
	snprintf(r->what, sizeof(r->what), "interrupt");
	return write_all(r, "\x03", 1, err);
}

int rsp_check_error(const char *cmd, const char *reply, size_t len, struct oob_err *err)
{
	if (len == 3 && reply[0] == 'E' && hexval(reply[1]) >= 0 && hexval(reply[2]) >= 0)
		return oob_err_set(err, -EIO, "%.40s: the stub answered %s", cmd, reply);
	return 0;
}

int rsp_parse_stop(const char *reply, size_t len, struct rsp_stop *out, struct oob_err *err)
{
	static const char kinds[] = "STWX";
	const char *k = len ? strchr(kinds, reply[0]) : NULL;
	int h = len >= 3 ? hexval((unsigned char)reply[1]) : -1;
	int l = len >= 3 ? hexval((unsigned char)reply[2]) : -1;
	if (!k || !*k || h < 0 || l < 0)
		return oob_err_set(err, -EBADMSG,
				   "expected a stop reply (S, T, W or X), got \"%.40s\"", reply);
	out->kind = *k == 'W' ? RSP_EXITED : *k == 'X' ? RSP_KILLED : RSP_STOPPED;
	out->sig = h << 4 | l;
	return 0;
}

/* A little-endian register of 2 * size hex digits ("xx" digits unknown: 0). */
static uint64_t le_value(const char *hex, size_t size)
{
	uint64_t v = 0;
	for (size_t i = 0; i < size; i++) {
		int h = hexval((unsigned char)hex[2 * i]),
		    l = hexval((unsigned char)hex[2 * i + 1]);
		if (h >= 0 && l >= 0)
			v |= (uint64_t)(h << 4 | l) << (8 * i);
	}
	return v;
}

int rsp_read_regs(struct rsp *r, uint64_t *regs, size_t max, size_t *n, struct oob_err *err)
{
	const char *rep;
	size_t len;
	int rc = rsp_request(r, "g", &rep, &len, err);
	if (rc < 0 || (rc = rsp_check_error("g", rep, len, err)) < 0)
		return rc;
	if (len < 16)
		return oob_err_set(err, -EBADMSG, "g: a reply of %zu characters, not registers",
				   len);
	*n = len / 16 < max ? len / 16 : max;
	for (size_t i = 0; i < *n; i++)
		regs[i] = le_value(rep + 16 * i, 8);
	return 0;
}

int rsp_read_reg(struct rsp *r, unsigned regno, uint64_t *v, struct oob_err *err)
{
	char cmd[32];
	const char *rep;
	size_t len;
	snprintf(cmd, sizeof(cmd), "p%x", regno);
	int rc = rsp_request(r, cmd, &rep, &len, err);
	if (rc < 0 || (rc = rsp_check_error(cmd, rep, len, err)) < 0)
		return rc;
	if (!len || len % 2 || len > 16)
		return oob_err_set(err, -EBADMSG, "%s: expected a register value, got \"%.40s\"",
				   cmd, rep);
	*v = le_value(rep, len / 2);
	return 0;
}

/* The ids of one qfThreadInfo/qsThreadInfo reply "m<id>,<id>..." (with
 * the multiprocess extension "p<pid>.<tid>": the tid), appended to ids. */
static int thread_ids(const char *rep, uint64_t *ids, size_t max, size_t *n, struct oob_err *err)
{
	for (const char *p = rep + 1; *p;) {
		const char *dot = strchr(p, '.'), *comma = strchr(p, ',');
		if (*p == 'p' && dot && (!comma || dot < comma))
			p = dot + 1;
		char *end;
		uint64_t id = strtoull(p, &end, 16);
		if (end == p || (*end && *end != ','))
			return oob_err_set(err, -EBADMSG, "thread list: bad id in \"%.40s\"", rep);
		if (*n < max)
			ids[*n] = id;
		(*n)++;
		p = *end ? end + 1 : end;
	}
	return 0;
}

int rsp_threads(struct rsp *r, uint64_t *ids, size_t max, size_t *n, struct oob_err *err)
{
	const char *rep;
	size_t len;
	*n = 0;
	for (const char *q = "qfThreadInfo";; q = "qsThreadInfo") {
		int rc = rsp_request(r, q, &rep, &len, err);
		if (rc < 0 || (rc = rsp_check_error(q, rep, len, err)) < 0)
			return rc;
		if (!len || rep[0] == 'l')
			return 0;
		if (rep[0] != 'm')
			return oob_err_set(err, -EBADMSG, "%s: unexpected reply \"%.40s\"", q, rep);
		if ((rc = thread_ids(rep, ids, max, n, err)) < 0)
			return rc;
		if (*n > 1u << 20)
			return oob_err_set(err, -EMSGSIZE, "thread list: over %u threads",
					   1u << 20);
	}
}

int rsp_select_thread(struct rsp *r, uint64_t tid, struct oob_err *err)
{
	char cmd[32];
	const char *rep;
	size_t len;
	snprintf(cmd, sizeof(cmd), "Hg%" PRIx64, tid);
	int rc = rsp_request(r, cmd, &rep, &len, err);
	if (rc < 0 || (rc = rsp_check_error(cmd, rep, len, err)) < 0)
		return rc;
	if (strcmp(rep, "OK"))
		return oob_err_set(err, -EBADMSG, "%s: unexpected reply \"%.40s\"", cmd, rep);
	return 0;
}

int rsp_read_mem(struct rsp *r, uint64_t addr, void *buf, size_t n, struct oob_err *err)
{
	size_t piece = (r->pkt_max - 8) / 2;
	for (size_t done = 0; done < n;) {
		size_t k = n - done < piece ? n - done : piece;
		char cmd[48];
		const char *rep;
		size_t len;
		snprintf(cmd, sizeof(cmd), "m%" PRIx64 ",%zx", addr + done, k);
		int rc = rsp_request(r, cmd, &rep, &len, err);
		if (rc < 0 || (rc = rsp_check_error(cmd, rep, len, err)) < 0)
			return rc;
		if (len != 2 * k || rsp_hex_decode(rep, len, (uint8_t *)buf + done, k) != (int)k)
			return oob_err_set(err, -EBADMSG,
					   "%s: expected %zu hex bytes, got \"%.40s\"", cmd, k,
					   rep);
		done += k;
	}
	return 0;
}

int rsp_read_features(struct rsp *r, const char *annex, char **out, struct oob_err *err)
{
	size_t have = 0, cap = 0;
	char *doc = NULL;
	for (;;) {
		char cmd[160];
		const char *rep;
		size_t len;
		snprintf(cmd, sizeof(cmd), "qXfer:features:read:%.100s:%zx,%zx", annex, have,
			 r->pkt_max - 8);
		int rc = rsp_request(r, cmd, &rep, &len, err);
		if (rc == 0)
			rc = rsp_check_error(cmd, rep, len, err);
		if (rc == 0 && (!len || (rep[0] != 'l' && rep[0] != 'm')))
			rc = oob_err_set(err, -ENOTSUP, "%s: not supported by the stub", cmd);
		if (rc == 0 && have + len > RSP_MAX_PACKET)
			rc =
			    oob_err_set(err, -EMSGSIZE, "%s: over %u bytes", annex, RSP_MAX_PACKET);
		if (rc < 0) {
			free(doc);
			return rc;
		}
		oob_xgrow((void **)&doc, &cap, have + len, 1);
		memcpy(doc + have, rep + 1, len - 1);
		have += len - 1;
		doc[have] = '\0';
		if (rep[0] == 'l')
			break;
	}
	*out = doc;
	return 0;
}

static int open_socket(const char *host, const char *port, int timeout_ms, struct oob_err *err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
	int g = getaddrinfo(host, port, &hints, &ai);
	if (g)
		return oob_err_set(err, -EINVAL, "%s:%s: %s", host, port, gai_strerror(g));
	int fd = -1, rc = -ECONNREFUSED;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 &&
		    (errno != EINPROGRESS || poll(&p, 1, timeout_ms) != 1 ||
		     getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr)) {
			rc = soerr ? -soerr : errno != EINPROGRESS ? -errno : -ETIMEDOUT;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return oob_err_set(err, rc, "connecting to %s:%s: %s", host, port, strerror(-rc));
	int one = 1; /* small packets, one round trip each */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

struct rsp *rsp_from_fd(int fd, int timeout_ms)
{
	struct rsp *r = oob_xcalloc(1, sizeof(*r));
	/* waits are poll()'s: a blocking send must not outlast the timeout */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	r->fd = fd;
	r->timeout_ms = timeout_ms;
	r->pkt_max = 4096;
	r->in = oob_xmalloc(RSP_IN_CAP);
	r->reply = oob_xmalloc(RSP_MAX_PACKET + 1);
	return r;
}

int rsp_connect(const char *hostport, int timeout_ms, struct rsp **out, struct oob_err *err)
{
	char host[256];
	const char *colon = strrchr(hostport, ':');
	size_t hl = colon ? (size_t)(colon - hostport) : 0;
	if (!colon || !hl || hl >= sizeof(host) || !colon[1])
		return oob_err_set(err, -EINVAL, "'%s': expected HOST:PORT", hostport);
	memcpy(host, hostport, hl);
	host[hl] = '\0';
	if (host[0] == '[' && host[hl - 1] == ']') { /* [v6]:port */
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	int fd = open_socket(host, colon + 1, timeout_ms, err);
	if (fd < 0)
		return fd;
	*out = rsp_from_fd(fd, timeout_ms);
	return 0;
}

int rsp_start(struct rsp *r, struct rsp_stop *stop, struct oob_err *err)
{
	const char *rep;
	size_t len;
	int rc = rsp_request(r, "qSupported:xmlRegisters=riscv", &rep, &len, err);
	if (rc < 0)
		return rc;
	const char *ps = strstr(rep, "PacketSize=");
	unsigned long v = ps ? strtoul(ps + 11, NULL, 16) : 0;
	if (v >= 64) /* keep the default for absurd sizes */
		r->pkt_max = v < RSP_MAX_PACKET ? v : RSP_MAX_PACKET;
	if ((rc = rsp_request(r, "?", &rep, &len, err)) < 0)
		return rc;
	return rsp_parse_stop(rep, len, stop, err);
}

void rsp_free(struct rsp *r)
{
	if (!r)
		return;
	close(r->fd);
	free(r->in);
	free(r->reply);
	free(r->cmd);
	free(r);
}
