/* SPDX-License-Identifier: Apache-2.0 */
/* A minimal POSIX (ustar + pax) tar writer: directories, regular files, symlinks and
 * character devices, enough to carry a sysfs/devfs capture that GNU tar extracts. */
#ifndef RDMAK_TAR_H
#define RDMAK_TAR_H

#include <stddef.h>
#include <stdio.h>

struct snapshot_tar_entry {
	const char *path; /* relative, no leading '/' */
	char type;	  /* '0' file, '2' symlink, '3' char device, '5' directory */
	unsigned mode;	  /* permission bits */
	unsigned uid, gid;
	const char *linkname; /* symlinks */
	unsigned devmajor, devminor;
	const void *data; /* files */
	size_t size;
	long long mtime;
};

/* Write one entry (with a pax header first when a name does not fit ustar). -errno on failure. */
int snapshot_tar_write(FILE *f, const struct snapshot_tar_entry *e);
/* The two zero blocks that end an archive. */
int snapshot_tar_finish(FILE *f);

#endif
