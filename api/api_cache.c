#include "api_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/oob_mem.h"

struct rendered {
	char key[128];
	char *body;
	size_t len;
};

struct api_cache_ref {
	struct rendered out[API_CACHE_RENDERED]; /* out[0] the newest */
	int64_t job;
	int64_t mtime_ns;
	int64_t size;
	struct result *r;
	unsigned refs; /* the table's own reference counts as one */
	int in_table;
	uint64_t used;
};

struct api_cache {
	pthread_mutex_t lock;
	struct api_cache_ref *slot[API_CACHE_SLOTS];
	uint64_t tick;
};

struct api_cache *api_cache_new(void)
{
	struct api_cache *c = oob_xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

static void unref_locked(struct api_cache_ref *e)
{
	if (--e->refs == 0) {
		for (int i = 0; i < API_CACHE_RENDERED; i++)
			free(e->out[i].body);
		result_free(e->r);
		free(e);
	}
}

void api_cache_free(struct api_cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < API_CACHE_SLOTS; i++)
		if (c->slot[i])
			unref_locked(c->slot[i]);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static int file_version(const char *path, int64_t *mtime_ns, int64_t *size)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	*mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	*size = (int64_t)st.st_size;
	return 0;
}

static void drop_slot_locked(struct api_cache *c, int i)
{
	c->slot[i]->in_table = 0;
	unref_locked(c->slot[i]);
	c->slot[i] = NULL;
}

/* A slot for a new entry: a free one, else the least recently used. */
static int victim_locked(struct api_cache *c)
{
	int best = 0;
	for (int i = 0; i < API_CACHE_SLOTS; i++) {
		if (!c->slot[i])
			return i;
		if (c->slot[i]->used < c->slot[best]->used)
			best = i;
	}
	drop_slot_locked(c, best);
	return best;
}

static struct api_cache_ref *find_locked(struct api_cache *c, int64_t job, int64_t mt, int64_t size)
{
	for (int i = 0; i < API_CACHE_SLOTS; i++) {
		struct api_cache_ref *e = c->slot[i];
		if (!e || e->job != job)
			continue;
		if (e->mtime_ns == mt && e->size == size) {
			e->refs++;
			e->used = ++c->tick;
			return e;
		}
		drop_slot_locked(c, i); /* a stale version */
	}
	return NULL;
}

struct api_cache_ref *api_cache_get(struct api_cache *c, int64_t job, const char *path,
				    const struct result **r, struct oob_err *err)
{
	int64_t mt = 0, size = 0;
	int rc = file_version(path, &mt, &size);
	if (rc < 0) {
		oob_err_set(err, rc, "result of job %lld: %s", (long long)job, strerror(-rc));
		return NULL;
	}
	pthread_mutex_lock(&c->lock);
	struct api_cache_ref *e = find_locked(c, job, mt, size);
	pthread_mutex_unlock(&c->lock);
	if (e) {
		*r = e->r;
		return e;
	}
	struct result *loaded = result_load(path, err);
	if (!loaded)
		return NULL;
	e = oob_xcalloc(1, sizeof(*e));
	e->job = job;
	e->mtime_ns = mt;
	e->size = size;
	e->r = loaded;
	e->refs = 2; /* the table's and the caller's */
	pthread_mutex_lock(&c->lock);
	struct api_cache_ref *other = find_locked(c, job, mt, size);
	if (other) { /* another request loaded it meanwhile */
		pthread_mutex_unlock(&c->lock);
		result_free(loaded);
		free(e);
		*r = other->r;
		return other;
	}
	int i = victim_locked(c);
	e->in_table = 1;
	e->used = ++c->tick;
	c->slot[i] = e;
	pthread_mutex_unlock(&c->lock);
	*r = e->r;
	return e;
}

void api_cache_put(struct api_cache *c, struct api_cache_ref *ref)
{
	if (!ref)
		return;
	pthread_mutex_lock(&c->lock);
	unref_locked(ref);
	pthread_mutex_unlock(&c->lock);
}

void api_cache_forget(struct api_cache *c, int64_t job)
{
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < API_CACHE_SLOTS; i++)
		if (c->slot[i] && c->slot[i]->job == job)
			drop_slot_locked(c, i);
	pthread_mutex_unlock(&c->lock);
}

char *api_cache_rendered(struct api_cache *c, struct api_cache_ref *ref, const char *key,
			 size_t *len)
{
	char *copy = NULL;
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < API_CACHE_RENDERED && !copy; i++) {
		struct rendered *o = &ref->out[i];
		if (o->body && !strcmp(o->key, key)) {
			copy = oob_xmalloc(o->len + 1);
			memcpy(copy, o->body, o->len + 1);
			*len = o->len;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return copy;
}

void api_cache_keep_rendered(struct api_cache *c, struct api_cache_ref *ref, const char *key,
			     const char *body, size_t len)
{
	if (strlen(key) >= sizeof(ref->out[0].key))
		return;
	char *copy = oob_xmalloc(len + 1);
	memcpy(copy, body, len);
	copy[len] = '\0';
	pthread_mutex_lock(&c->lock);
	free(ref->out[API_CACHE_RENDERED - 1].body);
	memmove(&ref->out[1], &ref->out[0], (API_CACHE_RENDERED - 1) * sizeof(ref->out[0]));
	snprintf(ref->out[0].key, sizeof(ref->out[0].key), "%s", key);
	ref->out[0].body = copy;
	ref->out[0].len = len;
	pthread_mutex_unlock(&c->lock);
}
