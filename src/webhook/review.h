/* SPDX-License-Identifier: Apache-2.0 */
/* One AdmissionReview (admission.k8s.io/v1, or v1beta1 answered in kind) in, its answer out: the
 * request reader is a declarative table of the fields used, and every outcome (a bad review, a pod
 * that is not ours, a refusal, a patch) becomes HTTP and AdmissionReview in one function. No I/O:
 * the HTTP layer hands the body in and sends the answer back; the fuzz target calls this. */
#ifndef RDMAK_WEBHOOK_REVIEW_H
#define RDMAK_WEBHOOK_REVIEW_H

#include <stddef.h>

#include "webhook/webhookconf.h"

enum webhook_review_log {
	WEBHOOK_REVIEW_LOG_WARNING = 1,
	WEBHOOK_REVIEW_LOG_INFO = 2,
	WEBHOOK_REVIEW_LOG_DEBUG = 3
};

struct webhook_review_answer {
	unsigned http_status; /* 200, or 400 for a request that is not a usable AdmissionReview */
	const char *content_type;
	char *body; /* malloc'd */
	size_t body_len;
	char *summary; /* malloc'd: one log line saying what happened to which pod */
	enum webhook_review_log level; /* how loud that line should be */
};

/* 0 with *ret filled, or -ENOMEM. */
int webhook_review_handle(const struct webhook_config *cfg, const char *body, size_t len,
			  struct webhook_review_answer *ret);
void webhook_review_answer_clear(struct webhook_review_answer *a);

/* RFC 4648 base64 of buf[0..len), malloc'd. */
char *webhook_review_base64_encode(const void *buf, size_t len);

#endif
