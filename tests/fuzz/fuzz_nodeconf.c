/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness for the node's CNI settings (src/nodeconf, /etc/rdmak/cni.json), which
 * rdmak-cni and rdmak-ipam read as root for every pod: arbitrary bytes either parse into a whole
 * configuration (every path absolute, every store named and with endpoints) or are refused with
 * a reason, and a network's store name or endpoints are looked up in what parsed.
 *   build/fuzz/fuzz_nodeconf -max_total_time=60 tests/fuzz/corpus/nodeconf */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nodeconf/nodeconf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nodeconf n;
	char err[NODECONF_ERR_MAX] = "", names[256];

	if (nodeconf_parse((const char *)data, size, &n, err, sizeof(err)) < 0) {
		if (!err[0])
			__builtin_trap();
		return 0;
	}
	if (!n.sysfs || n.sysfs[0] != '/' || !n.state_dir || n.state_dir[0] != '/' || !n.log_dir ||
	    n.n_data_dirs == 0 || n.data_dirs[0][0] != '/')
		__builtin_trap();
	for (size_t i = 0; i < n.n_etcd; i++) {
		const struct nodeconf_etcd *e = &n.etcd[i];

		if (!e->n_endpoints || !e->prefix || e->prefix[0] != '/' ||
		    nodeconf_etcd_find(&n, e->name) != e ||
		    !nodeconf_etcd_find_endpoints(&n, (const char *const *)e->endpoints,
						  e->n_endpoints, e->prefix) ||
		    !e->tls_cert != !e->tls_key)
			__builtin_trap();
	}
	nodeconf_etcd_names(&n, names, sizeof(names));
	nodeconf_clear(&n);
	return 0;
}
