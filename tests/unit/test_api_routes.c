/*
 * api_routes: how a request's path picks its route, through the server's
 * own request steps (http_serve_local with api_hooks). Only paths that no
 * handler needs state for: the answers are the table's, worked out by hand.
 */
#include "api_routes.h"

#include <stdlib.h>
#include <string.h>

#include "oobtest.h"

static unsigned status_of(const char *method, const char *url, char *body, size_t n)
{
	static struct settings cfg;
	struct api_ctx c = {.cfg = &cfg};
	struct http_local_req in = {method, url, NULL, 0, NULL, 0, 0};
	struct http_local_resp out;
	settings_defaults(&cfg);
	http_serve_local(api_hooks(), &c, 1024, &in, &out);
	snprintf(body, n, "%s", out.body ? out.body : "");
	free(out.body);
	return out.status;
}

/* Found by fuzz_request: an empty path (a request target of "?x") made the
 * static-file catch-all read past the end of the path. */
static void path_without_leading_slash_is_404(void)
{
	char body[512];
	CHECK_EQ(status_of("GET", "", body, sizeof(body)), 404);
	CHECK(strstr(body, "\"not_found\"") != NULL);
	CHECK_EQ(status_of("GET", "?a=b", body, sizeof(body)), 404);
	CHECK_EQ(status_of("GET", "api/v1/health", body, sizeof(body)), 404);
	CHECK_EQ(status_of("DELETE", "x", body, sizeof(body)), 404);
}

static void method_not_allowed_lists_the_others(void)
{
	char body[512];
	CHECK_EQ(status_of("PATCH", "/api/v1/jobs/7", body, sizeof(body)), 405);
	CHECK(strstr(body, "allowed: GET, HEAD, DELETE") != NULL);
	CHECK_EQ(status_of("GET", "/api/v1/jobs/0", body, sizeof(body)), 404); /* ids are > 0 */
	CHECK_EQ(status_of("GET", "/api/v1/jobs/x1", body, sizeof(body)), 404);
}

int main(void)
{
	OOBTEST_BEGIN("test_api_routes");
	RUN(path_without_leading_slash_is_404);
	RUN(method_not_allowed_lists_the_others);
	return OOBTEST_END();
}
