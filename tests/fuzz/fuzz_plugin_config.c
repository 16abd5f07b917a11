/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness for the device plugin's config parser (both anchors' formats and rdmak's
 * superset). Every accepted config is also applied to an empty node and freed, so that the
 * pool builder sees whatever the parser lets through. Seeds: tests/fuzz/corpus/plugin_config.
 *   build/fuzz/fuzz_plugin_config -max_total_time=60 tests/fuzz/corpus/plugin_config */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pool/config.h"
#include "pool/pool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pool_config *cfg = NULL;
	struct hw_node node;
	struct pool_set *ps = NULL;
	char err[256];

	if (pool_config_parse((const char *)data, size, &cfg, err, sizeof(err)) < 0) {
		/* a refusal always says something, and fits */
		if (!err[0] || strlen(err) >= sizeof(err))
			__builtin_trap();
		return 0;
	}
	memset(&node, 0, sizeof(node));
	node.kernel.netns_mode = -1;
	if (pool_set_build(cfg, &node, NULL, &ps) == 0)
		pool_set_free(ps);
	pool_config_free(cfg);
	return 0;
}
