/* SPDX-License-Identifier: Apache-2.0 */
#include "diag/parse.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/strutil.h"

/* Every parser works on a NUL-terminated private copy: the input may be any bytes (fuzzing),
 * with embedded NULs cut at the first one. */
static char *buf_dup(const char *buf, size_t len)
{
	char *s = malloc(len + 1);

	if (!s)
		return NULL;
	if (len)
		memcpy(s, buf, len);
	s[len] = '\0';
	return s;
}

/* Next line of *cursor (NUL-terminated in place), NULL at the end. */
static char *next_line(char **cursor)
{
	char *l = *cursor, *nl;

	if (!l || !*l)
		return NULL;
	nl = strchr(l, '\n');
	if (nl) {
		*nl = '\0';
		*cursor = nl + 1;
	} else {
		*cursor = l + strlen(l);
	}
	return l;
}

static char *skip_ws(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static int limit_value(const char *tok, uint64_t *ret)
{
	unsigned long long v;

	if (strcmp(tok, "unlimited") == 0) {
		*ret = DIAG_UNLIMITED;
		return 0;
	}
	if (str_to_u64(tok, 10, &v) < 0)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* /proc/<pid>/limits (fs/proc/base.c proc_pid_limits): "%-25s %-20s %-20s %-10s\n", the name
 * padded to 25 columns, so names with spaces are found by prefix and the values follow. */
int diag_limits_parse(const char *buf, size_t len, const char *name, uint64_t *soft, uint64_t *hard)
{
	_cleanup_free_ char *copy = buf_dup(buf, len);
	char *cur = copy, *line;
	size_t nl = strlen(name);

	if (!copy)
		return -ENOMEM;
	while ((line = next_line(&cur))) {
		char *p, *tok_soft, *tok_hard, *save = NULL;
		uint64_t s, h;

		if (strncmp(line, name, nl) != 0 || (line[nl] != ' ' && line[nl] != '\t'))
			continue;
		p = line + nl;
		tok_soft = strtok_r(p, " \t", &save);
		/* "Max locked" must not match "Max locked memory": the next word has to be a value */
		if (!tok_soft || (!isdigit((unsigned char)tok_soft[0]) && tok_soft[0] != '-' &&
				  strcmp(tok_soft, "unlimited")))
			continue;
		tok_hard = strtok_r(NULL, " \t", &save);
		if (!tok_hard || limit_value(tok_soft, &s) < 0 || limit_value(tok_hard, &h) < 0)
			return -EINVAL;
		*soft = s;
		*hard = h;
		return 1;
	}
	return 0;
}

static int hex64(const char *s, uint64_t *ret)
{
	unsigned long long v;

	if (str_to_u64(s, 16, &v) < 0 || strlen(s) > 16)
		return -EINVAL;
	*ret = v;
	return 0;
}

int diag_proc_status_parse(const char *buf, size_t len, struct diag_proc_status *ret)
{
	_cleanup_free_ char *copy = buf_dup(buf, len);
	struct diag_proc_status st = { 0 };
	char *cur = copy, *line;
	unsigned caps = 0;

	if (!copy)
		return -ENOMEM;
	while ((line = next_line(&cur))) {
		char *colon = strchr(line, ':'), *val;
		uint64_t *cap = NULL;

		if (!colon)
			continue;
		*colon = '\0';
		val = skip_ws(colon + 1);
		str_rstrip(val);
		if (strcmp(line, "Uid") == 0) {
			unsigned long u[4];
			int n;

			if (sscanf(val, "%lu %lu %lu %lu%n", &u[0], &u[1], &u[2], &u[3], &n) != 4 ||
			    val[n])
				return -EINVAL;
			for (int i = 0; i < 4; i++) {
				if (u[i] > UINT32_MAX)
					return -EINVAL;
				st.uid[i] = (uint32_t)u[i];
			}
			st.has_uid = true;
			continue;
		}
		if (strcmp(line, "CapInh") == 0)
			cap = &st.cap_inh;
		else if (strcmp(line, "CapPrm") == 0)
			cap = &st.cap_prm;
		else if (strcmp(line, "CapEff") == 0)
			cap = &st.cap_eff;
		else if (strcmp(line, "CapBnd") == 0)
			cap = &st.cap_bnd;
		else if (strcmp(line, "CapAmb") == 0)
			cap = &st.cap_amb;
		if (!cap)
			continue;
		if (hex64(val, cap) < 0)
			return -EINVAL;
		if (cap == &st.cap_eff)
			caps |= 1;
		caps |= 2;
	}
	/* CapEff is the one that decides (kernel capable()); without it the rest is noise. */
	st.has_caps = caps & 1;
	*ret = st;
	return st.has_uid || st.has_caps;
}

/* Decode the kernel's octal escapes (seq_file mangle: space, tab, newline, backslash). */
static int unescape(const char *s, char *out, size_t n)
{
	size_t o = 0;

	for (; *s; s++) {
		char c = *s;

		if (c == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			c = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		}
		if (o + 1 >= n)
			return -ENAMETOOLONG;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

static int fill_entry(struct diag_mount_entry *e, const char *mp, const char *fstype,
		      const char *source, const char *opt1, const char *opt2)
{
	int n;

	if (unescape(mp, e->mountpoint, sizeof(e->mountpoint)) < 0 ||
	    unescape(source, e->source, sizeof(e->source)) < 0 ||
	    str_copy(e->fstype, sizeof(e->fstype), fstype) < 0)
		return -EINVAL;
	n = snprintf(e->options, sizeof(e->options), "%s%s%s", opt1, opt2 && *opt2 ? "," : "",
		     opt2 ? opt2 : "");
	if (n < 0 || (size_t)n >= sizeof(e->options))
		return -EINVAL;
	return 0;
}

/* mountinfo (Documentation/filesystems/proc.rst 3.5):
 * "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue" */
int diag_mountinfo_find(const char *buf, size_t len, const char *mountpoint,
			struct diag_mount_entry *ret)
{
	_cleanup_free_ char *copy = buf_dup(buf, len);
	char *cur = copy, *line;
	struct diag_mount_entry e;
	int found = 0;

	if (!copy)
		return -ENOMEM;
	while ((line = next_line(&cur))) {
		char *f[6], *save = NULL, *tok, *fstype, *source, *super;
		int i;

		for (i = 0; i < 6; i++) {
			f[i] = strtok_r(i ? NULL : line, " ", &save);
			if (!f[i])
				break;
		}
		if (i < 6)
			continue; /* short line: not a mount */
		/* optional fields until the lone "-" */
		while ((tok = strtok_r(NULL, " ", &save)) && strcmp(tok, "-") != 0)
			;
		if (!tok)
			return -EINVAL;
		fstype = strtok_r(NULL, " ", &save);
		source = fstype ? strtok_r(NULL, " ", &save) : NULL;
		super = source ? strtok_r(NULL, " ", &save) : NULL;
		if (!super)
			return -EINVAL;
		{
			char mp[256];

			if (unescape(f[4], mp, sizeof(mp)) < 0 || strcmp(mp, mountpoint) != 0)
				continue;
		}
		if (fill_entry(&e, f[4], fstype, source, f[5], super) < 0)
			return -EINVAL;
		found = 1; /* keep going: a later mount on the same point covers this one */
	}
	if (found)
		*ret = e;
	return found;
}

int diag_mounts_find(const char *buf, size_t len, const char *mountpoint,
		     struct diag_mount_entry *ret)
{
	_cleanup_free_ char *copy = buf_dup(buf, len);
	char *cur = copy, *line;
	struct diag_mount_entry e;
	int found = 0;

	if (!copy)
		return -ENOMEM;
	while ((line = next_line(&cur))) {
		char *save = NULL, *source, *mp, *fstype, *opts;
		char mpbuf[256];

		source = strtok_r(line, " \t", &save);
		mp = source ? strtok_r(NULL, " \t", &save) : NULL;
		fstype = mp ? strtok_r(NULL, " \t", &save) : NULL;
		opts = fstype ? strtok_r(NULL, " \t", &save) : NULL;
		if (!opts)
			continue;
		if (unescape(mp, mpbuf, sizeof(mpbuf)) < 0 || strcmp(mpbuf, mountpoint) != 0)
			continue;
		if (fill_entry(&e, mp, fstype, source, opts, NULL) < 0)
			return -EINVAL;
		found = 1;
	}
	if (found)
		*ret = e;
	return found;
}

/* tmpfs prints "size=%luk" (mm/shmem.c shmem_show_options); a hand-written fstab may say
 * 1g or 64m, so every memparse() suffix is accepted. */
int diag_mount_option_size(const char *options, uint64_t *bytes)
{
	const char *p = options;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t l = end ? (size_t)(end - p) : strlen(p);

		if (l > 5 && strncmp(p, "size=", 5) == 0) {
			char num[32], *e;
			unsigned long long v, mul = 1;

			if (l - 5 >= sizeof(num))
				return -EINVAL;
			memcpy(num, p + 5, l - 5);
			num[l - 5] = '\0';
			if (!isdigit((unsigned char)num[0]))
				return -EINVAL;
			errno = 0;
			v = strtoull(num, &e, 10);
			if (errno)
				return -EINVAL;
			switch (*e) {
			case '\0': break;
			case '%': return 0;
			case 'k':
			case 'K':
				mul = 1ull << 10;
				e++;
				break;
			case 'm':
			case 'M':
				mul = 1ull << 20;
				e++;
				break;
			case 'g':
			case 'G':
				mul = 1ull << 30;
				e++;
				break;
			case 't':
			case 'T':
				mul = 1ull << 40;
				e++;
				break;
			default: return -EINVAL;
			}
			if (*e || (v && mul > UINT64_MAX / v))
				return -EINVAL;
			*bytes = v * mul;
			return 1;
		}
		p = end ? end + 1 : NULL;
	}
	return 0;
}

int diag_cgroup_value_parse(const char *buf, size_t len, uint64_t *bytes)
{
	char tmp[32];
	unsigned long long v;

	if (len >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, buf, len);
	tmp[len] = '\0';
	str_rstrip(tmp);
	if (strcmp(tmp, "max") == 0) {
		*bytes = DIAG_UNLIMITED;
		return 0;
	}
	if (str_to_u64(tmp, 10, &v) < 0)
		return -EINVAL;
	/* cgroup v1 reports "no limit" as PAGE_COUNTER_MAX * PAGE_SIZE, which depends on the page
	 * size (9223372036854771712 with 4 KiB pages); anything from 2^62 up is no limit. */
	*bytes = v >= (1ull << 62) ? DIAG_UNLIMITED : v;
	return 0;
}

int diag_cgroup_path_parse(const char *buf, size_t len, bool v2, char *path, size_t n)
{
	_cleanup_free_ char *copy = buf_dup(buf, len);
	char *cur = copy, *line;

	if (!copy)
		return -ENOMEM;
	while ((line = next_line(&cur))) {
		char *c1 = strchr(line, ':'), *c2, *ctrl;

		if (!c1 || !(c2 = strchr(c1 + 1, ':')))
			continue;
		*c1 = *c2 = '\0';
		ctrl = c1 + 1;
		if (v2 ? (strcmp(line, "0") != 0 || *ctrl) : !strstr(ctrl, "memory"))
			continue;
		if (!v2) { /* "memory" must be a whole item of the comma list ("cpu,memory" is rare but legal) */
			char *save = NULL, *t;
			bool ok = false;

			for (t = strtok_r(ctrl, ",", &save); t; t = strtok_r(NULL, ",", &save))
				ok |= strcmp(t, "memory") == 0;
			if (!ok)
				continue;
		}
		if (c2[1] != '/')
			return -EINVAL;
		return str_copy(path, n, c2 + 1) < 0 ? -ENAMETOOLONG : 1;
	}
	return 0;
}

static bool dev_num_matches(const char *field, unsigned v)
{
	unsigned long long n;

	return strcmp(field, "*") == 0 || (str_to_u64(field, 10, &n) == 0 && n == v);
}

/* security/device_cgroup.c devcgroup_seq_show: "%c %s:%s %s" with type a/c/b, "*" for any
 * number, access a subset of "rwm". */
int diag_devices_list_allows(const char *buf, size_t len, unsigned major, unsigned minor)
{
	_cleanup_free_ char *copy = buf_dup(buf, len);
	char *cur = copy, *line;

	if (!copy)
		return -ENOMEM;
	while ((line = next_line(&cur))) {
		char type[2], maj[16], min[16], acc[8];
		int n;

		if (!*line)
			continue;
		if (sscanf(line, "%1s %15[^:]:%15s %7s%n", type, maj, min, acc, &n) != 4 ||
		    line[n] || !strchr("acb", type[0]) || strspn(acc, "rwm") != strlen(acc))
			return -EINVAL;
		if (type[0] == 'a' ||
		    (type[0] == 'c' && dev_num_matches(maj, major) && dev_num_matches(min, minor)))
			if (strchr(acc, 'r') && strchr(acc, 'w'))
				return 1;
	}
	return 0;
}

int diag_nccl_list_parse(const char *s, struct diag_nccl_list *ret)
{
	struct diag_nccl_list l = { 0 };
	const char *p = s;

	if (*p == '^') {
		l.exclude = true;
		p++;
	}
	if (*p == '=') {
		l.exact = true;
		p++;
	}
	while (*p) {
		const char *end = strchr(p, ','), *colon;
		size_t len = end ? (size_t)(end - p) : strlen(p), nlen;
		struct diag_nccl_entry *e;

		if (l.n == NCCL_LIST_MAX)
			return -E2BIG;
		e = &l.e[l.n];
		colon = memchr(p, ':', len);
		nlen = colon ? (size_t)(colon - p) : len;
		if (nlen == 0 || nlen >= sizeof(e->name))
			return -EINVAL;
		memcpy(e->name, p, nlen);
		e->name[nlen] = '\0';
		e->port = -1;
		if (colon) {
			char num[16];
			const char *pe = memchr(colon + 1, ':', len - nlen - 1);
			size_t plen = pe ? (size_t)(pe - colon - 1) : len - nlen - 1;
			unsigned long long v;

			if (plen == 0 || plen >= sizeof(num))
				return -EINVAL;
			memcpy(num, colon + 1, plen);
			num[plen] = '\0';
			if (str_to_u64(num, 10, &v) < 0 || v > 255)
				return -EINVAL;
			e->port = (int)v;
		}
		l.n++;
		if (!end)
			break;
		p = end + 1;
		if (!*p)
			return -EINVAL; /* trailing comma: an empty name */
	}
	*ret = l;
	return 0;
}

bool diag_nccl_entry_match(const struct diag_nccl_list *l, const struct diag_nccl_entry *e,
			   const char *name, int port)
{
	if (e->port >= 0 && port >= 0 && e->port != port)
		return false;
	/* NCCL matchIf(): exact compare, or strncmp(name, entry, strlen(entry)) == 0 */
	return l->exact ? strcmp(name, e->name) == 0 : strncmp(name, e->name, strlen(e->name)) == 0;
}

bool diag_nccl_list_selects(const struct diag_nccl_list *l, const char *name, int port)
{
	bool m = false;

	if (l->n == 0) /* NCCL: an empty list matches nothing, so "^" alone keeps everything */
		return l->exclude;
	for (size_t i = 0; i < l->n && !m; i++)
		m = diag_nccl_entry_match(l, &l->e[i], name, port);
	return m != l->exclude;
}

static int env_push(struct diag_env *env, const char *kv)
{
	char **v;

	if (!strchr(kv, '=') || kv[0] == '=')
		return 0; /* not an assignment: ignored like the shell would not export it */
	v = realloc(env->kv, (env->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	env->kv = v;
	env->kv[env->n] = strdup(kv);
	if (!env->kv[env->n])
		return -ENOMEM;
	env->n++;
	return 0;
}

static bool env_key_char(char c, bool first)
{
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (!first && c >= '0' && c <= '9');
}

#define ENV_NOT_ASSIGNMENT                                                                         \
	"not an assignment: KEY=VALUE with KEY a shell name ([A-Za-z_][A-Za-z0-9_]*)"

/* One line of an --env file, as `set -a; . FILE` would take it, or -EINVAL with the reason in
 * *why. What a shell would expand or run ($, `, \, ;, |, &, <, >, parentheses, words after
 * the value) is refused rather than guessed at (docs/doctor.md, "--env FILE"). */
static int env_push_line(struct diag_env *env, char *line, const char **why)
{
	_cleanup_free_ char *kv = NULL;
	char *p = skip_ws(line), *key, *val, *o;
	size_t kl;

	if (!*p || *p == '#')
		return 0;
	if (!strncmp(p, "export", 6) && (p[6] == ' ' || p[6] == '\t'))
		p = skip_ws(p + 6);
	key = p;
	if (!env_key_char(*p, true)) {
		*why = ENV_NOT_ASSIGNMENT;
		return -EINVAL;
	}
	while (env_key_char(*p, false))
		p++;
	if (*p != '=') {
		*why = ENV_NOT_ASSIGNMENT;
		return -EINVAL;
	}
	kl = (size_t)(p - key) + 1; /* with the '=' */
	kv = malloc(strlen(key) + 1);
	if (!kv)
		return -ENOMEM;
	memcpy(kv, key, kl);
	o = kv + kl;
	val = p + 1;
	if (*val == '\'' || *val == '"') {
		char q = *val++, *end = strchr(val, q), *special = strpbrk(val, "$`\\");

		if (!end) {
			*why = "a quote that does not close on its line";
			return -EINVAL;
		}
		if (q == '"' && special && special < end) {
			*why = "$, ` or \\ inside double quotes (the shell would expand them): use single quotes";
			return -EINVAL;
		}
		memcpy(o, val, (size_t)(end - val));
		o += end - val;
		p = end + 1;
	} else {
		for (p = val; *p && *p != ' ' && *p != '\t'; p++) {
			if (strchr("$`\\\"';|&<>()", *p)) {
				*why = "a character the shell would interpret ($ ` \\ \" ' ; | & < > ( )): put the value in single quotes";
				return -EINVAL;
			}
			*o++ = *p;
		}
	}
	*o = '\0';
	/* after the value: nothing, or blanks and a comment (a '#' right after a value is part of it
	 * in a shell, and was taken above as such only when unquoted) */
	if (*p && *p != ' ' && *p != '\t') {
		*why = "text right after the closing quote: quote the whole value";
		return -EINVAL;
	}
	p = skip_ws(p);
	if (*p && *p != '#') {
		*why = "text after the value (in a shell, `X=a b` runs b with X set): quote the value";
		return -EINVAL;
	}
	return env_push(env, kv);
}

int diag_env_parse(const char *buf, size_t len, bool environ_fmt, struct diag_env *ret, char *err,
		   size_t errlen)
{
	struct diag_env env = { 0 };
	int r = 0;

	if (environ_fmt) { /* /proc/<pid>/environ: NUL-terminated KEY=VALUE records */
		size_t i = 0;

		while (i < len && r >= 0) {
			const char *s = buf + i;
			size_t l = strnlen(s, len - i);
			_cleanup_free_ char *kv = buf_dup(s, l);

			r = kv ? env_push(&env, kv) : -ENOMEM;
			i += l + 1;
		}
	} else {
		_cleanup_free_ char *copy = NULL;
		const char *nul = memchr(buf, '\0', len), *why = "";
		char *cur, *line;
		unsigned lineno = 0;

		if (nul) {
			/* never a silent switch to the environ format: the caller decides on that */
			for (const char *c = buf; c < nul; c++)
				lineno += *c == '\n';
			snprintf(
				err, errlen,
				"line %u: a NUL byte (read as /proc/PID/environ only when the file is named "
				"environ or ends in a NUL byte)",
				lineno + 1);
			return -EINVAL;
		}
		if (!(copy = buf_dup(buf, len)))
			return -ENOMEM;
		cur = copy;
		while (r >= 0 && (line = next_line(&cur))) {
			lineno++;
			r = env_push_line(&env, line, &why);
		}
		if (r == -EINVAL)
			snprintf(err, errlen, "line %u: %s", lineno, why);
	}
	if (r < 0) {
		diag_env_clear(&env);
		return r;
	}
	*ret = env;
	return 0;
}

int diag_env_from_environ(char *const *environ_, struct diag_env *ret)
{
	struct diag_env env = { 0 };

	for (size_t i = 0; environ_ && environ_[i]; i++)
		if (env_push(&env, environ_[i]) < 0) {
			diag_env_clear(&env);
			return -ENOMEM;
		}
	*ret = env;
	return 0;
}

const char *diag_env_get(const struct diag_env *env, const char *key)
{
	size_t kl = strlen(key);
	const char *found = NULL;

	/* the last assignment wins, as in a shell file */
	for (size_t i = 0; i < env->n; i++)
		if (strncmp(env->kv[i], key, kl) == 0 && env->kv[i][kl] == '=')
			found = env->kv[i] + kl + 1;
	return found;
}

void diag_env_clear(struct diag_env *env)
{
	for (size_t i = 0; i < env->n; i++)
		free(env->kv[i]);
	free(env->kv);
	env->kv = NULL;
	env->n = 0;
}

int diag_nvidia_version_parse(const char *buf, size_t len, unsigned *major, bool *open_module)
{
	_cleanup_free_ char *copy = buf_dup(buf, len);
	char *p;

	if (!copy)
		return -ENOMEM;
	*open_module = strstr(copy, "Open Kernel Module") != NULL;
	/* the first token that looks like NNN.NN[.NN] */
	for (p = copy; *p; p++) {
		char *e;
		unsigned long v;

		if (!isdigit((unsigned char)*p) || (p > copy && !isspace((unsigned char)p[-1])))
			continue;
		v = strtoul(p, &e, 10);
		if (*e == '.' && isdigit((unsigned char)e[1]) && v > 0 && v < 100000) {
			*major = (unsigned)v;
			return 1;
		}
	}
	return 0;
}

int diag_kernel_release_parse(const char *buf, size_t len, unsigned *major, unsigned *minor)
{
	char tmp[64];
	unsigned a, b;

	if (len >= sizeof(tmp))
		len = sizeof(tmp) - 1;
	memcpy(tmp, buf, len);
	tmp[len] = '\0';
	if (sscanf(tmp, "%u.%u", &a, &b) != 2)
		return -EINVAL;
	*major = a;
	*minor = b;
	return 0;
}

const char *diag_bytes(uint64_t v, char *buf, size_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	unsigned u = 0;

	if (v == DIAG_UNLIMITED) {
		snprintf(buf, n, "unlimited");
		return buf;
	}
	double f = (double)v;

	while (u + 1 < ELEMENTSOF(unit) && v >= 1024 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	if (v < 1024 || u + 1 == ELEMENTSOF(unit)) {
		snprintf(buf, n, "%" PRIu64 " %s", v, unit[u]);
		return buf;
	}
	/* not a round number: one decimal in the largest unit that keeps it >= 1 */
	for (u = 0; u + 1 < ELEMENTSOF(unit) && f >= 1024; u++)
		f /= 1024;
	snprintf(buf, n, "%.1f %s", f, unit[u]);
	return buf;
}
