/* SPDX-License-Identifier: Apache-2.0 */
/* The /mutate handler's logic, after systemd's machine-varlink.c vl_method_register: tables of
 * accepted fields, cleanup-scoped ownership, and domain outcomes mapped to the protocol in one
 * place (respond()). */
#include "webhook/review.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/strutil.h"
#include "util/strv.h"
#include "dispatch/dispatch.h"
#include "webhook/mutate.h"
#include "webhook/patch.h"

/* jansson's own json_decrefp */
#define _cleanup_json_ _cleanup_(json_decrefp)

struct gvk {
	const char *group, *version, *kind;
};

struct review {
	const char *api_version, *kind;
	json_t *request;
	const char *uid, *operation, *namespace, *name, *sub_resource;
	json_t *kind_obj, *resource_obj, *object;
	bool dry_run;
	struct gvk gvk;
	const char *resource;
};

/* What the handler decided, before it becomes HTTP and JSON. */
enum verdict {
	VERDICT_BAD_REQUEST, /* 400: not a usable AdmissionReview */
	VERDICT_ALLOW,	     /* allowed, with the patch (if any) and warnings */
	VERDICT_DENY,	     /* allowed: false, with the message */
};

struct outcome {
	enum verdict verdict;
	char *message;	 /* BAD_REQUEST, DENY: why; malloc'd */
	json_t *patch;	 /* ALLOW: the operations, NULL or empty for none */
	char **warnings; /* borrowed */
	char *summary;	 /* for the log */
	enum webhook_review_log level;
};

char *webhook_review_base64_encode(const void *buf, size_t len)
{
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *in = buf;
	char *out, *o;

	if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
		return NULL;
	out = malloc((len + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	o = out;
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)in[i] << 16;

		if (i + 1 < len)
			v |= (unsigned)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		*o++ = tbl[(v >> 18) & 63];
		*o++ = tbl[(v >> 12) & 63];
		*o++ = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
		*o++ = i + 2 < len ? tbl[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* ---- reading ---------------------------------------------------------------------------------- */

static int read_gvk(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	static const struct dispatch_field fields[] = {
		DISPATCH_FIELD("group", JSON_STRING, NULL, offsetof(struct gvk, group),
			       DISPATCH_NULLABLE),
		DISPATCH_FIELD("version", JSON_STRING, NULL, offsetof(struct gvk, version),
			       DISPATCH_MANDATORY),
		DISPATCH_FIELD("kind", JSON_STRING, NULL, offsetof(struct gvk, kind),
			       DISPATCH_MANDATORY),
		{},
	};

	return dispatch_run(c, path, v, fields, DISPATCH_UNKNOWN_ALLOW, t);
}

static int read_resource(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	static const struct dispatch_field fields[] = {
		DISPATCH_FIELD("resource", JSON_STRING, NULL, 0, DISPATCH_MANDATORY),
		{},
	};

	return dispatch_run(c, path, v, fields, DISPATCH_UNKNOWN_ALLOW, t);
}

static int read_uid(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	const char *s = json_string_value(v);

	/* echoed back and logged: a UID is a UUID, keep it to something printable and short */
	if (json_string_length(v) == 0 || json_string_length(v) > 128)
		return dispatch_fail(c, path, "expected 1 to 128 characters");
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x21 || *p == 0x7f)
			return dispatch_fail(c, path, "contains a control character or blank");
	if (strlen(s) != json_string_length(v))
		return dispatch_fail(c, path, "contains a NUL byte");
	*(const char **)t = s;
	return 0;
}

static int review_parse(const char *body, size_t len, json_t **doc, struct review *rv, char *err,
			size_t errlen)
{
	static const struct dispatch_field top[] = {
		DISPATCH_FIELD("apiVersion", JSON_STRING, NULL,
			       offsetof(struct review, api_version), DISPATCH_MANDATORY),
		DISPATCH_FIELD("kind", JSON_STRING, NULL, offsetof(struct review, kind),
			       DISPATCH_MANDATORY),
		DISPATCH_FIELD("request", JSON_OBJECT, NULL, offsetof(struct review, request),
			       DISPATCH_MANDATORY),
		{},
	};
	static const struct dispatch_field request[] = {
		DISPATCH_FIELD("uid", JSON_STRING, read_uid, offsetof(struct review, uid),
			       DISPATCH_MANDATORY),
		DISPATCH_FIELD("kind", JSON_OBJECT, read_gvk, offsetof(struct review, gvk),
			       DISPATCH_MANDATORY),
		DISPATCH_FIELD("resource", JSON_OBJECT, read_resource,
			       offsetof(struct review, resource), DISPATCH_NULLABLE),
		DISPATCH_FIELD("subResource", JSON_STRING, NULL,
			       offsetof(struct review, sub_resource), DISPATCH_NULLABLE),
		DISPATCH_FIELD("operation", JSON_STRING, NULL, offsetof(struct review, operation),
			       DISPATCH_MANDATORY | DISPATCH_NONEMPTY),
		DISPATCH_FIELD("namespace", JSON_STRING, NULL, offsetof(struct review, namespace),
			       DISPATCH_NULLABLE),
		DISPATCH_FIELD("name", JSON_STRING, NULL, offsetof(struct review, name),
			       DISPATCH_NULLABLE),
		DISPATCH_FIELD("object", JSON_OBJECT, NULL, offsetof(struct review, object),
			       DISPATCH_NULLABLE),
		DISPATCH_FIELD("dryRun", DISPATCH_BOOL, NULL, offsetof(struct review, dry_run),
			       DISPATCH_NULLABLE),
		{},
	};
	struct dispatch_ctx c = { .err = err, .errlen = errlen };
	json_error_t je;
	int r;

	/* jansson stops at 2048 levels and refuses invalid UTF-8, NUL in strings and duplicate keys */
	*doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!*doc) {
		snprintf(err, errlen, "not JSON: line %d column %d: %s", je.line, je.column,
			 je.text);
		return -EBADMSG;
	}
	r = dispatch_run(&c, "", *doc, top, DISPATCH_UNKNOWN_ALLOW, rv);
	if (r < 0)
		return -EBADMSG;
	if (strcmp(rv->kind, "AdmissionReview") != 0) {
		snprintf(err, errlen, "kind: expected AdmissionReview, got \"%.64s\"", rv->kind);
		return -EBADMSG;
	}
	if (strcmp(rv->api_version, "admission.k8s.io/v1") != 0 &&
	    strcmp(rv->api_version, "admission.k8s.io/v1beta1") != 0) {
		snprintf(err, errlen, "apiVersion: expected admission.k8s.io/v1, got \"%.64s\"",
			 rv->api_version);
		return -EBADMSG;
	}
	r = dispatch_run(&c, "request", rv->request, request, DISPATCH_UNKNOWN_ALLOW, rv);
	return r < 0 ? -EBADMSG : 0;
}

/* ---- the one place outcomes become HTTP and AdmissionReview ------------------------------------ */

static int respond(const struct review *rv, struct outcome *o, struct webhook_review_answer *ret)
{
	_cleanup_json_ json_t *resp = NULL, *doc = NULL;
	_cleanup_free_ char *patch_text = NULL, *patch64 = NULL;

	ret->summary = TAKE_PTR(o->summary);
	ret->level = o->level;
	if (o->verdict == VERDICT_BAD_REQUEST) {
		ret->http_status = 400;
		ret->content_type = "text/plain; charset=utf-8";
		if (asprintf(&ret->body, "bad AdmissionReview: %s\n", o->message) < 0)
			return -ENOMEM;
		ret->body_len = strlen(ret->body);
		return 0;
	}
	resp = json_pack("{s:s, s:b}", "uid", rv->uid, "allowed", o->verdict == VERDICT_ALLOW);
	if (!resp)
		return -ENOMEM;
	if (o->verdict == VERDICT_DENY) {
		json_t *st = json_pack("{s:i, s:s, s:s}", "code", 403, "reason", "Forbidden",
				       "message", o->message);

		if (!st || json_object_set_new(resp, "status", st) < 0)
			return -ENOMEM;
	}
	if (o->patch && json_array_size(o->patch) > 0) {
		patch_text = json_dumps(o->patch, JSON_COMPACT);
		patch64 = patch_text ? webhook_review_base64_encode(patch_text, strlen(patch_text))
				     : NULL;
		if (!patch64 ||
		    json_object_set_new(resp, "patchType", json_string("JSONPatch")) < 0 ||
		    json_object_set_new(resp, "patch", json_string(patch64)) < 0)
			return -ENOMEM;
	}
	if (o->warnings && *o->warnings) {
		json_t *w = json_array();

		if (!w || json_object_set_new(resp, "warnings", w) < 0)
			return -ENOMEM;
		for (char **p = o->warnings; *p; p++)
			if (json_array_append_new(w, json_string(*p)) < 0)
				return -ENOMEM;
	}
	doc = json_pack("{s:s, s:s, s:O}", "apiVersion", rv->api_version, "kind", "AdmissionReview",
			"response", resp);
	if (!doc)
		return -ENOMEM;
	ret->body = json_dumps(doc, JSON_COMPACT);
	if (!ret->body)
		return -ENOMEM;
	ret->http_status = 200;
	ret->content_type = "application/json";
	ret->body_len = strlen(ret->body);
	return 0;
}

/* ---- deciding --------------------------------------------------------------------------------- */

static char *pod_label(const struct review *rv)
{
	const json_t *meta = json_object_get(rv->object, "metadata");
	const char *name =
		rv->name && *rv->name ? rv->name : json_string_value(json_object_get(meta, "name"));
	const char *gen = json_string_value(json_object_get(meta, "generateName"));
	char *s;

	if (asprintf(&s, "%.63s/%.253s%s%s", rv->namespace && *rv->namespace ? rv->namespace : "-",
		     name && *name ? name
		     : gen	   ? gen
				   : "(no name)",
		     name && *name ? ""
		     : gen	   ? "*"
				   : "",
		     rv->dry_run ? " (dry run)" : "") < 0)
		return NULL;
	/* names come from the request: no control characters into the log */
	for (char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return s;
}

static int decide_pod(const struct webhook_config *cfg, const struct review *rv,
		      struct webhook_mutate_result *mr, struct outcome *o)
{
	_cleanup_free_ char *label = pod_label(rv), *what = NULL;
	int r;

	if (!label)
		return -ENOMEM;
	r = webhook_mutate_pod(cfg, rv->object, rv->namespace, mr);
	if (r < 0)
		return r;
	o->warnings = mr->warnings;
	/* A refusal comes first: it may have been decided before the groups were read (two
	 * annotations that disagree, metadata or annotations of the wrong type), and such a pod
	 * asked for RDMA, or may have: admitting it as "not ours" would start it without. */
	if (mr->denied && !mr->allow_anyway) {
		o->verdict = VERDICT_DENY;
		o->level = WEBHOOK_REVIEW_LOG_WARNING;
		if (asprintf(&o->message, "rdmak webhook: %s", mr->denied) < 0)
			return -ENOMEM;
		return asprintf(&o->summary, "%s: refused%s%s%s: %s", label,
				mr->groups ? " (groups " : "", mr->groups ? mr->groups : "",
				mr->groups ? ")" : "", mr->denied) < 0
			       ? -ENOMEM
			       : 0;
	}
	o->verdict = VERDICT_ALLOW;
	o->level = WEBHOOK_REVIEW_LOG_INFO;
	if (mr->denied) {
		char *w;

		if (asprintf(&w, "rdmak webhook: %s; admitted unchanged (onError: allow)",
			     mr->denied) < 0 ||
		    strv_push(&mr->warnings, &mr->n_warnings, w) < 0)
			return -ENOMEM;
		o->warnings = mr->warnings;
		return asprintf(&o->summary, "%s: admitted unchanged (%s%s%sonError allow): %s",
				label, mr->groups ? "groups " : "", mr->groups ? mr->groups : "",
				mr->groups ? ", " : "", mr->denied) < 0
			       ? -ENOMEM
			       : 0;
	}
	if (!mr->groups) {
		o->level = WEBHOOK_REVIEW_LOG_DEBUG;
		return asprintf(&o->summary, "%s: no %s annotation, unchanged", label,
				ANNOTATION_GROUPS) < 0
			       ? -ENOMEM
			       : 0;
	}
	o->patch = webhook_patch_diff(rv->object, mr->pod);
	if (!o->patch)
		return -ENOMEM;
	what = mr->n_changes ? strv_join(mr->changes, ", ")
			     : strdup("nothing to add (already there)");
	if (!what)
		return -ENOMEM;
	return asprintf(&o->summary,
			"%s: groups %s, container \"%s\": %s; %zu patch operations, %zu warnings",
			label, mr->groups, mr->container ? mr->container : "?", what,
			json_array_size(o->patch), mr->n_warnings) < 0
		       ? -ENOMEM
		       : 0;
}

static int decide(const struct webhook_config *cfg, const struct review *rv,
		  struct webhook_mutate_result *mr, struct outcome *o)
{
	bool pod = (!rv->gvk.group || !*rv->gvk.group) && !strcmp(rv->gvk.version, "v1") &&
		   !strcmp(rv->gvk.kind, "Pod");
	char *w;

	if (!pod) {
		/* not ours to change, and refusing it would block whatever the misrouting sends */
		o->verdict = VERDICT_ALLOW;
		o->level = WEBHOOK_REVIEW_LOG_WARNING;
		if (asprintf(
			    &w,
			    "rdmak webhook mutates v1 Pods only, not %.64s%s%.64s %.64s: check its "
			    "MutatingWebhookConfiguration rules",
			    rv->gvk.group ? rv->gvk.group : "",
			    rv->gvk.group && *rv->gvk.group ? "/" : "", rv->gvk.version,
			    rv->gvk.kind) < 0)
			return -ENOMEM;
		if (!(o->summary = strdup(w))) {
			free(w);
			return -ENOMEM;
		}
		/* mr owns the warnings that respond() reads */
		if (strv_push(&mr->warnings, &mr->n_warnings, w) < 0)
			return -ENOMEM;
		o->warnings = mr->warnings;
		return 0;
	}
	if (strcmp(rv->operation, "CREATE") != 0 || (rv->sub_resource && *rv->sub_resource) ||
	    (rv->resource && strcmp(rv->resource, "pods") != 0)) {
		o->verdict = VERDICT_ALLOW;
		o->level = WEBHOOK_REVIEW_LOG_DEBUG;
		return asprintf(&o->summary, "uid %s: %.16s of pods%s%.32s: nothing to do", rv->uid,
				rv->operation, rv->sub_resource && *rv->sub_resource ? "/" : "",
				rv->sub_resource ? rv->sub_resource : "") < 0
			       ? -ENOMEM
			       : 0;
	}
	if (!rv->object) {
		/* a bad request like review_parse's, with its log line (the summary was left unset) */
		o->verdict = VERDICT_BAD_REQUEST;
		o->level = WEBHOOK_REVIEW_LOG_WARNING;
		if (!(o->message = strdup("request.object: missing for a CREATE")))
			return -ENOMEM;
		return asprintf(&o->summary, "uid %.64s: bad AdmissionReview: %s", rv->uid,
				o->message) < 0
			       ? -ENOMEM
			       : 0;
	}
	return decide_pod(cfg, rv, mr, o);
}

int webhook_review_handle(const struct webhook_config *cfg, const char *body, size_t len,
			  struct webhook_review_answer *ret)
{
	_cleanup_json_ json_t *doc = NULL;
	struct review rv = { 0 };
	struct webhook_mutate_result mr = { 0 };
	struct outcome o = { .level = WEBHOOK_REVIEW_LOG_INFO };
	char err[512];
	int r;

	*ret = (struct webhook_review_answer){ 0 };
	r = review_parse(body, len, &doc, &rv, err, sizeof(err));
	if (r == -EBADMSG) {
		o.verdict = VERDICT_BAD_REQUEST;
		o.level = WEBHOOK_REVIEW_LOG_WARNING;
		o.message = strdup(err);
		if (!o.message || asprintf(&o.summary, "bad AdmissionReview: %s", err) < 0)
			r = -ENOMEM;
		else
			r = 0;
	} else if (r >= 0) {
		r = decide(cfg, &rv, &mr, &o);
	}
	if (r >= 0)
		r = respond(&rv, &o, ret);
	free(o.message);
	free(o.summary);
	json_decref(o.patch);
	webhook_mutate_result_clear(&mr);
	if (r < 0)
		webhook_review_answer_clear(ret);
	return r;
}

void webhook_review_answer_clear(struct webhook_review_answer *a)
{
	free(a->body);
	free(a->summary);
	*a = (struct webhook_review_answer){ 0 };
}
