/* SPDX-License-Identifier: Apache-2.0 */
/* RFC 6902 JSON Patch between two documents: the mutation edits a copy of the pod, and the
 * patch is whatever turns the original into that copy. Correct by construction (apply(a, diff(a,
 * b)) == b, which the tests check with an independent implementation), and empty when nothing
 * changed, which is what makes a second pass a no-op. */
#ifndef RDMAK_WEBHOOK_PATCH_H
#define RDMAK_WEBHOOK_PATCH_H

#include <jansson.h>

/* A new JSON array of operations ("add", "remove", "replace"), or NULL when out of memory.
 * Arrays are compared by position: elements appended to b are "add"s at their index, elements
 * past b's end are removed from the last. */
json_t *webhook_patch_diff(const json_t *a, const json_t *b);

/* Escape one key as a JSON Pointer reference token ('~' -> "~0", '/' -> "~1"). malloc'd. */
char *webhook_patch_pointer_escape(const char *key);

#endif
