/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness for rdmak-ipam's configuration parser (whereabouts' and host-local's keys,
 * stores, routes): the input is a network configuration as the plugin and `rdmak ipam
 * --config` read it. Every accepted config's ranges are then walked: size, the first usable
 * address, a jump ahead, so that the range arithmetic sees whatever the parser lets through.
 *   build/fuzz/fuzz_ipam_config -max_total_time=60 tests/fuzz/corpus/ipam_config */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ipamconf/ipamconf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cnispec_error err = { 0 };
	struct ipamconf *c = NULL;

	if (ipamconf_load((const char *)data, size, &c, &err) < 0) {
		/* a refusal always carries a code and says something */
		if (!err.code || !err.details[0])
			__builtin_trap();
		return 0;
	}
	for (size_t i = 0; i < c->n_sets; i++)
		for (size_t j = 0; j < c->sets[i].n; j++) {
			const struct ipamconf_range *r = &c->sets[i].r[j];
			ipamconf_u128 n = ipamconf_range_size(r), a, b;

			if (ipamconf_range_next(r, r->start, &a) == 1) {
				/* a usable address, and a range with one has a size */
				if (!ipamconf_range_usable(r, a) || n == 0)
					__builtin_trap();
				if (ipamconf_range_advance(r, a, n - 1, &b) == 1 && !ipamconf_range_usable(r, b))
					__builtin_trap();
				if (ipamconf_range_advance(r, a, n, &b) == 1)
					__builtin_trap(); /* n usable addresses: a + n is past the last */
			} else if (n != 0) {
				__builtin_trap();
			}
		}
	ipamconf_free(c);
	return 0;
}
