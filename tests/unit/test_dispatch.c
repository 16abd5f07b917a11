/* SPDX-License-Identifier: Apache-2.0 */
/* src/dispatch: the one JSON object walker. Each refusal names the field's JSON path and its
 * kind (value, missing, unknown), and gives the path, an unknown key's value and a refused
 * row's why apart; ignored rows and the WARN policy name the key through the callback and
 * store nothing; the value readers refuse what they say they refuse. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dispatch/dispatch.h"
#include "util/strv.h"

struct thing {
	const char *name;
	bool on;
	json_int_t n;
	double x;
	long long port;
	json_t *sub;
};

static int read_port(struct dispatch_ctx *c, const char *path, json_t *v, void *t)
{
	return dispatch_int_range(c, path, v, 1, 65535, t);
}

static const struct dispatch_field fields[] = {
	DISPATCH_FIELD("name", JSON_STRING, NULL, offsetof(struct thing, name),
		       DISPATCH_MANDATORY | DISPATCH_NONEMPTY),
	DISPATCH_FIELD("on", DISPATCH_BOOL, NULL, offsetof(struct thing, on), 0),
	DISPATCH_FIELD("n", JSON_INTEGER, NULL, offsetof(struct thing, n), DISPATCH_NULLABLE),
	DISPATCH_FIELD("x", DISPATCH_NUMBER, NULL, offsetof(struct thing, x), 0),
	DISPATCH_FIELD("port", JSON_INTEGER, read_port, offsetof(struct thing, port), 0),
	DISPATCH_FIELD("sub", JSON_OBJECT, NULL, offsetof(struct thing, sub), 0),
	DISPATCH_IGNORE("vlanProto", "the anchor ignores it too"),
	DISPATCH_REFUSE("ipMasq", "no masquerading here"),
	{},
};

struct seen {
	char buf[512];
	int n;
};

static void warn(void *userdata, const char *path, const char *why)
{
	struct seen *s = userdata;
	size_t l = strlen(s->buf);

	snprintf(s->buf + l, sizeof(s->buf) - l, "%s%s (%s)", l ? "; " : "", path, why);
	s->n++;
}

static int run(const char *text, enum dispatch_unknown unknown, struct thing *t, char *err,
	       size_t errlen, struct dispatch_ctx *out, struct seen *seen)
{
	json_t *doc = json_loads(text, JSON_ALLOW_NUL, NULL);
	struct dispatch_ctx c = { .err = err, .errlen = errlen, .warn = warn, .userdata = seen };
	int r;

	assert_non_null(doc);
	r = dispatch_run(&c, "cfg", doc, fields, unknown, t);
	*out = c;
	json_decref(doc); /* borrowed strings are not read after this */
	return r;
}

static void test_ok(void **st)
{
	struct thing t = { 0 };
	struct seen seen = { "", 0 };
	struct dispatch_ctx c;
	char err[256] = "";

	(void)st;
	assert_int_equal(run("{\"name\":\"a\",\"on\":true,\"n\":null,"
			     "\"x\":1.5,\"port\":80,\"vlanProto\":"
			     "\"802.1ad\"}",
			     DISPATCH_UNKNOWN_REFUSE, &t, err, sizeof(err), &c, &seen),
			 0);
	assert_true(t.on);
	assert_int_equal(t.port, 80);
	assert_true(t.x == 1.5);
	assert_int_equal(seen.n, 1);
	assert_string_equal(seen.buf, "cfg.vlanProto (the anchor ignores it too)");
	assert_int_equal(c.error, DISPATCH_ERR_NONE);
}

static void test_refusals(void **st)
{
	static const struct {
		const char *doc;
		enum dispatch_unknown unknown;
		enum dispatch_error kind;
		const char *err;
	} cases[] = {
		{ "{}", DISPATCH_UNKNOWN_REFUSE, DISPATCH_ERR_MISSING, "cfg.name: missing" },
		{ "{\"name\":\"\"}", DISPATCH_UNKNOWN_REFUSE, DISPATCH_ERR_VALUE,
		  "cfg.name: must not be empty" },
		{ "{\"name\":\"a\\u0000b\"}", DISPATCH_UNKNOWN_REFUSE, DISPATCH_ERR_VALUE,
		  "cfg.name: contains a NUL byte" },
		{ "{\"name\":\"a\",\"on\":1}", DISPATCH_UNKNOWN_REFUSE, DISPATCH_ERR_VALUE,
		  "cfg.on: expected true or false, got an integer" },
		{ "{\"name\":\"a\",\"port\":0}", DISPATCH_UNKNOWN_REFUSE, DISPATCH_ERR_VALUE,
		  "cfg.port: 0 is out of range (1 to 65535)" },
		{ "{\"name\":\"a\",\"x\":\"1\"}", DISPATCH_UNKNOWN_REFUSE, DISPATCH_ERR_VALUE,
		  "cfg.x: expected a number, got a string" },
		{ "{\"name\":\"a\",\"typo\":1}", DISPATCH_UNKNOWN_REFUSE, DISPATCH_ERR_UNKNOWN,
		  "cfg.typo: unknown key" },
		{ "{\"name\":\"a\",\"a.b\":1}", DISPATCH_UNKNOWN_REFUSE, DISPATCH_ERR_UNKNOWN,
		  "cfg[\"a.b\"]: unknown key" },
		{ "{\"name\":\"a\",\"x\\ny\":1}", DISPATCH_UNKNOWN_REFUSE, DISPATCH_ERR_UNKNOWN,
		  "cfg[\"x?y\"]: unknown key" },
		{ "{\"name\":\"a\",\"typo\":1,\"n\":\"2\"}", DISPATCH_UNKNOWN_WARN,
		  DISPATCH_ERR_VALUE, "cfg.n: expected an integer, got a string" },
		{ "{\"name\":\"a\",\"ipMasq\":false}", DISPATCH_UNKNOWN_ALLOW, DISPATCH_ERR_UNKNOWN,
		  "cfg.ipMasq: no masquerading here" },
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct thing t = { 0 };
		struct seen seen = { "", 0 };
		struct dispatch_ctx c;
		char err[256] = "";

		assert_int_equal(
			run(cases[i].doc, cases[i].unknown, &t, err, sizeof(err), &c, &seen),
			-EINVAL);
		assert_string_equal(err, cases[i].err);
		assert_int_equal(c.error, cases[i].kind);
		/* the path alone, for a protocol that quotes it apart from the reason */
		assert_int_equal(strncmp(err, c.path, strlen(c.path)), 0);
		assert_memory_equal(err + strlen(c.path), ": ", 2);
		if (cases[i].kind == DISPATCH_ERR_UNKNOWN)
			assert_true(c.why ? !strcmp(err + strlen(c.path) + 2, c.why)
					  : !strcmp(err + strlen(c.path), ": unknown key"));
		else
			assert_null(c.why);
	}
}

/* An unknown or refused key's value comes with the refusal (CNI's code 2 quotes it). */
static void test_refused_value(void **st)
{
	json_t *doc = json_loads("{\"name\":\"a\",\"bridge\":\"cni0\"}", 0, NULL);
	struct thing t = { 0 };
	struct dispatch_ctx c = { 0 };
	char err[256];

	(void)st;
	c.err = err;
	c.errlen = sizeof(err);
	assert_int_equal(dispatch_run(&c, "", doc, fields, DISPATCH_UNKNOWN_REFUSE, &t), -EINVAL);
	assert_string_equal(c.path, "bridge");
	assert_string_equal(json_string_value(c.value), "cni0");
	assert_null(c.why);
	json_decref(doc);
	doc = json_loads("{\"name\":\"a\",\"ipMasq\":true}", 0, NULL);
	assert_int_equal(dispatch_run(&c, "", doc, fields, DISPATCH_UNKNOWN_REFUSE, &t), -EINVAL);
	assert_int_equal(c.error, DISPATCH_ERR_UNKNOWN);
	assert_string_equal(c.path, "ipMasq");
	assert_true(json_is_true(c.value));
	assert_string_equal(c.why, "no masquerading here");
	/* a value refusal afterwards carries no stale value or why */
	json_decref(doc);
	doc = json_loads("{\"name\":\"a\",\"port\":70000}", 0, NULL);
	assert_int_equal(dispatch_run(&c, "", doc, fields, DISPATCH_UNKNOWN_REFUSE, &t), -EINVAL);
	assert_int_equal(c.error, DISPATCH_ERR_VALUE);
	assert_string_equal(c.path, "port");
	assert_null(c.value);
	assert_null(c.why);
	json_decref(doc);
	/* a near miss refused under WARN is an unknown key too, with its value */
	{
		static const struct dispatch_field guarded[] = {
			DISPATCH_FIELD("name", JSON_STRING, NULL, offsetof(struct thing, name),
				       DISPATCH_TYPO_GUARD),
			{},
		};

		doc = json_loads("{\"nmae\":\"a\"}", 0, NULL);
		assert_int_equal(dispatch_run(&c, "", doc, guarded, DISPATCH_UNKNOWN_WARN, &t),
				 -EINVAL);
		assert_int_equal(c.error, DISPATCH_ERR_UNKNOWN);
		assert_string_equal(c.path, "nmae");
		assert_string_equal(json_string_value(c.value), "a");
		assert_null(c.why);
		json_decref(doc);
	}
}

static void test_unknown_policies(void **st)
{
	struct thing t = { 0 };
	struct seen seen = { "", 0 };
	struct dispatch_ctx c;
	char err[256] = "";

	(void)st;
	assert_int_equal(run("{\"name\":\"a\",\"SelectorObj\":null}", DISPATCH_UNKNOWN_WARN, &t,
			     err, sizeof(err), &c, &seen),
			 0);
	assert_string_equal(seen.buf, "cfg.SelectorObj (unknown key, ignored)");
	seen = (struct seen){ "", 0 };
	assert_int_equal(run("{\"name\":\"a\",\"grows\":{}}", DISPATCH_UNKNOWN_ALLOW, &t, err,
			     sizeof(err), &c, &seen),
			 0);
	assert_int_equal(seen.n, 0);
}

static int collect(struct dispatch_ctx *c, const char *path, json_t *e, size_t i, void *userdata)
{
	const char *s;
	int r = dispatch_string(c, path, e, true, &s);

	if (r < 0)
		return r;
	*(size_t *)userdata += strlen(s) + i;
	return 0;
}

static void test_readers(void **st)
{
	static const char *const modes[] = { "bridge", "private", "vepa", NULL };
	struct dispatch_ctx c = { 0 };
	char err[256] = "", *dup = NULL;
	json_t *v;
	size_t sum = 0;
	int idx = -1;

	(void)st;
	c.err = err;
	c.errlen = sizeof(err);
	v = json_string("vepa");
	assert_int_equal(dispatch_enum(&c, "mode", v, modes, &idx), 0);
	assert_int_equal(idx, 2);
	json_decref(v);
	v = json_string("bridged");
	assert_int_equal(dispatch_enum(&c, "mode", v, modes, &idx), -EINVAL);
	assert_string_equal(err,
			    "mode: \"bridged\" is not one of \"bridge\", \"private\", \"vepa\"");
	assert_int_equal(dispatch_strdup(&c, "mode", v, true, &dup), 0);
	assert_string_equal(dup, "bridged");
	free(dup);
	json_decref(v);

	v = json_loads("[\"ab\",\"c\"]", 0, NULL);
	assert_int_equal(dispatch_array(&c, "list", v, 2, collect, &sum), 0);
	assert_int_equal(sum, 2 + 0 + 1 + 1);
	assert_int_equal(dispatch_array(&c, "list", v, 1, collect, &sum), -EINVAL);
	assert_string_equal(err, "list: more than 1 entries");
	json_decref(v);
	v = json_loads("[\"ab\",\"\"]", 0, NULL);
	assert_int_equal(dispatch_array(&c, "list", v, 0, collect, &sum), -EINVAL);
	assert_string_equal(err, "list[1]: must not be empty");
	json_decref(v);
}

/* An anchor's keys read as Go reads them (any case), rdmak's own key guarded against typos,
 * and a mandatory key that says why it is needed. */
struct sel {
	bool is_rdma;
	json_int_t max;
	json_int_t health;
	json_t *envs;
};

static const struct dispatch_field sel_fields[] = {
	DISPATCH_FIELD("isRdma", DISPATCH_BOOL, NULL, offsetof(struct sel, is_rdma),
		       DISPATCH_CASEFOLD),
	DISPATCH_FIELD_WHY("rdmaHcaMax", JSON_INTEGER, NULL, offsetof(struct sel, max),
			   DISPATCH_CASEFOLD | DISPATCH_MANDATORY, "how many may share it"),
	DISPATCH_FIELD("healthIntervalMs", JSON_INTEGER, NULL, offsetof(struct sel, health),
		       DISPATCH_TYPO_GUARD),
	DISPATCH_FIELD("envs", JSON_OBJECT, NULL, offsetof(struct sel, envs), DISPATCH_TYPO_GUARD),
	{},
};

static int run_sel(const char *text, enum dispatch_unknown unknown, struct sel *t, char *err,
		   size_t errlen, struct seen *seen)
{
	json_t *doc = json_loads(text, 0, NULL);
	struct dispatch_ctx c = { .err = err, .errlen = errlen, .warn = warn, .userdata = seen };
	int r;

	assert_non_null(doc);
	r = dispatch_run(&c, "sel", doc, sel_fields, unknown, t);
	json_decref(doc);
	return r;
}

static void test_casefold_and_typos(void **st)
{
	static const struct {
		const char *doc;
		enum dispatch_unknown unknown;
		const char *err; /* NULL: accepted */
		const char *warned;
	} cases[] = {
		/* Go's encoding/json: "IsRdma" and "RDMAHCAMAX" are the fields */
		{ "{\"IsRdma\":true,\"RDMAHCAMAX\":3}", DISPATCH_UNKNOWN_REFUSE, NULL, "" },
		/* the path names the key as the document writes it */
		{ "{\"IsRdma\":1,\"rdmaHcaMax\":3}", DISPATCH_UNKNOWN_REFUSE,
		  "sel.IsRdma: expected true or false, got an integer", "" },
		{ "{\"rdmaHcaMax\":3,\"RdmaHcaMax\":4}", DISPATCH_UNKNOWN_REFUSE,
		  "sel.RdmaHcaMax: duplicate of key \"rdmaHcaMax\"", "" },
		{ "{\"isRdma\":true}", DISPATCH_UNKNOWN_REFUSE,
		  "sel.rdmaHcaMax: missing (how many may share it)", "" },
		/* rdmak's own keys match exactly; a near miss is refused under WARN... */
		{ "{\"rdmaHcaMax\":1,\"HealthIntervalMs\":5}", DISPATCH_UNKNOWN_WARN,
		  "sel.HealthIntervalMs: unknown key (did you mean \"healthIntervalMs\"?)", "" },
		{ "{\"rdmaHcaMax\":1,\"healthIntervallMS\":5}", DISPATCH_UNKNOWN_WARN,
		  "sel.healthIntervallMS: unknown key (did you mean \"healthIntervalMs\"?)", "" },
		{ "{\"rdmaHcaMax\":1,\"evns\":{}}", DISPATCH_UNKNOWN_WARN,
		  "sel.evns: unknown key (did you mean \"envs\"?)", "" },
		/* ...what is further off is the anchor's to ignore: warned */
		{ "{\"rdmaHcaMax\":1,\"eenvss\":{},\"SelectorObj\":null}", DISPATCH_UNKNOWN_WARN,
		  NULL,
		  "sel.eenvss (unknown key, ignored); sel.SelectorObj (unknown key, ignored)" },
		/* REFUSE keeps its one message */
		{ "{\"rdmaHcaMax\":1,\"evns\":{}}", DISPATCH_UNKNOWN_REFUSE,
		  "sel.evns: unknown key", "" },
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sel t = { 0 };
		struct seen seen = { "", 0 };
		char err[256] = "";
		int r = run_sel(cases[i].doc, cases[i].unknown, &t, err, sizeof(err), &seen);

		if (!cases[i].err) {
			if (r < 0)
				fail_msg("case %zu refused: %s", i, err);
		} else {
			assert_int_equal(r, -EINVAL);
			assert_string_equal(err, cases[i].err);
		}
		assert_string_equal(seen.buf, cases[i].warned);
	}
	{
		struct sel t = { 0 };
		struct seen seen = { "", 0 };
		char err[256] = "";

		assert_int_equal(run_sel("{\"ISRDMA\":true,\"rdmahcamax\":7}",
					 DISPATCH_UNKNOWN_REFUSE, &t, err, sizeof(err), &seen),
				 0);
		assert_true(t.is_rdma);
		assert_int_equal(t.max, 7);
	}
}

static void test_strv(void **st)
{
	struct dispatch_ctx c = { 0 };
	char err[256] = "", **strv = NULL;
	json_t *v;

	(void)st;
	c.err = err;
	c.errlen = sizeof(err);
	v = json_loads("[\"a\",\"\",\"c\"]", 0, NULL);
	assert_int_equal(dispatch_strv(&c, "list", v, 3, false, &strv), 0);
	assert_string_equal(strv[0], "a");
	assert_string_equal(strv[1], "");
	assert_string_equal(strv[2], "c");
	assert_null(strv[3]);
	strv_free(strv);
	strv = NULL;
	assert_int_equal(dispatch_strv(&c, "list", v, 2, false, &strv), -EINVAL);
	assert_string_equal(err, "list: more than 2 entries");
	assert_int_equal(dispatch_strv(&c, "list", v, 0, true, &strv), -EINVAL);
	assert_string_equal(err, "list[1]: must not be empty");
	assert_null(strv); /* written only on success */
	json_decref(v);
	v = json_loads("[\"a\",1]", 0, NULL);
	assert_int_equal(dispatch_strv(&c, "list", v, 0, false, &strv), -EINVAL);
	assert_string_equal(err, "list[1]: expected a string, got an integer");
	json_decref(v);
	v = json_loads("{}", 0, NULL);
	assert_int_equal(dispatch_strv(&c, "list", v, 0, false, &strv), -EINVAL);
	assert_string_equal(err, "list: expected an array, got an object");
	assert_null(strv);
	json_decref(v);
}

/* What a protocol that words its own refusal needs: a table key differing from an unknown key
 * only in case (not a refused row's), and dispatch_refuse for a value only a fn can judge. */
static const struct dispatch_field refusing[] = {
	DISPATCH_FIELD("range", JSON_STRING, NULL, 0, 0),
	DISPATCH_REFUSE("kubernetes", "keep no state in Kubernetes"),
	DISPATCH_REFUSE("Ranges", "a refused row is no suggestion"),
	{},
};

static int run_refusing(const char *text, struct dispatch_ctx *c, json_t **doc)
{
	const char *range = NULL;

	*doc = json_loads(text, 0, NULL);
	assert_non_null(*doc);
	return dispatch_run(c, "ipam", *doc, refusing, DISPATCH_UNKNOWN_REFUSE, &range);
}

static void test_suggest_and_refuse(void **st)
{
	char err[256] = "";
	struct dispatch_ctx c = { .err = err, .errlen = sizeof(err) };
	json_t *doc;

	(void)st;
	assert_int_equal(run_refusing("{\"RANGE\":\"x\"}", &c, &doc), -EINVAL);
	assert_string_equal(err, "ipam.RANGE: unknown key");
	assert_int_equal(c.error, DISPATCH_ERR_UNKNOWN);
	assert_ptr_equal(c.value, json_object_get(doc, "RANGE"));
	assert_null(c.why);
	assert_string_equal(c.suggest, "range");
	json_decref(doc);
	assert_int_equal(run_refusing("{\"ranges\":1}", &c, &doc), -EINVAL);
	assert_null(c.suggest);
	json_decref(doc);
	assert_int_equal(run_refusing("{\"kubernetes\":{}}", &c, &doc), -EINVAL);
	assert_string_equal(c.why, "keep no state in Kubernetes");
	assert_null(c.suggest);
	json_decref(doc);
	/* a later refusal leaves no suggestion behind */
	assert_int_equal(run_refusing("{\"range\":1}", &c, &doc), -EINVAL);
	assert_string_equal(c.path, "ipam.range");
	assert_int_equal(c.error, DISPATCH_ERR_VALUE);
	assert_null(c.suggest);
	assert_null(c.value);
	json_decref(doc);
	doc = json_false();
	assert_int_equal(dispatch_refuse(&c, "ipam.flag", doc, "it is always on"), -EINVAL);
	assert_string_equal(err, "ipam.flag: it is always on");
	assert_int_equal(c.error, DISPATCH_ERR_UNKNOWN);
	assert_ptr_equal(c.value, doc);
	assert_string_equal(c.why, "it is always on");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ok),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_unknown_policies),
		cmocka_unit_test(test_readers),
		cmocka_unit_test(test_casefold_and_typos),
		cmocka_unit_test(test_refused_value),
		cmocka_unit_test(test_strv),
		cmocka_unit_test(test_suggest_and_refuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
