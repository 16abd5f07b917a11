/* SPDX-License-Identifier: Apache-2.0 */
/* Every sysfs string parser on arbitrary bytes: no crash, no overflow, and a success
 * always leaves a well-formed value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw-internal.h"
#include "hw/hw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), name[32], bdf[HW_BDF_MAX];
	struct hw_rate rate;
	uint8_t gid[16];
	double gts;
	unsigned a, b;
	int n;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (hw_parse_state(s, &n, name, sizeof(name)) == 0 &&
	    (n < 0 || strlen(name) >= sizeof(name)))
		abort();
	if (hw_parse_rate(s, &rate) == 0 &&
	    (rate.width == 0 || strlen(rate.speed) >= sizeof(rate.speed)))
		abort();
	hw_parse_gid(s, gid);
	n = hw_parse_attr_num(s);
	if (n < -1 || n > 255)
		abort();
	hw_parse_bond_mode(s, name, sizeof(name), &n);
	hw_parse_devnum(s, &a, &b);
	hw_parse_node_type(s, &n, name, sizeof(name));
	hw_is_bdf(s);
	if (hw_parse_link_speed(s, &gts) == 0 && !(gts > 0 && gts <= 256))
		abort();
	if (hw_path_parent_bdf(s, bdf) == 0 && !hw_is_bdf(bdf))
		abort();
	free(s);
	return 0;
}
