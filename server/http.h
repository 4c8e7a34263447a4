/*
 * http: the transport. A thin layer over libmicrohttpd that hides its
 * calling conventions (the access handler called again and again with
 * upload_data, con_cls, the completion callback) behind four hooks per
 * request, so the route handlers in api/ read like straight-line code.
 *
 * For every request:
 *   begin(r)    headers are in. The handler either responds at once (an error,
 *               a GET) or asks for the body: HTTP_BODY_BUFFER (collected in
 *               memory up to max_buffered bytes, over it -> 413) or
 *               HTTP_BODY_STREAM (handed to chunk() as it arrives, never whole
 *               in memory; Content-Length or chunked transfer).
 *   chunk(r)    one piece of a streamed body. A negative return stops the
 *               upload; the handler has then responded (http_respond_*).
 *   end(r)      the body is complete (or there was none): respond now.
 *   done(r)     always last, once per request that begin() saw: release the
 *               handler's data. complete = 0 when the client went away or the
 *               connection failed before the body ended.
 *
 * Threads: a few event-loop threads (libmicrohttpd's internal polling with
 * epoll and a thread pool, http_opts.threads) serve every connection, so an
 * idle or slow client costs a socket, not a thread. The hooks run on these
 * threads and must not block for long: a response that takes long to
 * compute is deferred (http_defer) to the compute threads
 * (http_opts.compute_threads) while its connection is suspended, so that
 * /health and other quick requests keep answering. The hooks of one request
 * never run in parallel; those of different requests do. Connections (in
 * all and per client address), header size and idle time are bounded by
 * http_opts; a streamed body has its own idle timeout.
 *
 * Keep-alive: a request without a body gets its response on the call after
 * the headers, so the connection stays open for the next request.
 */
#ifndef OOB_HTTP_H
#define OOB_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/oob_err.h"

enum http_body { HTTP_BODY_NONE = 0, HTTP_BODY_BUFFER = 1, HTTP_BODY_STREAM = 2 };

struct http_req;

struct http_hooks {
	/* Returns HTTP_BODY_* (NONE: it responded, or will in end()). */
	int (*begin)(void *ctx, struct http_req *r);
	int (*chunk)(void *ctx, struct http_req *r, const void *data, size_t n);
	void (*end)(void *ctx, struct http_req *r);
	void (*done)(void *ctx, struct http_req *r, int complete);
};

struct http_opts {
	const char *host; /* numeric IPv4 or IPv6 address */
	unsigned port;	  /* 0: any free port (see http_port) */
	unsigned max_connections;
	unsigned max_header_bytes; /* request line + headers */
	unsigned timeout_s;	   /* idle connection timeout */
	size_t max_buffered;	   /* HTTP_BODY_BUFFER bodies */
	unsigned max_per_ip;	   /* connections per client address; 0: no limit */
	unsigned threads;	   /* event-loop threads */
	unsigned compute_threads;  /* threads for deferred responses */
	unsigned upload_timeout_s; /* idle timeout within a streamed body; 0: timeout_s */
};

struct http_server;

/* Binds and starts serving. NULL + err (-EADDRINUSE, -EACCES...) on failure. */
struct http_server *http_start(const struct http_opts *o, const struct http_hooks *h, void *ctx,
			       struct oob_err *err);
/* The port actually bound. */
unsigned http_port(const struct http_server *s);
/* Stops accepting, closes connections, waits for their threads. NULL is fine. */
void http_stop(struct http_server *s);

/*
 * One request served without a socket, through the same steps as the server's
 * (UTF-8 and framing checks, begin, body, end, done), for tests and the
 * request fuzzer: url is as sent (path and query, %-encoded), the body is
 * handed over in pieces of `piece` bytes (0: at once), and Content-Length is
 * added when neither it nor Transfer-Encoding is given. The response's status, type and body land
 * in *out (body NUL-terminated; for a file response only its size); free out->body.
 */
struct http_local_req {
	const char *method, *url;
	const char *const (*headers)[2]; /* name, value */
	size_t nheaders;
	const void *body;
	size_t nbody, piece;
};

struct http_local_resp {
	unsigned status;
	char ctype[64];
	char *body;
	size_t n;
};

void http_serve_local(const struct http_hooks *h, void *ctx, size_t max_buffered,
		      const struct http_local_req *in, struct http_local_resp *out);

/* Request accessors: strings borrowed, valid until done(). */
const char *http_req_method(const struct http_req *r);
const char *http_req_path(const struct http_req *r); /* decoded, without the query */
/* A query argument (decoded), or NULL. */
const char *http_req_arg(const struct http_req *r, const char *key);
/* A request header (case-insensitive name), or NULL. */
const char *http_req_header(const struct http_req *r, const char *name);
/* Content-Length, or -1 when absent (chunked or no body). */
int64_t http_req_content_length(const struct http_req *r);
/* The buffered body (HTTP_BODY_BUFFER), NUL-terminated; n may be NULL. */
const char *http_req_body(const struct http_req *r, size_t *n);
/* One pointer of handler data per request. */
void http_req_set_data(struct http_req *r, void *data);
void *http_req_data(const struct http_req *r);
/* 1 once a response is queued. */
int http_req_responded(const struct http_req *r);

/*
 * From begin() (which then returns HTTP_BODY_NONE without responding): the
 * response takes long to compute, so fn(ctx, r) runs instead of end(), on a
 * compute thread, with the connection suspended; fn must respond. Deferred
 * requests run in arrival order. During http_stop they still run.
 */
void http_defer(struct http_req *r, void (*fn)(void *ctx, struct http_req *r));

/*
 * From a deferred fn that has responded: the response goes out now while fn
 * goes on (a view build that outlives its request, answered 202 meanwhile).
 * fn must not touch r, nor anything r or its handler data own, afterwards.
 * 0, or -1 when r is not on a compute thread (http_req_detachable) or has
 * not responded; fn then keeps r.
 */
int http_detach(struct http_req *r);
int http_req_detachable(const struct http_req *r);

/* Adds a header to the coming response (up to 8; name and value copied). */
void http_add_header(struct http_req *r, const char *name, const char *value);
/*
 * Responds. Only one response per request; later calls are ignored (and
 * logged). Bodies are copied (http_respond) or taken over (http_respond_json
 * steals j; http_respond_fd owns fd and closes it).
 */
void http_respond(struct http_req *r, unsigned status, const char *ctype, const void *body,
		  size_t n);
void http_respond_json(struct http_req *r, unsigned status, json_t *j);
/* body (n bytes) is sent without a copy: release(cls) is called once the
 * response no longer needs it (also when it could not be queued). */
void http_respond_shared(struct http_req *r, unsigned status, const char *ctype, const void *body,
			 size_t n, void (*release)(void *cls), void *cls);
void http_respond_fd(struct http_req *r, unsigned status, const char *ctype, int fd, uint64_t size);
/* {"error": {"code": code, "message": ...}} with the given status. */
void http_respond_error(struct http_req *r, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same from an oob_err: status oob_err_http_status, code oob_err_code_name. */
void http_respond_oob_err(struct http_req *r, const struct oob_err *e);

#endif
