/* SPDX-License-Identifier: Apache-2.0 */
#include "snapshot/tar.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct ustar {
	char name[100], mode[8], uid[8], gid[8], size[12], mtime[12], chksum[8], typeflag,
		linkname[100];
	char magic[6], version[2], uname[32], gname[32], devmajor[8], devminor[8], prefix[155],
		pad[12];
};
_Static_assert(sizeof(struct ustar) == 512, "ustar header is one block");

/* n-1 octal digits, zero-padded, NUL-terminated (values that do not fit keep their low digits). */
static void octal(char *dst, size_t n, unsigned long long v)
{
	dst[n - 1] = '\0';
	for (size_t i = n - 1; i-- > 0; v >>= 3)
		dst[i] = (char)('0' + (v & 7));
}

static int write_padded(FILE *f, const void *data, size_t size)
{
	static const char zero[512];

	if (size && fwrite(data, 1, size, f) != size)
		return -EIO;
	if (size % 512 && fwrite(zero, 1, 512 - size % 512, f) != 512 - size % 512)
		return -EIO;
	return 0;
}

static void checksum(struct ustar *h)
{
	unsigned sum = 0;
	const unsigned char *p = (const unsigned char *)h;

	memset(h->chksum, ' ', sizeof(h->chksum));
	for (size_t i = 0; i < sizeof(*h); i++)
		sum += p[i];
	snprintf(h->chksum, sizeof(h->chksum), "%06o", sum);
	h->chksum[7] = ' ';
}

/* ustar splits long names at a '/' into prefix (155) + name (100). */
static int split_name(const char *path, struct ustar *h)
{
	size_t l = strlen(path);

	if (l < sizeof(h->name)) {
		memcpy(h->name, path, l);
		return 0;
	}
	for (const char *s = path + l - 1; s > path; s--) {
		if (*s != '/')
			continue;
		if ((size_t)(s - path) <= sizeof(h->prefix) && strlen(s + 1) < sizeof(h->name)) {
			memcpy(h->prefix, path, (size_t)(s - path));
			memcpy(h->name, s + 1, strlen(s + 1));
			return 0;
		}
	}
	return -ENAMETOOLONG;
}

/* pax record "LEN key=value\n" where LEN counts itself. */
static size_t pax_record(char *buf, size_t n, const char *key, const char *value)
{
	size_t body = strlen(key) + strlen(value) + 3, len = body + 1;

	while (len != body + (size_t)snprintf(NULL, 0, "%zu", len))
		len = body + (size_t)snprintf(NULL, 0, "%zu", len);
	return (size_t)snprintf(buf, n, "%zu %s=%s\n", len, key, value);
}

static void header_init(struct ustar *h, const struct snapshot_tar_entry *e, char type, size_t size)
{
	memset(h, 0, sizeof(*h));
	octal(h->mode, sizeof(h->mode), e->mode & 07777);
	octal(h->uid, sizeof(h->uid), e->uid);
	octal(h->gid, sizeof(h->gid), e->gid);
	octal(h->size, sizeof(h->size), size);
	octal(h->mtime, sizeof(h->mtime), (unsigned long long)(e->mtime > 0 ? e->mtime : 0));
	h->typeflag = type;
	memcpy(h->magic, "ustar", 6);
	memcpy(h->version, "00", 2);
	octal(h->devmajor, sizeof(h->devmajor), e->devmajor);
	octal(h->devminor, sizeof(h->devminor), e->devminor);
}

int snapshot_tar_write(FILE *f, const struct snapshot_tar_entry *e)
{
	struct ustar h;
	size_t size = e->type == '0' ? e->size : 0;
	bool long_name, long_link = e->linkname && strlen(e->linkname) >= sizeof(h.linkname);
	int r;

	header_init(&h, e, e->type, size);
	long_name = split_name(e->path, &h) < 0;
	if (long_name || long_link) {
		char pax[8192];
		size_t n = 0;
		struct ustar x;

		if (long_name)
			n += pax_record(pax + n, sizeof(pax) - n, "path", e->path);
		if (long_link && n < sizeof(pax))
			n += pax_record(pax + n, sizeof(pax) - n, "linkpath", e->linkname);
		if (n >= sizeof(pax))
			return -ENAMETOOLONG;
		header_init(&x, e, 'x', n);
		memcpy(x.name, "PaxHeader", 9);
		checksum(&x);
		if ((r = write_padded(f, &x, sizeof(x))) < 0 || (r = write_padded(f, pax, n)) < 0)
			return r;
		if (long_name) {
			memset(h.name, 0, sizeof(h.name));
			memset(h.prefix, 0, sizeof(h.prefix));
			memcpy(h.name, e->path,
			       sizeof(h.name) -
				       1); /* readers that ignore pax see a truncated name */
		}
	}
	if (e->linkname)
		memcpy(h.linkname, e->linkname,
		       long_link ? sizeof(h.linkname) - 1 : strlen(e->linkname));
	checksum(&h);
	if ((r = write_padded(f, &h, sizeof(h))) < 0)
		return r;
	return e->type == '0' ? write_padded(f, e->data, size) : 0;
}

int snapshot_tar_finish(FILE *f)
{
	static const char zero[1024];
	return fwrite(zero, 1, sizeof(zero), f) == sizeof(zero) ? 0 : -EIO;
}
