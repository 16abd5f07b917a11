/* SPDX-License-Identifier: Apache-2.0 */
/* A link-time seam of the test build (Makefile: $(BUILD)/tests/seams/rdmak, never installed),
 * linked with -Wl,--wrap=pool_set_build: with RDMAK_TEST_RESCAN_GATE=FILE in the
 * environment, a build made on the plugin's builder thread (a rescan or a reload; not the first
 * build, which the main thread makes before the plugin serves) is held, once made, until FILE
 * exists (checked every 10 ms). A test can then act while a rescan is in progress without
 * depending on how long one takes (tests/js/plugin_rescan.test.mjs). */
#include <stdlib.h>
#include <unistd.h>

#include "pool/pool.h"

int __real_pool_set_build(const struct pool_config *cfg, const struct hw_node *node,
			  const struct pool_opts *o, struct pool_set **ret);
int __wrap_pool_set_build(const struct pool_config *cfg, const struct hw_node *node,
			  const struct pool_opts *o, struct pool_set **ret);

int __wrap_pool_set_build(const struct pool_config *cfg, const struct hw_node *node,
			  const struct pool_opts *o, struct pool_set **ret)
{
	const char *gate = getenv("RDMAK_TEST_RESCAN_GATE");
	int r = __real_pool_set_build(cfg, node, o, ret);

	if (gate && *gate && gettid() != getpid())
		while (access(gate, F_OK) < 0)
			usleep(10000);
	return r;
}
