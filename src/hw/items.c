/* SPDX-License-Identifier: Apache-2.0 */
/* The loaders' loops over devices, netdevs, PCI functions and char devices: each item read on
 * its own (what vanished or could not be read is left out, not the whole load), in order, on
 * the calling thread. They once ran on every CPU, which bought wall time with CPU time: the
 * threads share one file table and one set of credentials, whose locks and reference counts
 * each open and close then bounces between the CPUs, and glibc makes every later syscall a
 * cancellation point. CPU time is what `rdmak list` and the node's daemons are held to
 * (docs/list-json.md). */
#include <errno.h>
#include <stdlib.h>

#include "hw/hw-internal.h"

int hw_for_items(struct hw_build *b, size_t n, int (*fn)(struct hw_build *b, size_t i, void *ud),
		 void *ud)
{
	for (size_t i = 0; i < n; i++) {
		int r = fn(b, i, ud);

		if (r < 0)
			return r;
	}
	return 0;
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
		return hw_skip(b, &e);
	}
	return hw_fail(b->err, NULL, e.err ? e.path : name, e.err ? e.err : r);
}

int hw_skip(struct hw_build *b, const struct hw_error *e)
{
	struct hw_node *node = b->node;
	struct hw_error *v = realloc(node->skipped, (node->n_skipped + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	node->skipped = v;
	node->skipped[node->n_skipped++] = *e;
	return 0;
}

int hw_items_begin(struct hw_build *b, size_t n)
{
	b->gone = calloc(n ? n : 1, sizeof(*b->gone));
	return b->gone ? 0 : -ENOMEM;
}

int hw_items_end(struct hw_build *b, int r)
{
	free(b->gone);
	b->gone = NULL;
	return r;
}
