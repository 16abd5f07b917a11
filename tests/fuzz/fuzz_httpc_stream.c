/* SPDX-License-Identifier: Apache-2.0 */
/* A long answer (an API server's watch) on arbitrary bytes, as httpc_stream takes it apart off
 * the network: the input is split at every point its first byte names, fed piece by piece, and
 * the body handed on must be the same whatever the split (chunks taken off, Content-Length
 * kept); the head is bounded; no read past the bytes; a refusal says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "httpc/httpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct sink {
	int status, heads;
	char *body;
	size_t len;
};

static int on_head(void *ud, int status)
{
	struct sink *s = ud;

	if (status < 100 || status > 999)
		abort();
	s->status = status;
	s->heads++;
	return 0;
}

static int on_data(void *ud, const char *buf, size_t len)
{
	struct sink *s = ud;
	char *n = realloc(s->body, s->len + len + 1);

	if (!n)
		return -12;
	memcpy(n + s->len, buf, len);
	s->body = n;
	s->len += len;
	return 0;
}

/* Feed data in pieces of `step` bytes (each its own allocation, so that ASan sees a read past
 * it); the result of the last feed. */
static int feed(const uint8_t *data, size_t size, size_t step, struct sink *s)
{
	static const struct httpc_stream_ops ops = { on_head, on_data };
	struct httpc_reader *rd = NULL;
	char err[256];
	int r = 0;

	if (httpc_reader_new(&rd) < 0)
		return -12;
	for (size_t off = 0; off < size && r == 0; off += step) {
		size_t n = size - off < step ? size - off : step;
		char *piece = malloc(n);

		if (!piece)
			break;
		memcpy(piece, data + off, n);
		err[0] = '\0';
		r = httpc_reader_feed(rd, piece, n, &ops, s, err, sizeof(err));
		free(piece);
		if (r < 0 && (!err[0] || !memchr(err, '\0', sizeof(err))))
			abort();
	}
	(void)httpc_reader_complete(rd);
	httpc_reader_free(rd);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sink whole = { 0 }, split = { 0 };
	size_t step;
	int a, b;

	if (size < 1)
		return 0;
	step = data[0] % 17 + 1;
	a = feed(data + 1, size - 1, size, &whole);
	b = feed(data + 1, size - 1, step, &split);
	/* an answer taken whole or in pieces is the same answer */
	if ((a < 0) != (b < 0) || whole.heads > 1 || split.heads > 1)
		abort();
	if (a >= 0 && (whole.status != split.status || whole.len != split.len ||
		       (whole.len && memcmp(whole.body, split.body, whole.len))))
		abort();
	free(whole.body);
	free(split.body);
	return 0;
}
