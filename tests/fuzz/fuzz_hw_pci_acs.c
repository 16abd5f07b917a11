/* SPDX-License-Identifier: Apache-2.0 */
/* The PCI ACS capability walk on arbitrary config space dumps: no read past len, no endless
 * walk over a looping capability list, and only a 16-bit register, -1 or -2 comes back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes, so that ASan sees any read past the dump */
	uint8_t *cfg = malloc(size ? size : 1);
	int r;

	if (!cfg)
		return 0;
	memcpy(cfg, data, size);
	r = hw_pci_acs_control(cfg, size);
	if (r < -2 || r > 0xffff || (size < 0x104 && r != -2))
		abort();
	free(cfg);
	return 0;
}
