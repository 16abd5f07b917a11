/* SPDX-License-Identifier: Apache-2.0 */
/* dispatch: the one way rdmak reads a JSON object, after systemd's sd_json_dispatch as
 * machine-varlink.c uses it. A table names each key the reader accepts, its type, where its
 * value goes and whether it is required; one walker checks the object against it and reports
 * the first bad field by its JSON path, in one shape ("<path>: <reason>"). Every config and
 * request reader (rdmak-cni, rdmak-ipam, the device plugin, the CNI result, the webhook's
 * AdmissionReview and config) is a table over it, so that a new key is one row.
 *
 * Keys that are not in the table follow the walker's `unknown` policy: refused (a config's
 * typo must not be silent misconfiguration), warned about (the anchor ignores them: accepted,
 * each named through ctx->warn), or allowed silently (a request that grows fields, such as an
 * AdmissionReview). A row flagged DISPATCH_IGNORED is a key an anchor accepts and ignores:
 * always accepted, and named through ctx->warn with the row's `why`. A row flagged
 * DISPATCH_REFUSED is a key an anchor knows that this reader refuses by name: refused like an
 * unknown key, with the row's `why` as the reason.
 *
 * Rows are read in table order, so that a row's fn can rely on the rows above it.
 *
 * Nothing here prints: warnings go to the caller's callback, errors into ctx->err. */
#ifndef RDMAK_DISPATCH_H
#define RDMAK_DISPATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the first refusal was about, so that a protocol can pick its code for it (CNI:
 * an unknown key is code 2 "unsupported field", a bad value code 7 "invalid config"). */
enum dispatch_error {
	DISPATCH_ERR_NONE = 0,
	DISPATCH_ERR_VALUE,   /* wrong type or refused value */
	DISPATCH_ERR_MISSING, /* a mandatory key is absent */
	DISPATCH_ERR_UNKNOWN, /* a key the table does not name (DISPATCH_UNKNOWN_REFUSE), or a DISPATCH_REFUSED row */
};

#define DISPATCH_PATH_MAX 256

struct dispatch_ctx {
	char *err; /* "<path>: <reason>" of the first refusal */
	size_t errlen;
	enum dispatch_error error; /* its kind, set with err */
	/* The refused field's path (err without the reason) and, for DISPATCH_ERR_UNKNOWN, the
	 * key's value (borrowed from the document) and the DISPATCH_REFUSED row's why (NULL for a
	 * key the table does not name): a protocol that quotes them apart (CNI: the message names
	 * the path; "the key and value of the unsupported field") needs not take err apart. */
	char path[DISPATCH_PATH_MAX];
	const json_t *value;
	const char *why;
	/* For a key the table does not name under DISPATCH_UNKNOWN_REFUSE: the table's key that
	 * differs from it only in ASCII case (NULL: none), so that the protocol's message can ask
	 * "did you mean \"range\"?" (Go's decoders match any case; "Range" meant "range"). */
	const char *suggest;
	/* Called for each key accepted but ignored (path, and why: "ignored, as <anchor> does").
	 * NULL: ignored keys pass without a word. */
	void (*warn)(void *userdata, const char *path, const char *why);
	void *userdata;
};

enum {
	DISPATCH_MANDATORY = 1 << 0, /* absent (or null) is an error */
	DISPATCH_NULLABLE = 1 << 1,  /* null reads as absent */
	DISPATCH_NONEMPTY = 1 << 2,  /* strings: "" is an error */
	DISPATCH_IGNORED = 1 << 3,   /* accepted with any value, warned about, stored nowhere */
	/* Also matches the key in another ASCII case, as Go's encoding/json matches a struct's
	 * fields ("IsRdma" for "isRdma"): an anchor's config must read the same here. Two keys of
	 * one object for the same row ("resourceName" and "ResourceName") are refused, where Go
	 * silently keeps the last. Paths name the key as the document writes it. */
	DISPATCH_CASEFOLD = 1 << 4,
	/* rdmak's own key among an anchor's: under DISPATCH_UNKNOWN_WARN, an unknown key that is a
	 * near miss of this one (another case, or one or two letters off) is refused, "unknown
	 * key (did you mean \"name\"?)", not warned about: the anchor never knew the key, so
	 * the typo can only be a user's of rdmak, whose setting would otherwise be lost. */
	DISPATCH_TYPO_GUARD = 1 << 5,
	DISPATCH_REFUSED = 1 << 6, /* refused with any value, its why as the reason */
};

/* What the walker does with a key the table does not name. */
enum dispatch_unknown {
	DISPATCH_UNKNOWN_REFUSE = 0,
	DISPATCH_UNKNOWN_WARN,	/* accepted and named through ctx->warn */
	DISPATCH_UNKNOWN_ALLOW, /* accepted silently */
};

/* The type a field must have: a jansson type (JSON_STRING, JSON_OBJECT, JSON_ARRAY,
 * JSON_INTEGER), or DISPATCH_BOOL (true or false), DISPATCH_NUMBER (integer or real), or
 * DISPATCH_ANY. */
#define DISPATCH_BOOL	((int)JSON_TRUE)
#define DISPATCH_NUMBER ((int)JSON_REAL)
#define DISPATCH_ANY	(-1)

struct dispatch_field;
/* Store v (already type-checked) into the target; path names the field for messages.
 * Returns 0, or the result of dispatch_fail() (-EINVAL), or -ENOMEM. */
typedef int (*dispatch_fn)(struct dispatch_ctx *c, const char *path, json_t *v, void *target);

struct dispatch_field {
	const char *name;
	int type;
	dispatch_fn fn; /* NULL: the default for the type, see below */
	size_t offset;	/* into the base pointer handed to dispatch_run */
	unsigned flags;
	const char *why; /* DISPATCH_IGNORED: the warning's reason ("sriov-cni ignores it too");
			  * DISPATCH_MANDATORY: said after "missing" ("missing (<why>)") */
};

/* Table rows: DISPATCH_FIELD("key", type, fn, offsetof(...), flags), DISPATCH_IGNORE("key",
 * "why"), DISPATCH_REFUSE("key", "why"), and {} last. */
#define DISPATCH_FIELD(n, t, f, off, fl)                                                           \
	{                                                                                          \
		.name = (n), .type = (t), .fn = (f), .offset = (off), .flags = (fl)                \
	}
#define DISPATCH_IGNORE(n, w)                                                                      \
	{                                                                                          \
		.name = (n), .type = DISPATCH_ANY, .flags = DISPATCH_IGNORED, .why = (w)           \
	}
#define DISPATCH_REFUSE(n, w)                                                                      \
	{                                                                                          \
		.name = (n), .type = DISPATCH_ANY, .flags = DISPATCH_REFUSED, .why = (w)           \
	}
/* A mandatory field whose absence deserves a reason ("how many containers may share it"). */
#define DISPATCH_FIELD_WHY(n, t, f, off, fl, w)                                                    \
	{                                                                                          \
		.name = (n), .type = (t), .fn = (f), .offset = (off), .flags = (fl), .why = (w)    \
	}

/* Defaults without fn: a string is stored as `const char *` (borrowed from the JSON, valid
 * while it lives), an object, array or DISPATCH_ANY as `json_t *` (borrowed), DISPATCH_BOOL as
 * `bool`, an integer as `json_int_t`, DISPATCH_NUMBER as `double`. The table ends with a row
 * whose name is NULL. Returns 0 or -EINVAL (ctx->err says why) / -ENOMEM. */
int dispatch_run(struct dispatch_ctx *c, const char *path, json_t *obj,
		 const struct dispatch_field *fields, enum dispatch_unknown unknown, void *base);

/* Fills ctx->err with "<path>: <reason>" (ctx->error = DISPATCH_ERR_VALUE) and returns
 * -EINVAL, so that `return dispatch_fail(...)` is one step. */
int dispatch_fail(struct dispatch_ctx *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same with the error's kind. */
int dispatch_fail_kind(struct dispatch_ctx *c, enum dispatch_error kind, const char *path,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Refuses a key (or one of its values) that the reader knows and does not support, as a
 * DISPATCH_REFUSED row does: "<path>: <why>", DISPATCH_ERR_UNKNOWN, ctx->value = v and
 * ctx->why = why (a string that outlives ctx). For a value that only a row's fn can judge
 * (whereabouts' "datastore": "kubernetes"). Returns -EINVAL. */
int dispatch_refuse(struct dispatch_ctx *c, const char *path, const json_t *v, const char *why);
/* Names an ignored or unknown-but-accepted key through ctx->warn, if any. */
void dispatch_warn(struct dispatch_ctx *c, const char *path, const char *why);

/* "base.key" / "base[i]" into dst (cut short, never overflowing: paths only end up in
 * messages). Keys that are not plain words are quoted: groups["a.b"]. Control characters
 * become '?'. */
void dispatch_path_key(char *dst, size_t n, const char *base, const char *key);
void dispatch_path_idx(char *dst, size_t n, const char *base, size_t i);

const char *dispatch_type_name(const json_t *v);

/* ---- value readers a table's fn can call (each names path in its refusal) ------------------- */

/* A string without NUL bytes (and, with nonempty, not ""). */
int dispatch_string(struct dispatch_ctx *c, const char *path, const json_t *v, bool nonempty,
		    const char **ret);
/* The same, copied with strdup into *ret (the previous *ret freed). */
int dispatch_strdup(struct dispatch_ctx *c, const char *path, const json_t *v, bool nonempty,
		    char **ret);
/* An integer within [lo, hi]: "expected an integer from lo to hi" / "N is out of range". */
int dispatch_int_range(struct dispatch_ctx *c, const char *path, const json_t *v, long long lo,
		       long long hi, long long *ret);
/* true or false. */
int dispatch_bool(struct dispatch_ctx *c, const char *path, const json_t *v, bool *ret);
/* One of the strings of names[] (NULL-terminated): its index. "expected one of a, b, c". */
int dispatch_enum(struct dispatch_ctx *c, const char *path, const json_t *v,
		  const char *const *names, int *ret);
/* An array of strings (each without NUL bytes, and with nonempty not "") as a NULL-terminated
 * malloc'd vector in *ret (util/strv.h's strv_free frees it), written only on success. max > 0
 * refuses longer arrays, as dispatch_array does. */
int dispatch_strv(struct dispatch_ctx *c, const char *path, const json_t *v, size_t max,
		  bool nonempty, char ***ret);
/* Calls fn(c, "path[i]", element, userdata) for each element of an array; stops at the first
 * failure. max > 0 refuses longer arrays ("more than max entries"). */
int dispatch_array(struct dispatch_ctx *c, const char *path, const json_t *v, size_t max,
		   int (*fn)(struct dispatch_ctx *c, const char *path, json_t *elem, size_t i,
			     void *userdata),
		   void *userdata);

#endif
