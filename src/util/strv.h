/* SPDX-License-Identifier: Apache-2.0 */
/* NULL-terminated arrays of malloc'd strings ("strv", as systemd calls them). Every list of
 * names in rdmak (directory entries, device IDs, resource names) is one of these, so one
 * free and one join serve them all. */
#ifndef RDMAK_UTIL_STRV_H
#define RDMAK_UTIL_STRV_H

#include <stdbool.h>
#include <stddef.h>

/* Free each string and the array. NULL is fine. */
void strv_free(char **v);
static inline void strv_freep(char ***v)
{
	strv_free(*v);
}
#define _cleanup_strv_free_ __attribute__((cleanup(strv_freep)))

size_t strv_length(char *const *v);
/* The strings joined with sep between them, malloc'd ("" for an empty or NULL array); NULL
 * only when out of memory. */
char *strv_join(char *const *v, const char *sep);
/* Append s, taking ownership of it (freed on failure too). *n is the array's length, kept by
 * the caller so that appending n strings costs O(n); *v is NULL when *n is 0, or an array
 * built by these functions (its capacity follows from its length). */
int strv_push(char ***v, size_t *n, char *s);
/* Append a copy of s. */
int strv_extend(char ***v, size_t *n, const char *s);
/* Whether v holds a string equal to s (false for a NULL v). */
bool strv_contains(char *const *v, const char *s);

/* A strv with its length beside it, for a list built by appending (strv_push(&l.v, &l.n, s))
 * or kept in a struct: v is still NULL-terminated, so every strv_ function takes l.v. */
struct strv_list {
	char **v;
	size_t n;
};
/* Free the strings and the array; the list is empty after. */
void strv_list_clear(struct strv_list *l);

/* Sort in place by strcmp (the order `ls` and the standard tools list names in). */
void strv_sort(char **v);

#endif
