/* SPDX-License-Identifier: Apache-2.0 */
/* The parsers of RDMA netlink's counter answers (RDMA_NLDEV_CMD_STAT_GET) on arbitrary bytes,
 * taken as one message: no read past len, and on success only what the bytes can hold (a
 * counter entry, a QP number, a hardware counter each take at least one attribute header). On
 * failure nothing is written. The attributes are walked and checked against the parser's policy
 * by libnl (nla_parse, nla_get_*), linked as Debian builds it, without the sanitizers'
 * instrumentation: ASan sees the reads of src/nl/rdma.c itself, not libnl's, whose nla_ok()
 * keeps each attribute inside the bytes it is given. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nl/nl-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes, aligned as a receive buffer is, so that ASan sees any
	 * read past the message */
	uint8_t *buf = malloc(size ? size : 1);
	struct nl_rdma_stat s = { 0 };
	struct nl_rdma_counter *v = NULL;
	size_t n = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (nl_rdma_stat_parse(buf, size, &s) == 0) {
		if (s.n_hw * 4 > size)
			abort();
		nl_rdma_stat_clear(&s);
	} else if (s.hw || s.n_hw) {
		abort();
	}
	if (nl_rdma_counters_parse(buf, size, &v, &n) == 0) {
		for (size_t i = 0; i < n; i++)
			if ((v[i].n_qpns + v[i].n_hw) * 4 > size ||
			    (v[i].qp_type < -1 || v[i].qp_type > 255))
				abort();
		if (n * 4 > size)
			abort();
	} else if (v || n) {
		abort();
	}
	nl_rdma_counters_free(v, n);
	free(buf);
	return 0;
}
