/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak doctor --nfd FILE`: a Node Feature Discovery local feature file from one round's
 * hardware model and findings (diag_findings). */
#ifndef RDMAK_DOCTOR_NFD_H
#define RDMAK_DOCTOR_NFD_H

#include <jansson.h>

#include "hw/hw.h"

/* Written atomically (NFD may read it at any moment). 0 or -errno. */
int doctor_nfd_write(const struct hw_node *n, const json_t *findings, const char *path);

#endif
