/* SPDX-License-Identifier: Apache-2.0 */
/* Inside of the ufm module: the parser of UFM's answer (client.c; its HTTPS is src/httpc). */
#ifndef RDMAK_UFM_INTERNAL_H
#define RDMAK_UFM_INTERNAL_H

#include <stddef.h>

/* UFM's answer to GET /resources/pkeys/<pkey>?guids_data=true: 1 and its members (malloc'd,
 * only the entries that name a GUID), 0 for the empty object some versions give for a pkey
 * they do not know, -EPROTO when it has no "guids" list, -ENOMEM. */
struct ufm_member;
int ufm_members_parse(const char *body, size_t len, struct ufm_member **ret, size_t *ret_n);

#endif
