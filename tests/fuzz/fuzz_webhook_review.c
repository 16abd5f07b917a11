/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness for what the webhook reads from the API server: every input goes through
 * the AdmissionReview handler (JSON, the field tables, the merge rules, the patch), through the
 * document reader as a pod (JSON or YAML) and the merge rules directly, and through the
 * networks annotation parser. Invariants checked beyond "no crash, no leak": a 200 answer is
 * JSON; a pod the rules accept comes out of a second pass unchanged (the idempotency
 * reinvocationPolicy relies on).
 * Seeds: tests/fuzz/corpus/webhook_review (reviews and pods from tests/fixtures/webhook).
 *   build/fuzz/fuzz_webhook_review -max_total_time=60 tests/fuzz/corpus/webhook_review */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/webhookconf.h"
#include "doc/yaml.h"
#include "webhook/mutate.h"
#include "webhook/networks.h"
#include "webhook/patch.h"
#include "webhook/review.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* tests/fixtures/webhook/config.yaml, in short */
static const char config[] = "{\"gpuResources\": [\"nvidia.com/v100\"], \"groups\": {"
			     "\"gpu-sriov\": {\"networks\": [{\"namespace\": "
			     "\"spiderpool\", \"name\": \"gpu1-sriov\", "
			     "\"resource\": "
			     "\"spidernet.io/gpu1sriov\"}, {\"namespace\": "
			     "\"spiderpool\", \"name\": \"gpu2-sriov\", "
			     "\"resource\": "
			     "\"spidernet.io/gpu2sriov\", \"interface\": \"rail2\"}]},"
			     "\"shared-a\": {\"resources\": "
			     "{\"rdma/rdma_shared_device_a\": 1}, "
			     "\"shmSizeLimit\": \"8Gi\"},"
			     "\"hostdev\": {\"networks\": [{\"name\": "
			     "\"hostdevice-net\", \"resource\": \"nvidia.com/hostdev\", "
			     "\"count\": 2}], "
			     "\"ipcLock\": false, \"onError\": \"allow\"}}}";

static struct webhook_config *cfg;

static void as_pod(const uint8_t *data, size_t size)
{
	struct webhook_mutate_result a, b;
	json_t *pod = NULL, *patch;
	char err[256];

	if (doc_parse((const char *)data, size, &pod, NULL, err, sizeof(err)) < 0)
		return;
	if (webhook_mutate_pod(cfg, pod, "spiderpool", &a) == 0) {
		if (a.groups && !a.denied &&
		    webhook_mutate_pod(cfg, a.pod, "spiderpool", &b) == 0) {
			patch = webhook_patch_diff(a.pod, b.pod);
			if (patch && (json_array_size(patch) != 0 || b.denied))
				__builtin_trap(); /* a second pass must change nothing */
			json_decref(patch);
			webhook_mutate_result_clear(&b);
		}
		webhook_mutate_result_clear(&a);
	}
	json_decref(pod);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct webhook_review_answer ans;
	char err[256], *s;
	json_t *list = NULL;

	if (!cfg && webhook_config_parse(config, sizeof(config) - 1, &cfg, err, sizeof(err)) < 0)
		__builtin_trap();
	if (webhook_review_handle(cfg, (const char *)data, size, &ans) == 0) {
		if (ans.http_status == 200) {
			json_t *doc = json_loadb(ans.body, ans.body_len, 0, NULL);

			if (!doc)
				__builtin_trap();
			json_decref(doc);
		}
		webhook_review_answer_clear(&ans);
	}
	as_pod(data, size);
	s = strndup((const char *)data, size);
	if (s && webhook_networks_parse(s, &list, err, sizeof(err)) == 0)
		json_decref(list);
	free(s);
	return 0;
}
