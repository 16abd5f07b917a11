/* SPDX-License-Identifier: Apache-2.0 */
/* Documents in, documents out: JSON or YAML text to a jansson value, and a value back to YAML.
 * The config and --explain's pod file come through here. */
#ifndef RDMAK_DOC_YAML_H
#define RDMAK_DOC_YAML_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum doc_format { DOC_JSON, DOC_YAML };

/* Parse buf[0..len): JSON when it starts with '{' or '[' and parses as JSON, YAML (1.2 core
 * schema: true/false/null/numbers unquoted, `yes`/`on` are strings) otherwise. One document;
 * aliases, duplicate keys and keys that are not strings are refused (an alias bomb or a key
 * given twice is never what a config means). Errors come back as -EINVAL with "line L column
 * C: reason" in err. *format says which it was (may be NULL). */
int doc_parse(const char *buf, size_t len, json_t **ret, enum doc_format *format, char *err,
	      size_t errlen);

/* Every document of a YAML stream ("---" between them), each the way doc_parse reads one, as a
 * JSON array in *ret (empty documents left out; an empty stream is an empty array). JSON text is
 * YAML too. Errors as doc_parse's. */
int doc_parse_all(const char *buf, size_t len, json_t **ret, char *err, size_t errlen);

/* Write v as a YAML block document (strings quoted where they would read back as another type). */
int doc_write_yaml(FILE *f, const json_t *v);

/* Write text as YAML comment lines, "# " before each of its lines (for a note on the document
 * written next: libyaml's emitter has no comments). */
int doc_write_yaml_comment(FILE *f, const char *text);

#endif
