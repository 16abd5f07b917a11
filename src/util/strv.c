/* SPDX-License-Identifier: Apache-2.0 */
#include "util/strv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

size_t strv_length(char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

char *strv_join(char *const *v, const char *sep)
{
	size_t len = 0, sl = strlen(sep), n = strv_length(v);
	char *s, *p;

	for (size_t i = 0; i < n; i++)
		len += strlen(v[i]) + (i ? sl : 0);
	s = p = malloc(len + 1);
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (i) {
			memcpy(p, sep, sl);
			p += sl;
		}
		p = stpcpy(p, v[i]);
	}
	*p = '\0';
	return s;
}

/* Capacity is implied by the length: the next power of two above n (so the caller keeps n
 * only, and appends stay amortised O(1)). */
static size_t cap_for(size_t n)
{
	size_t c = 8;

	while (c < n)
		c *= 2;
	return c;
}

int strv_push(char ***v, size_t *n, char *s)
{
	char **nv = *v;

	if (!s)
		return -ENOMEM;
	/* n strings and the NULL need n + 1 slots; grow when n + 2 would not fit */
	if (!nv || cap_for(*n + 1) < *n + 2) {
		nv = realloc(*v, cap_for(*n + 2) * sizeof(*nv));
		if (!nv) {
			free(s);
			return -ENOMEM;
		}
	}
	nv[(*n)++] = s;
	nv[*n] = NULL;
	*v = nv;
	return 0;
}

int strv_extend(char ***v, size_t *n, const char *s)
{
	return strv_push(v, n, strdup(s));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void strv_sort(char **v)
{
	size_t n = strv_length(v);

	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_str);
}

bool strv_contains(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (strcmp(*v, s) == 0)
			return true;
	return false;
}

void strv_list_clear(struct strv_list *l)
{
	strv_free(l->v);
	l->v = NULL;
	l->n = 0;
}
