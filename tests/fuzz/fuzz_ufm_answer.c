/* SPDX-License-Identifier: Apache-2.0 */
/* The fabric manager's answer on arbitrary bytes, as rdmak-cni (root) reads it off the network:
 * the HTTP parser (status line, Content-Length, chunked, at most 4096 bytes of body here) and,
 * on what it accepts, the pkey member list parser; the raw bytes go to the member list parser
 * too. No read past the bytes; an accepted body is at most the bound and the input, and ends in
 * a NUL; a member list holds no more entries than its text can name GUIDs; nothing is returned
 * on failure. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "httpc/httpc.h"
#include "ufm/internal.h"
#include "ufm/ufm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void members(const char *body, size_t len)
{
	struct ufm_member *m = NULL;
	size_t n = 0;
	int r = ufm_members_parse(body, len, &m, &n);

	/* a GUID is 16 hex digits in a string */
	if ((r == 1 && n * 18 > len) || (r <= 0 && (m || n)))
		abort();
	free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the request loop's buffer: exactly the bytes received and a NUL, so that ASan sees a
	 * read past them */
	char *buf = malloc(size + 1), *raw = malloc(size ? size : 1), err[256];
	struct httpc_answer a = { 0 };

	if (!buf || !raw) {
		free(buf);
		free(raw);
		return 0;
	}
	memcpy(buf, data, size);
	buf[size] = '\0';
	memcpy(raw, data, size);
	if (httpc_parse_answer(buf, size, 4096, &a, err, sizeof(err)) == 0) {
		if (!a.body || a.len > 4096 || a.len > size || a.body[a.len] != '\0' ||
		    a.status < 100 || a.status > 999)
			abort();
		members(a.body, a.len);
		httpc_answer_clear(&a);
	} else if (a.body || a.len || !memchr(err, '\0', sizeof(err))) {
		abort();
	}
	members(raw, size);
	free(buf);
	free(raw);
	return 0;
}
