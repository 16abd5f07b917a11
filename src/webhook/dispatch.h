/* Declarative JSON object reading, after systemd's sd_json_dispatch as machine-varlink.c uses it:
 * a table names each field the reader accepts, its type, where it goes and whether it is
 * required; one call walks the object and reports the first bad field by its path. The
 * AdmissionReview reader and the config parser both go through it. */
#ifndef RDMAK_WEBHOOK_DISPATCH_H
#define RDMAK_WEBHOOK_DISPATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct jd_ctx {
	char *err;     /* "<path>: <reason>" of the first refusal */
	size_t errlen;
};

enum {
	JD_MANDATORY = 1 << 0, /* absent (or null) is an error */
	JD_NULLABLE = 1 << 1,  /* null reads as absent */
	JD_NONEMPTY = 1 << 2,  /* strings: "" is an error */
};

/* The type a field must have: a jansson type, or JD_BOOL (true or false), or JD_ANY. */
#define JD_BOOL ((int)JSON_TRUE)
#define JD_ANY (-1)

struct jd_field;
/* Store v (already type-checked) into the target; path names the field for messages. */
typedef int (*jd_fn)(struct jd_ctx *c, const char *path, json_t *v, void *target);

struct jd_field {
	const char *name;
	int type;
	jd_fn fn;      /* NULL: the default for the type, see below */
	size_t offset; /* into the base pointer handed to dispatch_run */
	unsigned flags;
};

/* Defaults without fn: a string is stored as `const char *` (borrowed from the JSON, valid while it
 * lives), an object, array or JD_ANY as `json_t *` (borrowed), JD_BOOL as `bool`, an integer as
 * `json_int_t`. Unknown keys are an error unless allow_unknown (an AdmissionReview grows fields;
 * a config must not: a typo there is silent misconfiguration). Returns 0 or -EINVAL / -ENOMEM. */
int dispatch_run(struct jd_ctx *c, const char *path, json_t *obj, const struct jd_field *fields, bool allow_unknown,
		void *base);

int dispatch_fail(struct jd_ctx *c, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* "base.key" / "base[i]" into dst (cut short, never overflowing: paths only end up in messages).
 * Keys that are not plain words are quoted: groups["a.b"]. */
void dispatch_path_key(char *dst, size_t n, const char *base, const char *key);
void dispatch_path_idx(char *dst, size_t n, const char *base, size_t i);

const char *dispatch_type_name(const json_t *v);

#endif
