/* SPDX-License-Identifier: Apache-2.0 */
/* The node's ledger of partition membership, in the CNI state dir beside the attachment
 * records: a GUID this node put into a pkey is named by an attachment's record (from before the
 * UFM call: a plugin killed half-way leaves the record) or, once its attachment is gone but UFM
 * could not take the removal, by a journal entry. So every GUID this node may have left in a
 * partition is written down here until UFM confirms its removal; there is no pool in memory to
 * lose on a restart. */
#include <dirent.h>
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

#define JOURNAL_DIR "fabric-journal"

int ufm_lock(const char *state_dir)
{
	_cleanup_free_ char *p = NULL;
	int fd, r;

	if ((r = fileio_mkdir_p(state_dir, 0700, 0700)) < 0)
		return r;
	if (asprintf(&p, "%s/fabric.lock", state_dir) < 0)
		return -ENOMEM;
	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
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

static int journal_dir(const char *state_dir, bool create, int *ret)
{
	_cleanup_free_ char *p = NULL;
	int fd, r;

	if (asprintf(&p, "%s/" JOURNAL_DIR, state_dir) < 0)
		return -ENOMEM;
	if (create && (r = fileio_mkdir_p(p, 0700, 0700)) < 0)
		return r;
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*ret = fd;
	return 0;
}

int ufm_journal_add(const char *state_dir, uint16_t pkey, uint64_t guid)
{
	_cleanup_close_ int dfd = -1;
	char name[32];
	int r;

	if ((r = entry_name(pkey, guid, name, sizeof(name))) < 0 ||
	    (r = journal_dir(state_dir, true, &dfd)) < 0)
		return r;
	/* the name is the entry; the content only helps a reader */
	return fileio_write_atomic_at(dfd, name, "remove\n", 7, 0600);
}

int ufm_journal_remove(const char *state_dir, uint16_t pkey, uint64_t guid)
{
	_cleanup_close_ int dfd = -1;
	char name[32];
	int r;

	if ((r = entry_name(pkey, guid, name, sizeof(name))) < 0)
		return r;
	r = journal_dir(state_dir, false, &dfd);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	(void)fsync(dfd);
	return 0;
}

int ufm_journal_list(const char *state_dir, struct ufm_journal_entry **ret, size_t *ret_n)
{
	_cleanup_free_ struct ufm_journal_entry *v = NULL;
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	size_t n = 0, cap = 0;
	int dfd, r;

	r = journal_dir(state_dir, false, &dfd);
	if (r == -ENOENT) {
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	if (r < 0)
		return r;
	if (!(d = fdopendir(dfd))) {
		close(dfd);
		return -errno;
	}
	while ((de = readdir(d))) {
		unsigned pk;
		char g[17], tail;
		uint64_t guid;

		/* fileio's temp files start with a dot; anything else not ours is skipped */
		if (sscanf(de->d_name, "%4x-%16[0-9a-f]%c", &pk, g, &tail) != 2 ||
		    strlen(de->d_name) != 21 || ufm_guid_parse(g, &guid) < 0)
			continue;
		if (n == cap) {
			struct ufm_journal_entry *nv =
				realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));
			if (!nv)
				return -ENOMEM;
			v = nv;
		}
		v[n++] = (struct ufm_journal_entry){ .pkey = (uint16_t)pk, .guid = guid };
	}
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}
