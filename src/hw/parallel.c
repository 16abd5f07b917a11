/* SPDX-License-Identifier: Apache-2.0 */
/* Reading sysfs is one openat/read/close per value, and on a node with a thousand VFs the
 * syscalls are the whole cost: the per-device loops run on every online CPU (up to 8). Each
 * item writes only its own slot, so the workers share nothing but the index counter and the
 * first error. With a recorder set (snapshot) everything stays on one thread, in order. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/hw-internal.h"

struct par {
	struct hw_build *b;
	size_t n;
	int (*fn)(struct hw_build *b, size_t i, void *ud);
	void *ud;
	atomic_size_t next;
	atomic_int err;
};

static void *worker(void *arg)
{
	struct par *p = arg;

	for (;;) {
		size_t i = atomic_fetch_add(&p->next, 1);
		int r;

		if (i >= p->n || atomic_load(&p->err))
			return NULL;
		r = p->fn(p->b, i, p->ud);
		if (r < 0) {
			int zero = 0;
			atomic_compare_exchange_strong(&p->err, &zero, r);
		}
	}
}

int hw_parallel_for(struct hw_build *b, size_t n, int (*fn)(struct hw_build *b, size_t i, void *ud),
		    void *ud)
{
	struct par p = { .b = b, .n = n, .fn = fn, .ud = ud };
	pthread_t tid[8];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nt = cpus > 1 ? (size_t)(cpus < 8 ? cpus : 8) : 1, started = 0;

	atomic_init(&p.next, 0);
	atomic_init(&p.err, 0);
	/* small loops are not worth a thread; a recorder must see accesses in order */
	if (n < 64 || b->ctx->recorder)
		nt = 1;
	for (size_t t = 1; t < nt; t++) {
		if (pthread_create(&tid[started], NULL, worker, &p) != 0)
			break;
		started++;
	}
	worker(&p);
	for (size_t t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	return atomic_load(&p.err);
}

int hw_load_item(struct hw_build *b, size_t i, const struct hw_dir *class_dir, const char *name,
		 int (*load)(struct hw_build *b, size_t i, const struct hw_dir *class_dir,
			     const char *name))
{
	struct hw_error e = { 0 };
	struct hw_build mine = *b; /* same node and arrays; only the error record is private */
	int r;

	mine.err = &e;
	r = load(&mine, i, class_dir, name);
	if (r >= 0)
		return r;
	if ((r == -ENOENT || r == -ENODEV) && !hw_dir_exists(b->ctx, class_dir, name)) {
		b->gone[i] = true;
		return 0;
	}
	if ((b->flags & HW_LOAD_PARTIAL) && r != -ENOMEM) {
		if (!e.err)
			hw_fail(&e, class_dir, name, r);
		b->gone[i] = true;
		return hw_skip(b, i, &e);
	}
	return hw_fail(b->err, NULL, e.err ? e.path : name, e.err ? e.err : r);
}

int hw_skip(struct hw_build *b, size_t i, const struct hw_error *e)
{
	struct hw_skips *s = &b->skips[i];
	struct hw_error *v = realloc(s->v, (s->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	s->v = v;
	s->v[s->n++] = *e;
	return 0;
}

int hw_items_begin(struct hw_build *b, size_t n)
{
	b->gone = calloc(n ? n : 1, sizeof(*b->gone));
	if (b->flags & HW_LOAD_PARTIAL)
		b->skips = calloc(n ? n : 1, sizeof(*b->skips));
	if (!b->gone || ((b->flags & HW_LOAD_PARTIAL) && !b->skips)) {
		free(b->gone);
		free(b->skips);
		b->gone = NULL;
		b->skips = NULL;
		return -ENOMEM;
	}
	return 0;
}

int hw_items_end(struct hw_build *b, size_t n, int r)
{
	struct hw_node *node = b->node;

	for (size_t i = 0; b->skips && i < n; i++) {
		struct hw_skips *s = &b->skips[i];
		struct hw_error *v = NULL;

		if (s->n && r >= 0)
			v = realloc(node->skipped, (node->n_skipped + s->n) * sizeof(*v));
		if (s->n && r >= 0 && !v)
			r = -ENOMEM;
		if (v) {
			memcpy(v + node->n_skipped, s->v, s->n * sizeof(*v));
			node->skipped = v;
			node->n_skipped += s->n;
		}
		free(s->v);
	}
	free(b->skips);
	free(b->gone);
	b->skips = NULL;
	b->gone = NULL;
	return r;
}
