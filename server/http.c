#include "http.h"
#include "http_impl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <microhttpd.h>

#include "util/oob_log.h"
#include "util/oob_mem.h"

const char *http_req_method(const struct http_req *r)
{
	return r->method;
}

const char *http_req_path(const struct http_req *r)
{
	return r->path;
}

const char *http_req_arg(const struct http_req *r, const char *key)
{
	if (r->local)
		return http_local_lookup(r->local->args, r->local->nargs, key, 0);
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *http_req_header(const struct http_req *r, const char *name)
{
	if (r->local)
		return http_local_lookup(r->local->hdrs, r->local->nhdrs, name, 1);
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

int64_t http_req_content_length(const struct http_req *r)
{
	const char *v = http_req_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (!v)
		return -1;
	char *end;
	long long n = strtoll(v, &end, 10);
	return (*end || n < 0) ? -1 : (int64_t)n;
}

const char *http_req_body(const struct http_req *r, size_t *n)
{
	if (n)
		*n = r->nbuf;
	return r->buf ? r->buf : "";
}

void http_req_set_data(struct http_req *r, void *data)
{
	r->data = data;
}

void *http_req_data(const struct http_req *r)
{
	return r->data;
}

int http_req_responded(const struct http_req *r)
{
	return r->resp != NULL || r->queued;
}

void http_defer(struct http_req *r, void (*fn)(void *ctx, struct http_req *r))
{
	r->deferred = fn;
}

int http_req_detachable(const struct http_req *r)
{
	return r->detached != NULL;
}

int http_detach(struct http_req *r)
{
	if (!r->detached || !http_req_responded(r))
		return -1;
	int *flag = r->detached;
	r->detached = NULL;
	*flag = 1;
	MHD_resume_connection(r->conn); /* r may be gone from here on */
	return 0;
}

void http_add_header(struct http_req *r, const char *name, const char *value)
{
	if (r->nhdr >= MAX_HEADERS)
		return;
	r->hdr[r->nhdr][0] = oob_xstrdup(name);
	r->hdr[r->nhdr][1] = oob_xstrdup(value);
	r->nhdr++;
}

static void set_response(struct http_req *r, unsigned status, const char *ctype,
			 struct MHD_Response *resp)
{
	if (http_req_responded(r)) {
		OOB_WARN("http: %s %s: second response (%u) ignored", r->method, r->path, status);
		MHD_destroy_response(resp);
		return;
	}
	if (r->local) {
		r->local->out->status = status;
		snprintf(r->local->out->ctype, sizeof(r->local->out->ctype), "%s",
			 ctype ? ctype : "");
	}
	if (ctype)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	for (int i = 0; i < r->nhdr; i++)
		MHD_add_response_header(resp, r->hdr[i][0], r->hdr[i][1]);
	r->resp = resp;
	r->status = status;
}

void http_respond(struct http_req *r, unsigned status, const char *ctype, const void *body,
		  size_t n)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(n, (void *)body, MHD_RESPMEM_MUST_COPY);
	http_local_keep_body(r, body, n);
	set_response(r, status, ctype, resp);
}

void http_respond_json(struct http_req *r, unsigned status, json_t *j)
{
	char *text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!text) {
		http_respond_error(r, 500, "internal", "cannot serialize the response");
		return;
	}
	size_t n = strlen(text);
	text[n] = '\0';
	http_local_keep_body(r, text, n);
	struct MHD_Response *resp = MHD_create_response_from_buffer(n, text, MHD_RESPMEM_MUST_FREE);
	set_response(r, status, "application/json", resp);
}

void http_respond_shared(struct http_req *r, unsigned status, const char *ctype, const void *body,
			 size_t n, void (*release)(void *cls), void *cls)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer_with_free_callback_cls(n, (void *)body, release, cls);
	if (!resp) {
		release(cls);
		http_respond_error(r, 500, "internal", "cannot build the response");
		return;
	}
	http_local_keep_body(r, body, n);
	set_response(r, status, ctype, resp);
}

void http_respond_fd(struct http_req *r, unsigned status, const char *ctype, int fd, uint64_t size)
{
	struct MHD_Response *resp = MHD_create_response_from_fd64(size, fd);
	if (!resp) {
		close(fd);
		http_respond_error(r, 500, "internal", "cannot send the file");
		return;
	}
	if (r->local && !http_req_responded(r))
		r->local->out->n = (size_t)size; /* the body stays in the file */
	set_response(r, status, ctype, resp);
}

/* The length of the well-formed UTF-8 sequence at s (n bytes left): 1..4,
 * 0 if it is not one (overlong, surrogate, above U+10FFFF, cut short). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t k = s[0] < 0x80			  ? 1
		   : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
		   : s[0] >= 0xe0 && s[0] <= 0xef ? 3
		   : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
						  : 0;
	if (!k || k > n)
		return 0;
	for (size_t i = 1; i < k; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return k;
}

static int utf8_valid(const char *s, size_t n)
{
	for (size_t i = 0, k; i < n; i += k)
		if (!(k = utf8_len((const unsigned char *)s + i, n - i)))
			return 0;
	return 1;
}

/* in as valid UTF-8 in out (cap bytes, NUL-terminated): each byte that does
 * not start a well-formed sequence becomes U+FFFD; never cuts a sequence. */
static void utf8_clean(const char *in, char *out, size_t cap)
{
	size_t n = strlen(in), o = 0;
	for (size_t i = 0, k; i < n; i += k ? k : 1) {
		k = utf8_len((const unsigned char *)in + i, n - i);
		const char *src = k ? in + i : "\xef\xbf\xbd";
		size_t len = k ? k : 3;
		if (o + len >= cap)
			break;
		memcpy(out + o, src, len);
		o += len;
	}
	out[o] = '\0';
}

/* Every message is made valid UTF-8 here (jansson refuses anything else):
 * what a request echoes (a path, a query value) cannot turn a 4xx into a 500. */
void http_respond_error(struct http_req *r, unsigned status, const char *code, const char *fmt, ...)
{
	char raw[1024], msg[3 * sizeof(raw)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	utf8_clean(raw, msg, sizeof(msg));
	json_t *j = json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg);
	free(r->err_body);
	r->err_body = json_dumps(j, JSON_COMPACT);
	http_respond_json(r, status, j);
}

struct arg_check {
	struct http_req *r;
	int bad;
	unsigned lengths, chunked; /* Content-Length, Transfer-Encoding headers */
	size_t bytes;		   /* of the headers, as sent ("key: value\r\n") */
};

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	struct arg_check *a = cls;
	(void)kind;
	a->bytes += strlen(key) + (value ? strlen(value) : 0) + 4;
	a->lengths += !strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH);
	a->chunked += !strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING);
	return MHD_YES;
}

static enum MHD_Result check_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				 size_t key_size, const char *value, size_t value_size)
{
	struct arg_check *a = cls;
	(void)kind;
	if (!utf8_valid(key, key_size) || (value && !utf8_valid(value, value_size))) {
		http_respond_error(a->r, 400, "invalid_input",
				   "query argument %.100s: not valid UTF-8", key);
		a->bad = 1;
	} else if (strlen(key) != key_size || (value && strlen(value) != value_size)) {
		http_respond_error(a->r, 400, "invalid_input",
				   "query argument %.100s: holds a NUL byte (%%00)", key);
		a->bad = 1;
	}
	return a->bad ? MHD_NO : MHD_YES;
}

/* Refuses up front (400) a path or a query argument that is not valid UTF-8
 * or that holds a NUL byte (which would silently cut a name short), and a
 * body whose length is said twice (two Content-Length headers, or one with
 * Transfer-Encoding: which one frames the body is ambiguous, the stuff of
 * request smuggling): 1 if refused. */
static int refuse_bad_text(struct http_req *r)
{
	struct arg_check a = {.r = r};
	struct local_req *l = r->local;
	if (l)
		for (size_t i = 0; i < l->nhdrs; i++)
			count_framing(&a, MHD_HEADER_KIND, l->hdrs[i].key, l->hdrs[i].value);
	else
		MHD_get_connection_values(r->conn, MHD_HEADER_KIND, count_framing, &a);
	a.bytes += strlen(r->method) + strlen(r->path);
	if (r->srv->max_header && a.bytes > r->srv->max_header) {
		http_respond_error(r, 431, "too_large",
				   "the request's headers are %zu bytes, over the limit of %zu "
				   "(--max-header)",
				   a.bytes, r->srv->max_header);
		return 1;
	}
	if (a.lengths > 1 || (a.lengths && a.chunked)) {
		http_respond_error(r, 400, "invalid_input",
				   "the body's length is given twice (%u Content-Length, %u "
				   "Transfer-Encoding headers)",
				   a.lengths, a.chunked);
		return 1;
	}
	if (!utf8_valid(r->path, strlen(r->path))) {
		http_respond_error(r, 400, "invalid_input", "the path is not valid UTF-8: %.200s",
				   r->path);
		return 1;
	}
	if (l)
		for (size_t i = 0; i < l->nargs && !a.bad; i++)
			check_arg(&a, MHD_GET_ARGUMENT_KIND, l->args[i].key, l->args[i].nkey,
				  l->args[i].value, l->args[i].nvalue);
	else
		MHD_get_connection_values_n(r->conn, MHD_GET_ARGUMENT_KIND, check_arg, &a);
	return a.bad;
}

void http_respond_oob_err(struct http_req *r, const struct oob_err *e)
{
	int code = e->code ? e->code : -EIO;
	http_respond_error(r, (unsigned)oob_err_http_status(code), oob_err_code_name(code), "%s",
			   e->msg[0] ? e->msg : "internal error");
}

static enum MHD_Result queue(struct http_req *r)
{
	if (!r->resp)
		return MHD_YES;
	enum MHD_Result rc = MHD_queue_response(r->conn, r->status, r->resp);
	MHD_destroy_response(r->resp);
	r->resp = NULL;
	r->queued = rc == MHD_YES;
	return rc;
}

/* Whether a body follows the headers. A response queued before the body is
 * read makes libmicrohttpd close the connection afterwards (the unread body
 * would be taken for the next request), which is what a refused upload
 * wants; a request without a body gets its response in the next call, once
 * libmicrohttpd counts the request as complete, and the connection is kept
 * alive. */
static int has_body(struct http_req *r)
{
	return http_req_content_length(r) > 0 ||
	       http_req_header(r, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
}

/* After a refusal the response can only be queued once the body is in
 * (libmicrohttpd refuses responses while it reads one), so the rest is read
 * and dropped, up to this much; beyond it the connection is closed. */
#define DISCARD_MAX (64u << 20)

/*
 * A refusal in the middle of a body (a chunked upload past --max-upload):
 * libmicrohttpd 0.9.75 queues no response until the body is in, and a body
 * may be far longer than DISCARD_MAX. So the error is written to the socket
 * here, the write side shut (the client sees the response and a FIN while
 * it sends), and the connection is closed once the discarding ends. The
 * socket only carries this request's body then: nothing else is written.
 */
static void raw_refuse(struct http_req *r)
{
	const union MHD_ConnectionInfo *ci =
	    r->conn ? MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
	if (!ci || !r->err_body || r->raw_sent)
		return;
	const char *reason = MHD_get_reason_phrase_for(r->status);
	char head[256];
	size_t nb = strlen(r->err_body);
	int nh = snprintf(head, sizeof(head),
			  "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\n"
			  "Content-Length: %zu\r\nX-Content-Type-Options: nosniff\r\n"
			  "Connection: close\r\n\r\n",
			  r->status, reason ? reason : "Error", nb);
	struct iovec iov[2] = {{head, (size_t)nh}, {r->err_body, nb}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
	ssize_t w;
	do
		w = sendmsg(ci->connect_fd, &m, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	r->raw_sent = 1; /* whatever was written, no second response follows */
	shutdown(ci->connect_fd, SHUT_WR);
}

/*
 * A refusal before the body (bad text, no token, a length over the limit).
 * Queued now, libmicrohttpd sends it and closes with the body unread, and a
 * client still sending may then get a reset that loses the response (curl:
 * exit 55, status 000; seen on a loaded machine). So a body we can afford
 * to read is read and dropped, the response written as it starts (a
 * lingering close, as nginx does). A client that waits for "100 Continue"
 * sends nothing before the response, and one longer than DISCARD_MAX is
 * cut: those get it at once.
 */
static int drain_before_refusing(struct http_req *r)
{
	const char *expect = http_req_header(r, "Expect");
	return !(expect && !strcasecmp(expect, "100-continue")) &&
	       http_req_content_length(r) <= (int64_t)DISCARD_MAX;
}

/* A body piece. Returns MHD_NO to drop the connection. */
enum MHD_Result http_req_on_body(struct http_req *r, const char *data, size_t n)
{
	struct http_server *s = r->srv;
	if (r->failed) {
		r->discarded += n;
		raw_refuse(r);
		return r->discarded <= DISCARD_MAX ? MHD_YES : MHD_NO;
	}
	if (r->mode == HTTP_BODY_STREAM) {
		if (s->hooks.chunk(s->ctx, r, data, n) < 0)
			r->failed = 1;
	} else if (r->nbuf + n > s->max_buffered) {
		http_respond_error(r, 413, "too_large", "request body over %zu bytes",
				   s->max_buffered);
		r->failed = 1;
	} else {
		oob_xgrow((void **)&r->buf, &r->cap, r->nbuf + n + 1, 1);
		memcpy(r->buf + r->nbuf, data, n);
		r->nbuf += n;
		r->buf[r->nbuf] = '\0';
	}
	if (r->failed && !http_req_responded(r))
		http_respond_error(r, 500, "internal", "upload refused");
	return MHD_YES;
}

static void *compute_main(void *arg)
{
	struct http_server *s = arg;
	struct compute *p = &s->pool;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->wake, &p->lock);
		struct http_req *r = p->head;
		if (!r)
			break; /* stopping, and the queue is drained */
		p->head = r->next;
		if (!p->head)
			p->tail = NULL;
		pthread_mutex_unlock(&p->lock);
		struct MHD_Connection *conn = r->conn;
		int detached = 0;
		r->detached = &detached;
		r->deferred(s->ctx, r);
		if (!detached)
			MHD_resume_connection(conn);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Hands r to the compute threads with its connection suspended: 0, or -1
 * when they are stopping (the caller then runs it itself). */
static int compute_submit(struct http_server *s, struct http_req *r)
{
	struct compute *p = &s->pool;
	pthread_mutex_lock(&p->lock);
	if (p->stopping || !p->nthreads) {
		pthread_mutex_unlock(&p->lock);
		return -1;
	}
	MHD_suspend_connection(r->conn);
	r->next = NULL;
	if (p->tail)
		p->tail->next = r;
	else
		p->head = r;
	p->tail = r;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static int compute_start(struct http_server *s, unsigned n)
{
	struct compute *p = &s->pool;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	p->threads = oob_xcalloc(n, sizeof(*p->threads));
	for (; p->nthreads < n; p->nthreads++)
		if (pthread_create(&p->threads[p->nthreads], NULL, compute_main, s) != 0)
			return -EAGAIN;
	return 0;
}

/* Lets the queued requests finish, then ends the threads. */
static void compute_stop(struct http_server *s)
{
	struct compute *p = &s->pool;
	pthread_mutex_lock(&p->lock);
	p->stopping = 1;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	free(p->threads);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
}

/* The body is in (or there was none): the route responds, here or on a
 * compute thread. Returns 1 when the request went to a compute thread. */
static int finish(struct http_server *s, struct http_req *r)
{
	r->ended = 1;
	if (!r->deferred) {
		s->hooks.end(s->ctx, r);
		return 0;
	}
	/* A request without a socket has no connection to suspend. */
	if (!r->local && compute_submit(s, r) == 0)
		return 1;
	r->deferred(s->ctx, r);
	return 0;
}

/* The steps of a request, shared by the socket path (on_access) and
 * http_serve_local. Headers are in: refuse bad text, or begin the route. */
void http_req_begin(struct http_req *r)
{
	struct http_server *s = r->srv;
	if (refuse_bad_text(r)) {
		r->failed = 1; /* no route began: drop any body */
		return;
	}
	r->mode = s->hooks.begin(s->ctx, r);
	/* A stream that makes progress is never cut: the upload limit bounds
	 * how many there are, and they may pause for long. */
	if (r->mode == HTTP_BODY_STREAM && s->upload_timeout_s && r->conn)
		MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT,
					  s->upload_timeout_s);
	int64_t len = http_req_content_length(r);
	if (r->mode == HTTP_BODY_BUFFER && len > (int64_t)s->max_buffered && !http_req_responded(r))
		http_respond_error(r, 413, "too_large", "request body over %zu bytes",
				   s->max_buffered);
}

/* The body is in (or there was none): the route responds. Returns 1 when
 * the request went to a compute thread (its connection is suspended). */
int http_req_end(struct http_req *r)
{
	struct http_server *s = r->srv;
	if (r->failed)
		OOB_DEBUG("http: %s %s: refused; %llu body bytes dropped", r->method, r->path,
			  (unsigned long long)r->discarded);
	if (!r->failed && !r->ended && finish(s, r))
		return 1;
	if (!http_req_responded(r))
		http_respond_error(r, 500, "internal", "no response for %s %s", r->method, r->path);
	return 0;
}

void http_req_free(struct http_req *r)
{
	r->srv->hooks.done(r->srv->ctx, r, r->ended);
	if (r->resp)
		MHD_destroy_response(r->resp);
	for (int i = 0; i < r->nhdr; i++) {
		free(r->hdr[i][0]);
		free(r->hdr[i][1]);
	}
	free(r->buf);
	free(r->err_body);
	free(r);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_size, void **con_cls)
{
	struct http_server *s = cls;
	struct http_req *r = *con_cls;
	(void)version;
	if (!r) {
		r = oob_xcalloc(1, sizeof(*r));
		r->srv = s;
		r->conn = c;
		r->method = method;
		r->path = url;
		*con_cls = r;
		http_req_begin(r);
		/* A request without a body is answered at the next call: queued
		 * now, libmicrohttpd would close the connection (no keep-alive). */
		if (!has_body(r))
			return MHD_YES;
		if (http_req_responded(r) && drain_before_refusing(r)) {
			r->failed = 1; /* http_req_on_body drops the body and answers */
			return MHD_YES;
		}
		return queue(r);
	}
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		return http_req_on_body(r, upload_data, n);
	}
	if (r->queued)
		return MHD_YES;
	if (r->raw_sent)
		return MHD_NO; /* answered on the socket: close it */
	if (http_req_end(r))
		return MHD_YES; /* suspended: called again once it responded */
	return queue(r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_req *r = *con_cls;
	(void)cls;
	(void)c;
	if (!r)
		return;
	OOB_DEBUG("http: %s %s -> %u%s", r->method, r->path, r->status,
		  toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection ended early)");
	http_req_free(r);
	*con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	OOB_DEBUG("libmicrohttpd: %s", msg);
}

static int make_addr(const struct http_opts *o, struct sockaddr_storage *ss, int *v6)
{
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, o->host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)o->port);
		*v6 = 0;
		return 0;
	}
	if (inet_pton(AF_INET6, o->host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)o->port);
		*v6 = 1;
		return 0;
	}
	return -EINVAL;
}

/* libmicrohttpd reports a failed bind only in its log; try it ourselves
 * first so the error says what happened. */
static int probe_bind(const struct sockaddr_storage *ss, int v6, struct oob_err *err,
		      const struct http_opts *o)
{
	int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return oob_err_set(err, -errno, "socket: %s", strerror(errno));
	int one = 1, rc = 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	socklen_t len = v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	if (bind(fd, (const struct sockaddr *)ss, len) < 0)
		rc = oob_err_set(err, -errno, "cannot listen on %s port %u: %s", o->host, o->port,
				 strerror(errno));
	close(fd);
	return rc;
}

struct http_server *http_start(const struct http_opts *o, const struct http_hooks *h, void *ctx,
			       struct oob_err *err)
{
	struct sockaddr_storage ss;
	int v6;
	if (make_addr(o, &ss, &v6) < 0) {
		oob_err_set(err, -EINVAL, "listen address \"%s\" is not numeric", o->host);
		return NULL;
	}
	if (probe_bind(&ss, v6, err, o) < 0)
		return NULL;
	struct http_server *s = oob_xcalloc(1, sizeof(*s));
	s->hooks = *h;
	s->ctx = ctx;
	s->max_buffered = o->max_buffered;
	s->upload_timeout_s = o->upload_timeout_s;
	if (compute_start(s, o->compute_threads ? o->compute_threads : 1) < 0) {
		oob_err_set(err, -EAGAIN, "cannot start %u compute threads", o->compute_threads);
		compute_stop(s);
		free(s);
		return NULL;
	}
	/* Event-driven (epoll where the platform has it): an idle or slow
	 * connection costs a socket, not a thread. */
	unsigned flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_SUSPEND_RESUME |
			 MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0);
	/* libmicrohttpd answers headers that overflow its pool itself, in
	 * HTML: a pool of twice the limit lets refuse_bad_text answer in JSON
	 * up to there. */
	s->max_header = o->max_header_bytes;
	size_t pool = 2 * (size_t)o->max_header_bytes + 16384;
	if (pool < 32768)
		pool = 32768;
	s->d = MHD_start_daemon(
	    flags, (uint16_t)o->port, NULL, NULL, on_access, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
	    NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE,
	    o->threads ? o->threads : 1, MHD_OPTION_CONNECTION_LIMIT, o->max_connections,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->max_per_ip, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
	    pool, MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s, MHD_OPTION_NOTIFY_COMPLETED,
	    on_completed, s, MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_END);
	if (!s->d) {
		oob_err_set(err, -EIO, "cannot start the HTTP server on %s port %u", o->host,
			    o->port);
		compute_stop(s);
		free(s);
		return NULL;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : o->port;
	return s;
}

unsigned http_port(const struct http_server *s)
{
	return s->port;
}

void http_stop(struct http_server *s)
{
	if (!s)
		return;
	MHD_socket listen = MHD_quiesce_daemon(s->d);
	compute_stop(s); /* every suspended connection is resumed */
	MHD_stop_daemon(s->d);
	if (listen != MHD_INVALID_SOCKET)
		close(listen); /* quiesced: ours to close */
	free(s);
}
