/* SPDX-License-Identifier: Apache-2.0 */
/* Shared between the files of src/ipam; not a public interface. */
#ifndef RDMAK_IPAM_INTERNAL_H
#define RDMAK_IPAM_INTERNAL_H

#include "ipam/ipam.h"

/* Fill r from a subnet (host bits are cleared here), optional bounds and gateway (NULL:
 * the defaults, docs/ipam.md "Which addresses") and exclusions. The caller has checked that
 * start, end and gateway lie in the subnet and start <= end. network_name (may be NULL)
 * prefixes the pool name. -ENOMEM only. */
int ipam_range_build(struct ipam_range *r, const struct cnispec_prefix *subnet,
		     const struct cnispec_addr *start, const struct cnispec_addr *end,
		     const struct cnispec_addr *gateway, const struct cnispec_prefix *excl,
		     size_t n_excl, const char *network_name);
void ipam_range_clear(struct ipam_range *r);
/* Whether a lies in p's subnet (same family, same leading p->len bits). */
bool ipam_prefix_contains(const struct cnispec_prefix *p, const struct cnispec_addr *a);

#endif
