/*
 * http_serve_local: a request served without a socket goes through the same
 * steps as one from libmicrohttpd. A recording route checks what the
 * handlers see (decoded path and query, headers, the body in pieces) and
 * what the caller gets back; the expected values are worked out by hand
 * from the raw request text.
 */
#include "http.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "oobtest.h"

/* What the route saw. */
static struct seen {
	int begins, ends, dones, complete;
	char path[256], name[256], hdr[256];
	size_t chunks, bytes;
	char body[256];
	int mode; /* what begin() asks for */
} seen;

static int on_begin(void *ctx, struct http_req *r)
{
	const char *v;
	(void)ctx;
	seen.begins++;
	snprintf(seen.path, sizeof(seen.path), "%s", http_req_path(r));
	snprintf(seen.name, sizeof(seen.name), "%s", (v = http_req_arg(r, "name")) ? v : "(none)");
	snprintf(seen.hdr, sizeof(seen.hdr), "%s", (v = http_req_header(r, "x-thing")) ? v : "");
	if (!strcmp(http_req_method(r), "GET"))
		http_respond(r, 200, "text/plain", "got", 3);
	return seen.mode;
}

static int on_chunk(void *ctx, struct http_req *r, const void *p, size_t n)
{
	(void)ctx;
	if (seen.bytes + n >= sizeof(seen.body)) {
		http_respond_error(r, 413, "too_large", "over %zu", sizeof(seen.body));
		return -EFBIG;
	}
	memcpy(seen.body + seen.bytes, p, n);
	seen.bytes += n;
	seen.chunks++;
	return 0;
}

static void on_end(void *ctx, struct http_req *r)
{
	size_t n;
	(void)ctx;
	seen.ends++;
	if (seen.mode == HTTP_BODY_BUFFER) {
		const char *b = http_req_body(r, &n);
		memcpy(seen.body, b, n < sizeof(seen.body) ? n : sizeof(seen.body) - 1);
		seen.bytes = n;
	}
	http_respond_json(r, 201, json_pack("{s:I}", "bytes", (json_int_t)seen.bytes));
}

static void on_done(void *ctx, struct http_req *r, int complete)
{
	(void)ctx;
	(void)r;
	seen.dones++;
	seen.complete = complete;
}

static const struct http_hooks hooks = {on_begin, on_chunk, on_end, on_done};

static void serve(const char *method, const char *url, const char *const (*h)[2], size_t nh,
		  const char *body, size_t piece, int mode, struct http_local_resp *out)
{
	memset(&seen, 0, sizeof(seen));
	seen.mode = mode;
	struct http_local_req in = {method, url, h, nh, body, body ? strlen(body) : 0, piece};
	http_serve_local(&hooks, NULL, 16, &in, out);
}

static void query_and_headers_decoded(void)
{
	static const char *const h[][2] = {{"X-Thing", "a b"}};
	struct http_local_resp out;
	serve("GET", "/api/x%2Fy?other=1&name=a+b%2Bc%C3%A9&flag", h, 1, NULL, 0, 0, &out);
	CHECK_EQ(out.status, 200);
	CHECK_STR(out.ctype, "text/plain");
	CHECK_EQ(out.n, 3);
	CHECK_STR(out.body, "got");
	CHECK_STR(seen.path, "/api/x/y");
	CHECK_STR(seen.name, "a b+c\xc3\xa9");
	CHECK_STR(seen.hdr, "a b"); /* header names are case-insensitive */
	/* answered with the headers: no end(), done() says incomplete */
	CHECK_EQ(seen.begins, 1);
	CHECK_EQ(seen.ends, 0);
	CHECK_EQ(seen.dones, 1);
	CHECK_EQ(seen.complete, 0);
	free(out.body);
}

static void streamed_body_in_pieces(void)
{
	struct http_local_resp out;
	serve("POST", "/up", NULL, 0, "0123456789abcdefghij", 3, HTTP_BODY_STREAM, &out);
	CHECK_EQ(out.status, 201);
	CHECK_STR(out.body, "{\"bytes\":20}");
	CHECK_EQ(seen.chunks, 7); /* 20 bytes in pieces of 3 */
	CHECK(memcmp(seen.body, "0123456789abcdefghij", 20) == 0);
	CHECK_EQ(seen.ends, 1);
	CHECK_EQ(seen.complete, 1);
	free(out.body);
}

static void buffered_body_bounded(void)
{
	struct http_local_resp out;
	serve("POST", "/b", NULL, 0, "{\"a\": 1}", 0, HTTP_BODY_BUFFER, &out);
	CHECK_EQ(out.status, 201);
	CHECK_EQ(seen.bytes, 8);
	CHECK(memcmp(seen.body, "{\"a\": 1}", 8) == 0);
	free(out.body);
	/* 17 bytes over a 16-byte bound: refused by Content-Length up front */
	serve("POST", "/b", NULL, 0, "0123456789abcdefg", 0, HTTP_BODY_BUFFER, &out);
	CHECK_EQ(out.status, 413);
	CHECK_EQ(seen.ends, 0);
	CHECK(strstr(out.body, "\"too_large\"") != NULL);
	free(out.body);
}

static void bad_text_refused_before_the_route(void)
{
	static const char *const two[][2] = {{"Content-Length", "3"}, {"content-length", "3"}};
	struct http_local_resp out;
	serve("GET", "/x?name=%FF", NULL, 0, NULL, 0, 0, &out);
	CHECK_EQ(out.status, 400);
	CHECK_EQ(seen.begins, 0);
	free(out.body);
	serve("GET", "/x?name=a%00b", NULL, 0, NULL, 0, 0, &out);
	CHECK_EQ(out.status, 400);
	CHECK(strstr(out.body, "NUL") != NULL);
	free(out.body);
	serve("GET", "/%C0%AF", NULL, 0, NULL, 0, 0, &out);
	CHECK_EQ(out.status, 400);
	free(out.body);
	serve("POST", "/x", two, 2, "abc", 0, HTTP_BODY_STREAM, &out);
	CHECK_EQ(out.status, 400);
	CHECK_EQ(seen.begins, 0);
	CHECK_EQ(seen.chunks, 0);
	free(out.body);
}

static void refused_chunk_ends_the_body(void)
{
	struct http_local_resp out;
	char big[600];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	serve("PUT", "/up", NULL, 0, big, 100, HTTP_BODY_STREAM, &out);
	CHECK_EQ(out.status, 413);
	CHECK_EQ(seen.chunks, 2); /* the third piece would pass 256 bytes */
	CHECK_EQ(seen.ends, 0);
	CHECK_EQ(seen.dones, 1);
	CHECK_EQ(seen.complete, 0);
	free(out.body);
}

int main(void)
{
	OOBTEST_BEGIN("test_http_local");
	RUN(query_and_headers_decoded);
	RUN(streamed_body_in_pieces);
	RUN(buffered_body_bounded);
	RUN(bad_text_refused_before_the_route);
	RUN(refused_chunk_ends_the_body);
	return OOBTEST_END();
}
