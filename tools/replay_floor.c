/* SPDX-License-Identifier: Apache-2.0 */
/* A second floor of `rdmak list` (make bench, tools/bench.py): one process that makes exactly
 * the file system calls a traced `rdmak list --json` made, in its order, and nothing else.
 *   replay_floor TRACE
 * TRACE is what tools/bench.py writes from `strace -xx -X raw` of the command: a header
 * ("RDMAKRPL", then the record count and the byte count of the names as two little-endian
 * uint32), the records, then the names, each NUL-terminated. A record is an openat, openat2,
 * read, close, readlinkat, getdents64 or newfstatat with its arguments as traced; the
 * descriptors the trace names are mapped to the ones this process gets, so that each call
 * works on what it worked on there. Calls that failed there are made too (their failure is
 * the kernel's work as well).
 * What read_floor (the first floor) does not do and this one does: the model's link reads,
 * listings, devfs stats, the walks through class links and its directory opens: every lookup
 * rdmak asks the kernel for. What it does not do that rdmak does: parse, build the model and
 * write the document (user space), map and relocate its libraries (ld.so's opens and reads are
 * replayed, its mmaps are not). So rdmak over this floor is rdmak's own work in user space.
 * Calls on a descriptor that no traced call made (an eventfd's close) are left out. It prints
 * "CALLS FAILED LEFT-OUT" and exits 1 when a call that worked there fails here, or one that
 * failed there works: then the trace is not of this tree and the figure would mean nothing.
 * It links nothing but the C library. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { OP_OPENAT = 1, OP_OPENAT2, OP_READ, OP_CLOSE, OP_READLINKAT, OP_GETDENTS, OP_FSTATAT };

/* As tools/bench.py packs it ("<BxxxiiIIII"): 28 bytes */
struct rec {
	uint8_t op, pad[3];
	int32_t fd;	  /* the descriptor or dirfd the call took, as traced (-100: AT_FDCWD) */
	int32_t ret;	  /* what it returned there: a descriptor, a count, or -1 */
	uint32_t flags;	  /* open flags, fstatat flags */
	uint32_t resolve; /* openat2's resolve */
	uint32_t count;	  /* read, getdents64, readlinkat: the buffer's size */
	uint32_t name;	  /* offset of the path in the names */
};

#define FD_MAX 65536

static int fds[FD_MAX]; /* traced descriptor -> ours, -1 none */

static int fd_of(int32_t traced)
{
	if (traced == -100)
		return AT_FDCWD;
	return traced >= 0 && traced < FD_MAX ? fds[traced] : -1;
}

static void fd_set_to(int32_t traced, long got)
{
	if (traced >= 0 && traced < FD_MAX)
		fds[traced] = got >= 0 ? (int)got : -1;
}

int main(int argc, char **argv)
{
	static char buf[1 << 16];
	size_t calls = 0, failed = 0, skipped = 0, len = 0;
	uint32_t n, names_len;
	char *data = NULL;
	const struct rec *v;
	const char *names;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: %s TRACE\n", argv[0]);
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (f) {
		size_t cap = 1 << 20, got;

		data = malloc(cap);
		while (data && (got = fread(data + len, 1, cap - len, f)) > 0) {
			len += got;
			if (len == cap) {
				char *more = realloc(data, cap *= 2);

				if (!more)
					free(data);
				data = more;
			}
		}
		fclose(f);
	}
	if (!data || len < 16 || memcmp(data, "RDMAKRPL", 8)) {
		fprintf(stderr, "%s: %s: not a trace\n", argv[0], argv[1]);
		free(data);
		return 2;
	}
	memcpy(&n, data + 8, 4);
	memcpy(&names_len, data + 12, 4);
	if ((size_t)n * sizeof(*v) + names_len + 16 != len) {
		fprintf(stderr, "%s: %s: truncated\n", argv[0], argv[1]);
		free(data);
		return 2;
	}
	v = (const struct rec *)(data + 16);
	names = data + 16 + (size_t)n * sizeof(*v);
	memset(fds, -1, sizeof(fds));
	for (int i = 0; i < 3; i++)
		fds[i] = i; /* stdin, stdout, stderr: the same files here */
	for (uint32_t i = 0; i < n; i++) {
		const struct rec *r = &v[i];
		const char *path = names + r->name;
		size_t cnt = r->count < sizeof(buf) ? r->count : sizeof(buf);
		long got = -1;

		/* a descriptor made by a call not traced (an eventfd, a socket): not this floor's */
		if (r->fd != -100 && r->fd != -1 && fd_of(r->fd) < 0 && r->ret >= 0) {
			skipped++;
			continue;
		}

		switch (r->op) {
		case OP_OPENAT:
			got = openat(fd_of(r->fd), path, (int)r->flags);
			fd_set_to(r->ret, got);
			break;
		case OP_OPENAT2: {
			struct open_how how = { .flags = r->flags, .resolve = r->resolve };

			got = syscall(SYS_openat2, fd_of(r->fd), path, &how, sizeof(how));
			fd_set_to(r->ret, got);
			break;
		}
		case OP_READ: got = read(fd_of(r->fd), buf, cnt); break;
		case OP_CLOSE:
			got = close(fd_of(r->fd));
			fd_set_to(r->fd, -1);
			break;
		case OP_READLINKAT: got = readlinkat(fd_of(r->fd), path, buf, cnt); break;
		case OP_GETDENTS: got = syscall(SYS_getdents64, fd_of(r->fd), buf, cnt); break;
		case OP_FSTATAT: {
			struct stat st;

			got = fstatat(fd_of(r->fd), path, &st, (int)r->flags);
			break;
		}
		default:
			fprintf(stderr, "%s: record %u: unknown call %u\n", argv[0], i, r->op);
			free(data);
			return 2;
		}
		calls++;
		/* a descriptor or a count there, a failure here (or the other way round): the
		 * trace was not taken on this tree */
		if ((got < 0) != (r->ret < 0) && failed++ < 5)
			fprintf(stderr, "%s: call %u (kind %u, %s): %ld here, %d there\n", argv[0],
				i, r->op, path, got, r->ret);
	}
	printf("%zu %zu %zu\n", calls, failed, skipped);
	free(data);
	return failed ? 1 : 0;
}
