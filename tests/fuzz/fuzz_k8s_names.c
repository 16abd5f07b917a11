/* SPDX-License-Identifier: Apache-2.0 */
/* src/k8s on arbitrary bytes: no crash, no overflow, and the rules nest as Kubernetes' do (a
 * DNS-1035 label is a DNS-1123 label, which is a subdomain, a qualified name and a label value;
 * an extended resource name is a qualified name with a '/'); a quantity that parses gives the
 * same value when its value is parsed back. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), back[32];
	const char *why = NULL;
	int64_t v, w;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (k8s_dns1035_label(s, NULL) && !k8s_dns1123_label(s, NULL))
		abort();
	if (k8s_dns1123_label(s, NULL) &&
	    !(k8s_dns1123_subdomain(s, NULL) && k8s_qualified_name(s, NULL) &&
	      k8s_label_value(s, NULL)))
		abort();
	if (k8s_extended_resource_name(s, NULL) && !(strchr(s, '/') && k8s_qualified_name(s, NULL)))
		abort();
	if (!k8s_qualified_name(s, &why) && (!why || !*why))
		abort();
	if (k8s_quantity_parse(s, &v, &why) == 0) {
		snprintf(back, sizeof(back), "%" PRId64, v);
		if (k8s_quantity_parse(back, &w, NULL) != 0 || w != v)
			abort();
	} else if (!why || !*why) {
		abort();
	}
	free(s);
	return 0;
}
