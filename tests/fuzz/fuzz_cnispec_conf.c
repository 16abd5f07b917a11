/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness for the CNI request parser (stdin of every rdmak CNI plugin). The first
 * byte picks the command; an accepted request's prevResult is written back in every version
 * and read again, so the result model sees whatever the parser lets through.
 *   build/fuzz/fuzz_cnispec_conf -max_total_time=60 tests/fuzz/corpus/cnispec_conf */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cnispec/cnispec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cnispec_conf *c = NULL;
	struct cnispec_error err = { 0 };
	enum cnispec_cmd cmd;

	if (size < 1)
		return 0;
	cmd = (enum cnispec_cmd)(1 + data[0] % 6);
	if (cnispec_conf_parse((const char *)data + 1, size - 1, cmd, &c, &err) < 0) {
		/* a refusal always carries a code and a message that fit */
		if (!err.code || !err.msg[0] || strlen(err.details) >= sizeof(err.details))
			__builtin_trap();
		return 0;
	}
	if (c->prev_result) {
		for (int v = 0; v < CNISPEC_V_COUNT; v++) {
			struct cnispec_result *back = NULL;
			char why[256];
			json_t *o = cnispec_result_to_json(c->prev_result, (enum cnispec_version)v);

			if (!o)
				__builtin_trap();
			/* what we write, we read back */
			if (cnispec_result_from_json(o, (enum cnispec_version)v, "r", &back, why,
						     sizeof(why)) < 0)
				__builtin_trap();
			cnispec_result_free(back);
			json_decref(o);
		}
	}
	cnispec_conf_free(c);
	return 0;
}
