/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness for rdmak-cni's configuration: the request parser (cnispec) and then the
 * plugin's own keys (cniconf_parse), the whole path stdin takes before anything touches
 * the kernel; and the hostdev attachment record parser (attach_record_parse), which reads what a
 * crashed plugin or another version may have left. The first byte picks which. A refusal must
 * carry a code and a message naming something; an accepted configuration must be coherent.
 *   build/fuzz/fuzz_cni_config -max_total_time=60 tests/fuzz/corpus/cni_config */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cni/cni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void config(const char *buf, size_t len)
{
	struct cnispec_conf *c = NULL;
	struct cnispec_error err = { 0 };
	struct cniconf cfg;

	if (cnispec_conf_parse(buf, len, CNISPEC_CMD_ADD, &c, &err) < 0)
		return;
	if (cniconf_parse(c, &cfg, &err) < 0) {
		if (!err.code || !err.msg[0])
			__builtin_trap();
	} else {
		/* what the commands rely on without checking again */
		if ((cfg.link == CNICONF_LINK_MACVLAN || cfg.link == CNICONF_LINK_IPOIB) !=
			    !!cfg.master[0] ||
		    !cfg.state_dir ||
		    (cfg.link == CNICONF_LINK_HOSTDEV && !cfg.device[0] && !cfg.device_id[0]) ||
		    (cfg.link == CNICONF_LINK_RDMA &&
		     (cfg.device[0] || cfg.has_guid || cfg.has_mac || cfg.mtu)) ||
		    (cfg.link_by_chain &&
		     (cfg.link != CNICONF_LINK_HOSTDEV || !cfg.device_id[0] || cfg.device[0])) ||
		    (cfg.rdma_isolation && cfg.link != CNICONF_LINK_HOSTDEV &&
		     cfg.link != CNICONF_LINK_RDMA) ||
		    (cfg.has_guid && !cfg.guid) || cfg.rule_priority == 0 ||
		    cfg.rule_priority > 32765)
			__builtin_trap();
		(void)cni_route_table(cfg.table_base, "net1");
		cniconf_clear(&cfg);
	}
	cnispec_conf_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct attach_record st;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		config((const char *)data + 1, size - 1);
	} else if (attach_record_parse((const char *)data + 1, size - 1, &st) == 0) {
		if (!st.host_name[0] || st.host_mac_len > sizeof(st.host_mac) ||
		    st.n_pod_ips > ATTACH_POD_IPS_MAX || (st.n_pod_ips && !st.pod_mac[0]))
			__builtin_trap();
	}
	return 0;
}
