/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness for the webhook's config parser (JSON or YAML through libyaml, the field
 * tables, the Kubernetes name rules). A refusal must say something that fits; an accepted config is
 * written out as YAML and must read back as the same document.
 * Seeds: tests/fuzz/corpus/webhook_config.
 *   build/fuzz/fuzz_webhook_config -max_total_time=60 tests/fuzz/corpus/webhook_config */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/webhookconf.h"
#include "doc/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct webhook_config *cfg = NULL;
	json_t *doc = NULL, *back = NULL;
	char err[256], *text = NULL;
	size_t n = 0;
	FILE *f;

	if (webhook_config_parse((const char *)data, size, &cfg, err, sizeof(err)) < 0) {
		if (!err[0] || strlen(err) >= sizeof(err))
			__builtin_trap();
	} else {
		webhook_config_free(cfg);
	}
	/* the YAML writer: whatever the reader takes, written back, reads back the same */
	if (doc_parse((const char *)data, size, &doc, NULL, err, sizeof(err)) < 0)
		return 0;
	f = open_memstream(&text, &n);
	if (f && doc_write_yaml(f, doc) == 0) {
		fclose(f);
		f = NULL;
		if (doc_parse(text, n, &back, NULL, err, sizeof(err)) < 0 || !json_equal(doc, back))
			__builtin_trap();
	}
	if (f)
		fclose(f);
	free(text);
	json_decref(back);
	json_decref(doc);
	return 0;
}
