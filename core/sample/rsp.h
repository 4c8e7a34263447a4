/*
 * rsp: a client of the GDB remote serial protocol, enough to sample a
 * running emulator from outside (QEMU user mode `-g PORT`, QEMU system
 * `-gdb tcp::PORT`): packet framing with checksums and acks, run-length
 * and escape decoding of replies, stop replies, threads (qfThreadInfo,
 * Hg), registers (g, p), memory (m), target descriptions
 * (qXfer:features:read), continue, interrupt, detach. No Debian library speaks the wire protocol,
 * hence this module.
 *
 * Every wait is bounded by the connection's timeout: a stub that closes the
 * socket, stops answering, answers garbage or keeps sending bad checksums
 * gives a negative errno and a message saying which (-ECONNRESET closed,
 * -ETIMEDOUT no answer, -EBADMSG checksums or framing, -EMSGSIZE a reply
 * over RSP_MAX_PACKET, -EIO an error reply "Exx"), never a hang.
 *
 * Not thread-safe: one connection per thread.
 */
#ifndef OOB_RSP_H
#define OOB_RSP_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"

/* The largest decoded reply taken (QEMU's PacketSize is 4 KiB). */
#define RSP_MAX_PACKET (1u << 20)

struct rsp;

/* What a stop reply says. */
enum rsp_stop_kind {
	RSP_STOPPED, /* S/T: stopped by signal sig */
	RSP_EXITED,  /* W: exited with status sig */
	RSP_KILLED,  /* X: terminated by signal sig */
};

struct rsp_stop {
	enum rsp_stop_kind kind;
	int sig;
};

/* Connects to "HOST:PORT" (a name or an IPv4/IPv6 address; "[v6]:PORT" too)
 * and waits for nothing yet. timeout_ms bounds the connect and every later
 * wait for a reply. *out is freed with rsp_free. Returns 0, -EINVAL (bad
 * address), or the connect's negative errno, with a message. */
int rsp_connect(const char *hostport, int timeout_ms, struct rsp **out, struct oob_err *err);

/* The same over a connected stream socket fd (a socketpair, a pipe-like
 * stub), owned from now on: rsp_free closes it. Never fails. */
struct rsp *rsp_from_fd(int fd, int timeout_ms);

/* The handshake: qSupported (the stub's packet size) and "?", whose stop
 * reply lands in *stop (a stub started with -S or -g waits stopped). */
int rsp_start(struct rsp *r, struct rsp_stop *stop, struct oob_err *err);

/* Closes the connection; NULL is fine. */
void rsp_free(struct rsp *r);

/* Sends cmd (escaped as needed) and waits for its ack; then, unless
 * reply is NULL, for the reply packet: *reply borrows the decoded text
 * (NUL-terminated, valid until the next call on r), *len its length. An
 * empty reply means "not supported". Error replies "Exx" are returned as
 * replies: rsp_check_error turns them into errors. */
int rsp_request(struct rsp *r, const char *cmd, const char **reply, size_t *len,
		struct oob_err *err);

/* Waits up to the timeout for the next packet (a stop reply after "c" and
 * rsp_interrupt), as rsp_request's reply. */
int rsp_wait_packet(struct rsp *r, const char **reply, size_t *len, struct oob_err *err);

/* Sends the interrupt byte (^C): stops a target running under a stub that
 * reads its socket meanwhile (QEMU system mode, not user mode). */
int rsp_interrupt(struct rsp *r, struct oob_err *err);

/* -EIO with "cmd: the stub answered Exx" if reply is an error reply, else 0. */
int rsp_check_error(const char *cmd, const char *reply, size_t len, struct oob_err *err);

/* Parses a stop reply ("S05", "T05thread:...;", "W00", "X09"). Returns 0 or
 * -EBADMSG. */
int rsp_parse_stop(const char *reply, size_t len, struct rsp_stop *out, struct oob_err *err);

/* The registers of "g": up to max little-endian 64-bit values (RV64: x0..x31
 * then pc, 33 of them); *n how many the stub sent. */
int rsp_read_regs(struct rsp *r, uint64_t *regs, size_t max, size_t *n, struct oob_err *err);

/* One register by its number in the target description ("p"). */
int rsp_read_reg(struct rsp *r, unsigned regno, uint64_t *v, struct oob_err *err);

/* The target's threads (qfThreadInfo, then qsThreadInfo until "l"): QEMU's
 * guest threads in user mode, its vCPUs (harts) in system mode. Their ids
 * into ids[0..max), *n how many there are (ids past max are counted, not
 * kept). A stub without the query gives *n = 0. */
int rsp_threads(struct rsp *r, uint64_t *ids, size_t max, size_t *n, struct oob_err *err);

/* Makes thread tid the one whose registers and memory (through its address
 * translation, in system mode) the next g, p and m packets read ("Hg"). */
int rsp_select_thread(struct rsp *r, uint64_t tid, struct oob_err *err);

/* n bytes of target memory at addr ("m", in pieces the stub takes). */
int rsp_read_mem(struct rsp *r, uint64_t addr, void *buf, size_t n, struct oob_err *err);

/* The whole of qXfer:features:read:ANNEX (a target description), into a
 * malloc'd NUL-terminated *out of at most RSP_MAX_PACKET bytes. */
int rsp_read_features(struct rsp *r, const char *annex, char **out, struct oob_err *err);

/* ---- the wire format, for the client and its fuzz target ---- */

/* The first packet in in[0..n): skips bytes before '$' (acks, notifications
 * and noise), checks the checksum and decodes escapes ("}x") and run
 * lengths ("c*N") into out[0..cap) (NUL-terminated, *outlen). *used is set
 * to the bytes consumed when a packet was found or rejected. Returns 1 for a
 * packet, 0 when in holds no whole packet yet, -EBADMSG for a bad checksum
 * or bad run length, -EMSGSIZE when the decoded text exceeds cap - 1. */
int rsp_unframe(const char *in, size_t n, char *out, size_t cap, size_t *outlen, size_t *used,
		struct oob_err *err);

/* Hex pairs of hex[0..n) into bytes; returns the byte count or -EBADMSG. */
int rsp_hex_decode(const char *hex, size_t n, uint8_t *out, size_t cap);

#endif
