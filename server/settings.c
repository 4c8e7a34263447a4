#include "settings.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "result.h"

void settings_defaults(struct settings *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->listen_host, sizeof(c->listen_host), "127.0.0.1");
	c->listen_port = 8080;
	snprintf(c->data_dir, sizeof(c->data_dir), "./oobprof-data");
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	c->workers = n > 0 ? (unsigned)n : 1;
	c->max_upload = (uint64_t)64 << 30;
	c->log_level = OOB_LOG_INFO;
	c->max_connections = 1024;
	c->max_per_ip = 768;
	c->http_threads = 4;
	c->compute_threads = 4;
	c->upload_timeout_s = 600;
	c->cache_bytes = (uint64_t)256 << 20;
	c->job_memory = (uint64_t)4 << 30;
	c->max_events = RESULT_MAX_EVENTS;
	c->max_uploads = 16;
	c->max_header_bytes = 32 * 1024;
	c->timeout_s = 30;
	c->lease_s = 30;
}

int settings_parse_size(const char *s, uint64_t *out)
{
	char *end;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	unsigned shift = 0;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	case '\0':
		break;
	default:
		return -EINVAL;
	}
	if (shift) {
		end++;
		if (toupper((unsigned char)*end) == 'I')
			end++;
		if (toupper((unsigned char)*end) == 'B')
			end++;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

/* "127.0.0.1:8080", "[::1]:8080", "localhost:80"; the host must be numeric
 * so that what we bind is exactly what the operator wrote. */
static int parse_listen(struct settings *c, const char *v, struct oob_err *err)
{
	const char *colon = strrchr(v, ':');
	char host[64];
	unsigned port;
	if (!colon || colon == v || parse_uint(colon + 1, 0, 65535, &port) < 0)
		goto bad;
	size_t hl = (size_t)(colon - v);
	if (v[0] == '[') {
		if (hl < 3 || v[hl - 1] != ']')
			goto bad;
		v++;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		goto bad;
	memcpy(host, v, hl);
	host[hl] = '\0';
	if (strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	unsigned char buf[16];
	if (inet_pton(AF_INET, host, buf) != 1 && inet_pton(AF_INET6, host, buf) != 1)
		goto bad;
	snprintf(c->listen_host, sizeof(c->listen_host), "%s", host);
	c->listen_port = port;
	return 0;
bad:
	return oob_err_set(err, -EINVAL,
			   "listen: \"%s\" is not ADDRESS:PORT with a numeric address "
			   "(e.g. 127.0.0.1:8080, [::1]:8080)",
			   v);
}

static int set_path(char *dst, const char *key, const char *v, struct oob_err *err)
{
	if (strlen(v) >= SETTINGS_PATH_MAX)
		return oob_err_set(err, -EINVAL, "%s: path longer than %d bytes", key,
				   SETTINGS_PATH_MAX - 1);
	snprintf(dst, SETTINGS_PATH_MAX, "%s", v);
	return 0;
}

static int set_bool(int *dst, const char *key, const char *v, struct oob_err *err)
{
	if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on"))
		*dst = 1;
	else if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off"))
		*dst = 0;
	else
		return oob_err_set(err, -EINVAL, "%s: \"%s\" is not yes/no", key, v);
	return 0;
}

struct uint_key {
	const char *key;
	size_t off;
	unsigned lo, hi;
};

static const struct uint_key uint_keys[] = {
    {"workers", offsetof(struct settings, workers), 1, 256},
    {"max-connections", offsetof(struct settings, max_connections), 4, 100000},
    {"max-uploads", offsetof(struct settings, max_uploads), 1, 10000},
    {"max-header", offsetof(struct settings, max_header_bytes), 4096, 1 << 24},
    {"timeout", offsetof(struct settings, timeout_s), 1, 86400},
    {"max-per-ip", offsetof(struct settings, max_per_ip), 0, 100000},
    {"http-threads", offsetof(struct settings, http_threads), 1, 256},
    {"compute-threads", offsetof(struct settings, compute_threads), 1, 256},
    {"upload-timeout", offsetof(struct settings, upload_timeout_s), 1, 86400},
    {"lease", offsetof(struct settings, lease_s), 3, 86400},
    {"max-events", offsetof(struct settings, max_events), 1000, 4000000000u},
};

struct size_key {
	const char *key;
	size_t off;
	int zero_ok; /* 0 means "no limit" */
};

static const struct size_key size_keys[] = {
    {"cache-size", offsetof(struct settings, cache_bytes), 0},
    {"max-upload", offsetof(struct settings, max_upload), 0},
    {"job-memory", offsetof(struct settings, job_memory), 1},
};

static int set_size_key(struct settings *c, const struct size_key *k, const char *v,
			struct oob_err *err)
{
	uint64_t *dst = (uint64_t *)((char *)c + k->off);
	if (settings_parse_size(v, dst) < 0 || (*dst == 0 && !k->zero_ok))
		return oob_err_set(err, -EINVAL, "%s: \"%s\" is not a size (e.g. 512M, 4G%s)",
				   k->key, v, k->zero_ok ? "; 0: no limit" : "");
	return 0;
}

static int set_uint_key(struct settings *c, const struct uint_key *k, const char *v,
			struct oob_err *err)
{
	unsigned *dst = (unsigned *)((char *)c + k->off);
	if (parse_uint(v, k->lo, k->hi, dst) < 0)
		return oob_err_set(err, -EINVAL, "%s: \"%s\" is not an integer in %u..%u", k->key,
				   v, k->lo, k->hi);
	return 0;
}

int settings_set(struct settings *c, const char *key, const char *v, struct oob_err *err)
{
	for (size_t i = 0; i < sizeof(uint_keys) / sizeof(uint_keys[0]); i++)
		if (strcmp(key, uint_keys[i].key) == 0)
			return set_uint_key(c, &uint_keys[i], v, err);
	if (strcmp(key, "listen") == 0)
		return parse_listen(c, v, err);
	if (strcmp(key, "data") == 0)
		return set_path(c->data_dir, key, v, err);
	if (strcmp(key, "token-file") == 0)
		return set_path(c->token_file, key, v, err);
	if (strcmp(key, "static") == 0)
		return set_path(c->static_dir, key, v, err);
	if (strcmp(key, "port-file") == 0)
		return set_path(c->port_file, key, v, err);
	if (strcmp(key, "catalog") == 0)
		return set_path(c->catalog, key, v, err);
	if (strcmp(key, "node-id") == 0) {
		if (!*v || strlen(v) >= sizeof(c->node_id) || strpbrk(v, " \t\"\\"))
			return oob_err_set(err, -EINVAL,
					   "node-id: 1 to %zu characters, no blanks or quotes",
					   sizeof(c->node_id) - 1);
		snprintf(c->node_id, sizeof(c->node_id), "%s", v);
		return 0;
	}
	if (strcmp(key, "auth-reads") == 0)
		return set_bool(&c->auth_reads, key, v, err);
	for (size_t i = 0; i < sizeof(size_keys) / sizeof(size_keys[0]); i++)
		if (strcmp(key, size_keys[i].key) == 0)
			return set_size_key(c, &size_keys[i], v, err);
	if (strcmp(key, "log-level") == 0) {
		if (oob_log_parse_level(v, &c->log_level) < 0)
			return oob_err_set(
			    err, -EINVAL, "log-level: \"%s\" is not error, warn, info or debug", v);
		return 0;
	}
	return oob_err_set(err, -EINVAL, "unknown setting \"%s\" (see --help)", key);
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int load_line(struct settings *c, char *line, struct oob_err *err)
{
	char *s = trim(line);
	if (*s == '\0' || *s == '#')
		return 0;
	char *eq = strchr(s, '=');
	if (!eq)
		return oob_err_set(err, -EINVAL, "expected \"key = value\"");
	*eq = '\0';
	return settings_set(c, trim(s), trim(eq + 1), err);
}

int settings_load_file(struct settings *c, const char *path, struct oob_err *err)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return oob_err_set(err, -errno, "config %s: %s", path, strerror(errno));
	char line[4096];
	unsigned lineno = 0;
	int rc = 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			rc = oob_err_set(err, -EINVAL, "config %s: line %u: longer than %zu bytes",
					 path, lineno, sizeof(line) - 2);
			goto out;
		}
		rc = load_line(c, line, err);
		if (rc < 0) {
			oob_err_prefix(err, "config %s: line %u", path, lineno);
			goto out;
		}
	}
	if (ferror(f))
		rc = oob_err_set(err, -EIO, "config %s: read error", path);
out:
	fclose(f);
	return rc;
}

static int is_flag(const char *name)
{
	return !strcmp(name, "auth-reads") || !strcmp(name, "print-routes") ||
	       !strcmp(name, "help") || !strcmp(name, "version");
}

static int apply_flag(struct settings *c, const char *name)
{
	if (!strcmp(name, "auth-reads"))
		c->auth_reads = 1;
	else if (!strcmp(name, "print-routes"))
		c->print_routes = 1;
	else if (!strcmp(name, "help"))
		c->help = 1;
	else
		c->version = 1;
	return 0;
}

/* Splits argv[*i] into a key and a value (from "=..." or the next argument). */
static int next_arg(int argc, char **argv, int *i, char *key, size_t keysz, const char **val,
		    struct oob_err *err)
{
	const char *a = argv[*i];
	if (strncmp(a, "--", 2) != 0 || a[2] == '\0')
		return oob_err_set(err, -EINVAL, "unexpected argument \"%s\" (see --help)", a);
	a += 2;
	const char *eq = strchr(a, '=');
	size_t kl = eq ? (size_t)(eq - a) : strlen(a);
	if (kl >= keysz)
		return oob_err_set(err, -EINVAL, "unknown flag --%s", a);
	memcpy(key, a, kl);
	key[kl] = '\0';
	*val = NULL;
	if (eq)
		*val = eq + 1;
	else if (!is_flag(key)) {
		if (*i + 1 >= argc)
			return oob_err_set(err, -EINVAL, "--%s needs a value", key);
		*val = argv[++*i];
	}
	return 0;
}

int settings_parse_args(struct settings *c, int argc, char **argv, struct oob_err *err)
{
	char key[64];
	const char *val;
	int rc;
	/* The file first, so that flags override it wherever --config appears. */
	for (int i = 1; i < argc; i++) {
		if ((rc = next_arg(argc, argv, &i, key, sizeof(key), &val, err)) < 0)
			return rc;
		if (!strcmp(key, "config") && (rc = settings_load_file(c, val, err)) < 0)
			return rc;
	}
	for (int i = 1; i < argc; i++) {
		if ((rc = next_arg(argc, argv, &i, key, sizeof(key), &val, err)) < 0)
			return rc;
		if (!strcmp(key, "config"))
			continue;
		if (is_flag(key) && !val)
			rc = apply_flag(c, key);
		else if (is_flag(key) && strcmp(key, "auth-reads") != 0)
			rc = oob_err_set(err, -EINVAL, "--%s takes no value", key);
		else
			rc = settings_set(c, key, val, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

const char *settings_usage(void)
{
	return "usage: oobprofd [options]\n"
	       "  --listen ADDR:PORT    address to bind (default 127.0.0.1:8080; port 0 = any)\n"
	       "  --data DIR            data folder: catalog, blobs, results (default "
	       "./oobprof-data)\n"
	       "  --workers N           job worker threads (default: online cores)\n"
	       "  --max-upload SIZE     largest accepted body, e.g. 512M (default 64G)\n"
	       "  --token-file F        require \"Authorization: Bearer <token>\" for writes\n"
	       "  --auth-reads          with --token-file: for reads too\n"
	       "  --static DIR          viewer files served at / (default: the bundled folder)\n"
	       "  --config FILE         \"key = value\" lines, keys named like these flags\n"
	       "  --log-level L         error, warn, info (default) or debug\n"
	       "  --max-connections N   simultaneous connections (default 1024)\n"
	       "  --max-per-ip N        connections per client address (default 768; 0 = no "
	       "limit)\n"
	       "  --max-uploads N       simultaneous uploads (default 16)\n"
	       "  --max-header BYTES    request line + headers (default 32768)\n"
	       "  --timeout SECONDS     idle connection timeout (default 30)\n"
	       "  --upload-timeout S    idle timeout within a streamed upload (default 600)\n"
	       "  --http-threads N      event-loop threads serving connections (default 4)\n"
	       "  --compute-threads N   threads computing flame graphs, exports... (default 4)\n"
	       "  --cache-size SIZE     loaded results and rendered views kept (default 256M)\n"
	       "  --job-memory SIZE     resident memory of one job; beyond, it fails (default 4G;\n"
	       "                        0: no limit)\n"
	       "  --max-events N        stack events a job keeps for its timeline and evented\n"
	       "                        exports, about 6 bytes each on disk (default 200000000)\n"
	       "  --port-file F         write the bound port to F once listening\n"
	       "  --catalog WHERE       postgresql://... (or postgres: in the config file) for a\n"
	       "                        catalog and job queue shared by several nodes with one\n"
	       "                        --data folder (default: DATA/catalog.db, SQLite)\n"
	       "  --node-id NAME        this node in job leases (default: host name:port)\n"
	       "  --lease SECONDS       a running job's lease on a shared catalog (default 30)\n"
	       "  --print-routes        print the API routes and exit\n"
	       "  --version, --help\n";
}
