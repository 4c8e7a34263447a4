#include "upload.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "util/oob_mem.h"

struct stream {
	int64_t id;
	uint64_t gen; /* bumped on every growth, so waiters see progress */
	struct stream *next;
};

struct upload_registry {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	unsigned max, active;
	struct stream *streams;
};

struct upload_registry *upload_registry_new(unsigned max_uploads)
{
	struct upload_registry *u = oob_xcalloc(1, sizeof(*u));
	pthread_mutex_init(&u->lock, NULL);
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&u->changed, &a);
	pthread_condattr_destroy(&a);
	u->max = max_uploads ? max_uploads : 1;
	return u;
}

void upload_registry_free(struct upload_registry *u)
{
	if (!u)
		return;
	while (u->streams) {
		struct stream *s = u->streams;
		u->streams = s->next;
		free(s);
	}
	pthread_cond_destroy(&u->changed);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

int upload_begin(struct upload_registry *u)
{
	int rc = 0;
	pthread_mutex_lock(&u->lock);
	if (u->active >= u->max)
		rc = -EBUSY;
	else
		u->active++;
	pthread_mutex_unlock(&u->lock);
	return rc;
}

void upload_end(struct upload_registry *u)
{
	pthread_mutex_lock(&u->lock);
	if (u->active)
		u->active--;
	pthread_mutex_unlock(&u->lock);
}

unsigned upload_active(struct upload_registry *u)
{
	pthread_mutex_lock(&u->lock);
	unsigned n = u->active;
	pthread_mutex_unlock(&u->lock);
	return n;
}

static struct stream **find(struct upload_registry *u, int64_t id)
{
	struct stream **pp = &u->streams;
	while (*pp && (*pp)->id != id)
		pp = &(*pp)->next;
	return pp;
}

void upload_stream_open(struct upload_registry *u, int64_t id)
{
	pthread_mutex_lock(&u->lock);
	if (!*find(u, id)) {
		struct stream *s = oob_xcalloc(1, sizeof(*s));
		s->id = id;
		s->next = u->streams;
		u->streams = s;
	}
	pthread_mutex_unlock(&u->lock);
}

void upload_stream_close(struct upload_registry *u, int64_t id)
{
	pthread_mutex_lock(&u->lock);
	struct stream **pp = find(u, id), *s = *pp;
	if (s) {
		*pp = s->next;
		free(s);
	}
	pthread_cond_broadcast(&u->changed);
	pthread_mutex_unlock(&u->lock);
}

void upload_stream_grew(struct upload_registry *u, int64_t id)
{
	pthread_mutex_lock(&u->lock);
	struct stream *s = *find(u, id);
	if (s) {
		s->gen++;
		pthread_cond_broadcast(&u->changed);
	}
	pthread_mutex_unlock(&u->lock);
}

int upload_stream_is_open(struct upload_registry *u, int64_t id)
{
	pthread_mutex_lock(&u->lock);
	int open = *find(u, id) != NULL;
	pthread_mutex_unlock(&u->lock);
	return open;
}

int upload_stream_wait(struct upload_registry *u, int64_t id, unsigned ms)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&u->lock);
	struct stream *s = *find(u, id);
	uint64_t gen = s ? s->gen : 0;
	int rc = 0;
	while ((s = *find(u, id)) && s->gen == gen && rc == 0)
		rc = pthread_cond_timedwait(&u->changed, &u->lock, &until);
	int open = *find(u, id) != NULL;
	pthread_mutex_unlock(&u->lock);
	return open;
}
