/* SPDX-License-Identifier: Apache-2.0 */
/* The floor `rdmak exporter --netns-dir` is measured against in make bench
 * (tools/bench-exporter.sh): one C process making the system calls a scrape must make per
 * network namespace to see its RDMA devices, and nothing else. For each namespace file of DIR:
 * open it, setns into it, fsopen/fsconfig/fsmount a sysfs, setns back, open its class/infiniband
 * and list it, close everything. Prints the median of RUNS passes over DIR, in milliseconds.
 *
 *     netns_floor DIR RUNS */
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "floor_time.h"

/* One namespace: 0, or -1 (said on stderr). */
static int one(int dirfd, const char *name, int self)
{
	char buf[4096];
	int ns, fs, mnt, ib;

	ns = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (ns < 0 || setns(ns, CLONE_NEWNET) < 0) {
		perror(name);
		return -1;
	}
	fs = fsopen("sysfs", FSOPEN_CLOEXEC);
	if (fs < 0 || fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
	    (mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_RDONLY)) < 0) {
		perror("sysfs");
		return -1;
	}
	if (setns(self, CLONE_NEWNET) < 0) {
		perror("setns back");
		return -1;
	}
	ib = openat(mnt, "class/infiniband", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ib >= 0) {
		while (syscall(SYS_getdents64, ib, buf, sizeof(buf)) > 0)
			;
		close(ib);
	}
	close(mnt);
	close(fs);
	close(ns);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = argc > 2 ? atoi(argv[2]) : 7, self = open("/proc/thread-self/ns/net", O_RDONLY);
	double *t = calloc(runs > 0 ? (size_t)runs : 1, sizeof(*t));

	if (argc < 3 || runs < 1 || self < 0 || !t) {
		fprintf(stderr, "usage: netns_floor DIR RUNS\n");
		return 2;
	}
	for (int r = 0; r < runs; r++) {
		DIR *d = opendir(argv[1]);
		struct dirent *e;
		double t0 = floor_now_ms();

		if (!d) {
			perror(argv[1]);
			return 1;
		}
		while ((e = readdir(d)))
			if (e->d_name[0] != '.' && one(dirfd(d), e->d_name, self) < 0)
				return 1;
		closedir(d);
		t[r] = floor_now_ms() - t0;
	}
	printf("%.3f\n", floor_median(t, runs));
	free(t);
	return 0;
}
