/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness for rdmak-ipam's configuration parser (whereabouts' and host-local's keys,
 * stores, routes): the input is a network configuration as the plugin and `rdmak ipam
 * --config` read it. Every accepted config's ranges are then walked: size, the first usable
 * address, a jump ahead, so that the range arithmetic sees whatever the parser lets through.
 * An accepted config is then resolved against a node's CNI settings with one etcd store, so
 * that what the network names of the node's (the store, dataDir, the log file) is checked as
 * the plugin checks it: a refusal carries a code and a reason.
 *   build/fuzz/fuzz_ipam_config -max_total_time=60 tests/fuzz/corpus/ipam_config */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ipamconf/ipamconf.h"
#include "nodeconf/nodeconf.h"

static const char node_text[] =
	"{\"logDir\": \"/var/log/rdmak\", \"dataDirs\": [\"/var/lib/cni/rdmak-ipam\", \"/tmp/x\"],"
	" \"etcd\": {\"cluster\": {\"endpoints\": [\"https://10.0.0.1:2379\", \"10.0.0.2:2379\"],"
	" \"tls\": {\"ca\": \"/etc/rdmak/etcd/ca.crt\"}}}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned flags = size % 2 ? IPAMCONF_LEGACY : 0;
	struct cnispec_error err = { 0 };
	struct ipamconf *c = NULL;
	struct nodeconf node;
	char why[NODECONF_ERR_MAX];

	if (ipamconf_load((const char *)data, size, flags, &c, &err) < 0) {
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
				if (ipamconf_range_advance(r, a, n - 1, &b) == 1 &&
				    !ipamconf_range_usable(r, b))
					__builtin_trap();
				/* n usable addresses: a + n is past the last */
				if (ipamconf_range_advance(r, a, n, &b) == 1)
					__builtin_trap();
			} else if (n != 0) {
				__builtin_trap();
			}
		}
	if (nodeconf_parse(node_text, sizeof(node_text) - 1, &node, why, sizeof(why)) < 0)
		__builtin_trap();
	if (ipamconf_resolve(c, &node, flags, &err) < 0) {
		if (!err.code || !err.details[0])
			__builtin_trap();
	} else if ((c->store.kind == IPAMCONF_STORE_ETCD && !c->store.n_endpoints) ||
		   ((c->store.kind == IPAMCONF_STORE_FILE || c->store.block_size) &&
		    (!c->store.data_dir || !c->store.data_base))) {
		__builtin_trap(); /* resolved: the store is the node's, whole */
	}
	nodeconf_clear(&node);
	ipamconf_free(c);
	return 0;
}
