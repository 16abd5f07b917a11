/* SPDX-License-Identifier: Apache-2.0 */
/* The node's ledger of partition membership, in the node's state dir beside the attachment
 * records: a GUID this node put into a pkey is named by an attachment's record (from before the
 * UFM call: a plugin killed half-way leaves the record) or, once its attachment is gone but the
 * fabric manager could not take the removal, by a journal entry of that fabric. So every GUID
 * this node may have left in a partition is written down here until its own fabric manager
 * confirms the removal; there is no pool in memory to lose on a restart. An entry is retried only
 * against the fabric it was journaled for: with one UFM per rail, a 404 from another rail's UFM
 * says nothing about this one. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ufm/ufm.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strv.h"

#define FABRIC_DIR "/.fabric/"
/* where entries went before they were keyed by fabric, and where a removal of no known fabric
 * goes (an attachment from then whose config's URL no fabric of the node has): not retried, by
 * anything, since no fabric manager can be told to be the one */
#define LEGACY_DIR "fabric-journal"

/* <state_dir>/.fabric/<fabric>[/sub], made when create */
static int fabric_path(const char *state_dir, const char *fabric, const char *sub, bool create,
		       char **ret)
{
	_cleanup_free_ char *p = NULL;
	int r;

	/* the name is a DNS-1123 label (node.c): no '/', no dot */
	if (!fabric[0] || strchr(fabric, '/') || fabric[0] == '.')
		return -EINVAL;
	if (asprintf(&p, "%s" FABRIC_DIR "%s%s%s", state_dir, fabric, sub ? "/" : "",
		     sub ? sub : "") < 0)
		return -ENOMEM;
	if (create && (r = fileio_mkdir_p(p, 0700, 0700)) < 0)
		return r;
	*ret = TAKE_PTR(p);
	return 0;
}

int ufm_lock(const char *state_dir, const char *fabric)
{
	_cleanup_free_ char *dir = NULL, *p = NULL;
	int fd, r;

	if ((r = fabric_path(state_dir, fabric, NULL, true, &dir)) < 0)
		return r;
	if (asprintf(&p, "%s/lock", dir) < 0)
		return -ENOMEM;
	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0)
		return -errno;
	if ((r = fileio_check_regular(fd)) < 0) {
		close(fd);
		return r;
	}
	/* a holder killed with -9 releases it with its fd */
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			r = -errno;
			close(fd);
			return r;
		}
	return fd;
}

static int entry_name(uint16_t pkey, uint64_t guid, char *buf, size_t n)
{
	return snprintf(buf, n, "%04x-%016" PRIx64, pkey & 0x7fff, guid) >= (int)n ? -EINVAL : 0;
}

static int open_dir(const char *p, int *ret)
{
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	*ret = fd;
	return 0;
}

int ufm_journal_add(const char *state_dir, const struct ufm_fabric *f, uint16_t pkey, uint64_t guid)
{
	_cleanup_free_ char *p = NULL, *text = NULL;
	_cleanup_close_ int dfd = -1;
	char name[32];
	int r, n;

	if ((r = entry_name(pkey, guid, name, sizeof(name))) < 0)
		return r;
	if (!f->name[0]) {
		if (asprintf(&p, "%s/" LEGACY_DIR, state_dir) < 0)
			return -ENOMEM;
		r = fileio_mkdir_p(p, 0700, 0700);
	} else {
		r = fabric_path(state_dir, f->name, "journal", true, &p);
	}
	if (r < 0 || (r = open_dir(p, &dfd)) < 0)
		return r;
	/* the name is the entry; the URL says which fabric manager it was journaled for */
	if ((n = asprintf(&text, "%s\n", f->ufm && f->ufm[0] ? f->ufm : "remove")) < 0)
		return -ENOMEM;
	return fileio_write_atomic_at(dfd, name, text, (size_t)n, 0600);
}

int ufm_journal_remove(const char *state_dir, const char *fabric, uint16_t pkey, uint64_t guid)
{
	_cleanup_free_ char *p = NULL;
	_cleanup_close_ int dfd = -1;
	char name[32];
	int r;

	if ((r = entry_name(pkey, guid, name, sizeof(name))) < 0)
		return r;
	if (!fabric[0])
		r = asprintf(&p, "%s/" LEGACY_DIR, state_dir) < 0 ? -ENOMEM : 0;
	else
		r = fabric_path(state_dir, fabric, "journal", false, &p);
	if (r < 0)
		return r;
	r = open_dir(p, &dfd);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	(void)fsync(dfd);
	return 0;
}

struct list {
	struct ufm_journal_entry *v;
	size_t n, cap;
};

/* The entries of one journal folder (fabric "" for the legacy one). */
static int list_dir(const char *p, const char *fabric, struct list *l)
{
	_cleanup_strv_free_ char **names = NULL;
	_cleanup_close_ int dfd = -1;
	size_t n = 0;
	int r = open_dir(p, &dfd);

	if (r == -ENOENT)
		return 0;
	if (r < 0 || (r = fileio_list_dir(dfd, FILEIO_LIST_NO_HIDDEN, &names, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct ufm_journal_entry e = { 0 };
		_cleanup_free_ char *url = NULL;
		unsigned pk;
		char g[17], tail;
		size_t len = 0;

		/* fileio's temp files start with a dot (left out above); anything else not ours
		 * is skipped */
		if (strlen(names[i]) != 21 ||
		    sscanf(names[i], "%4x-%16[0-9a-f]%c", &pk, g, &tail) != 2 ||
		    ufm_guid_parse(g, &e.guid) < 0)
			continue;
		e.pkey = (uint16_t)pk;
		snprintf(e.fabric, sizeof(e.fabric), "%s", fabric);
		/* the URL it was journaled for; "remove" when the node knew none then */
		if (fabric[0] && fileio_read_at(dfd, names[i], UFM_URL_MAX + 1, &url, &len) == 0 &&
		    !strncmp(url, "https://", 8)) {
			url[strcspn(url, "\n")] = '\0';
			snprintf(e.url, sizeof(e.url), "%s", url);
		}
		if (l->n == l->cap) {
			struct ufm_journal_entry *nv =
				realloc(l->v, (l->cap = l->cap ? l->cap * 2 : 16) * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			l->v = nv;
		}
		l->v[l->n++] = e;
	}
	return 0;
}

int ufm_journal_list(const char *state_dir, const char *fabric, struct ufm_journal_entry **ret,
		     size_t *ret_n)
{
	_cleanup_strv_free_ char **fabrics = NULL;
	_cleanup_free_ char *p = NULL;
	struct list l = { 0 };
	size_t nf = 0;
	int r = 0;

	if (fabric && !fabric[0]) {
		if (asprintf(&p, "%s/" LEGACY_DIR, state_dir) < 0)
			return -ENOMEM;
		r = list_dir(p, "", &l);
	} else if (fabric) {
		if ((r = fabric_path(state_dir, fabric, "journal", false, &p)) == 0)
			r = list_dir(p, fabric, &l);
	} else {
		_cleanup_close_ int dfd = -1;

		if (asprintf(&p, "%s" FABRIC_DIR, state_dir) < 0)
			return -ENOMEM;
		r = open_dir(p, &dfd);
		if (r == 0)
			r = fileio_list_dir(dfd, FILEIO_LIST_NO_HIDDEN, &fabrics, &nf);
		else if (r == -ENOENT)
			r = 0;
		for (size_t i = 0; i < nf && r == 0; i++) {
			_cleanup_free_ char *jp = NULL;

			if ((r = fabric_path(state_dir, fabrics[i], "journal", false, &jp)) == 0)
				r = list_dir(jp, fabrics[i], &l);
		}
		free(p);
		p = NULL;
		if (r == 0 && asprintf(&p, "%s/" LEGACY_DIR, state_dir) < 0)
			r = -ENOMEM;
		if (r == 0)
			r = list_dir(p, "", &l);
	}
	if (r < 0) {
		free(l.v);
		return r;
	}
	*ret = l.v;
	*ret_n = l.n;
	return 0;
}
