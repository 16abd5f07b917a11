/* SPDX-License-Identifier: Apache-2.0 */
/* The floor of `rdmak list`: one process that opens, reads to end of file and closes each of a
 * list of files once, the least any reader of the same files can do (make bench, tools/bench.py).
 *   read_floor ROOT LIST
 * LIST holds paths relative to ROOT, separated by NUL bytes or newlines (one file read whole
 * first, as a program that knows its names up front would). Each file: openat(ROOT fd),
 * read() into one buffer until it returns 0, close(). Nothing else per file: no stat, no
 * allocation, no path building. It prints "FILES BYTES" on stdout and fails (exit 1) on the
 * first file it cannot read, so that a wrong list cannot pass for a fast floor.
 * It links nothing but the C library: its exec costs what a trivial C program's does.
 * GNU cat (the floor before this one) paid an munmap per file and an exec per few hundred. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf;
	size_t got = 0;

	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	buf = malloc((size_t)st.st_size + 1);
	while (buf && got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (buf)
		buf[got] = '\0';
	*len = got;
	return buf;
}

int main(int argc, char **argv)
{
	static char buf[65536];
	unsigned long long bytes = 0;
	size_t len, files = 0;
	char *list, *p, *end;
	int root;

	if (argc != 3) {
		fprintf(stderr, "usage: %s ROOT LIST\n", argv[0]);
		return 2;
	}
	root = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
	list = slurp(argv[2], &len);
	if (root < 0 || !list) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], root < 0 ? argv[1] : argv[2],
			strerror(errno));
		return 1;
	}
	for (p = list, end = list + len; p < end; p += strlen(p) + 1) {
		char *nl = strchr(p, '\n');
		ssize_t n;
		int fd;

		if (nl)
			*nl = '\0';
		if (!*p)
			continue;
		fd = openat(root, p, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) {
			fprintf(stderr, "%s: %s: %s\n", argv[0], p, strerror(errno));
			return 1;
		}
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			bytes += (unsigned long long)n;
		if (n < 0) {
			fprintf(stderr, "%s: %s: %s\n", argv[0], p, strerror(errno));
			return 1;
		}
		close(fd);
		files++;
	}
	printf("%zu %llu\n", files, bytes);
	free(list);
	close(root);
	return 0;
}
