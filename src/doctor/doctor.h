/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor's checks moved to src/diag (diag/diag.h). This header keeps the names the exporter
 * uses until its includes move there; tests/cmd/symbols.sh allows the exporter this one role
 * header, and both go together. struct doctor is only ever a pointer to a struct diag. */
#ifndef RDMAK_DOCTOR_COMPAT_H
#define RDMAK_DOCTOR_COMPAT_H

#include "diag/diag.h"

#define doctor_status	   diag_status
#define doctor_scope	   diag_scope
#define doctor_cause	   diag_cause
#define doctor_finding	   diag_finding
#define DOCTOR_SKIP	   DIAG_SKIP
#define DOCTOR_OK	   DIAG_OK
#define DOCTOR_WARN	   DIAG_WARN
#define DOCTOR_FAIL	   DIAG_FAIL
#define DOCTOR_NODE	   DIAG_NODE
#define DOCTOR_POD	   DIAG_POD
#define DOCTOR_BOTH	   DIAG_BOTH
#define doctor_status_name diag_status_name
#define doctor_check_id	   diag_check_id

struct doctor;

static inline int doctor_new(struct hw_ctx *ctx, const struct hw_node *node, enum diag_scope scope,
			     char *const *envp, struct doctor **ret)
{
	return diag_new(ctx, node, scope, envp, (struct diag **)ret);
}

static inline void doctor_free(struct doctor *d)
{
	diag_free((struct diag *)d);
}

static inline int doctor_run_check_each(struct doctor *d, const char *id,
					void (*fn)(void *ud, const struct diag_finding *f),
					void *ud)
{
	return diag_run_check_each((struct diag *)d, id, fn, ud);
}

#endif
