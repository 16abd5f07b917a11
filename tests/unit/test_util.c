/* SPDX-License-Identifier: Apache-2.0 */
/* util/: the whole-file reader, the crash-safe writer, string arrays and the list joiner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/opt.h"
#include "util/spawn.h"
#include "util/strutil.h"
#include "util/strv.h"

static char dir[64];

static int setup(void **st)
{
	strcpy(dir, "/tmp/rdmak-util.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static int dirfd_of(void)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

/* names in the directory other than "." and "..", to see that no temp file is left */
static size_t entries(void)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	return n;
}

static void test_read_file(void **st)
{
	_cleanup_close_ int dfd = dirfd_of();
	char *buf = (char *)1;
	size_t len = 99;
	int fd;

	fd = openat(dfd, "f", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fileio_write_all(fd, "0123456789", 10), 0);
	close(fd);
	assert_int_equal(fileio_read_at(dfd, "f", 10, &buf, &len), 0); /* exactly max: fine */
	assert_int_equal(len, 10);
	assert_string_equal(buf, "0123456789");
	free(buf);
	buf = (char *)1;
	assert_int_equal(fileio_read_at(dfd, "f", 9, &buf, &len), -EFBIG);
	assert_ptr_equal(buf, (char *)1); /* out-parameters untouched on failure */
	assert_int_equal(len, 10);
	assert_int_equal(fileio_read_at(dfd, "nosuch", 9, &buf, NULL), -ENOENT);
	assert_int_equal(fileio_read_at(dfd, ".", 9, &buf, NULL), -EISDIR);
	/* empty file: an empty string, not NULL */
	fd = openat(dfd, "e", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	close(fd);
	assert_int_equal(fileio_read_at(dfd, "e", 0, &buf, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal(buf, "");
	free(buf);
}

/* fileio_list_dir: sorted, "." and ".." out; hidden names and non-regular entries by flag. */
static void test_list_dir(void **st)
{
	_cleanup_close_ int dfd = dirfd_of();
	static const char *const files[] = { "c", ".h", "a" };
	char **v = NULL;
	size_t n = 0;
	int fd;

	(void)st;
	assert_int_equal(mkdirat(dfd, "ls", 0755), 0);
	fd = openat(dfd, "ls", O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	for (size_t i = 0; i < 3; i++)
		close(openat(fd, files[i], O_WRONLY | O_CREAT, 0644));
	assert_int_equal(mkdirat(fd, "b", 0755), 0);
	assert_int_equal(fileio_list_dir(fd, 0, &v, &n), 0);
	assert_int_equal(n, 4);
	{
		_cleanup_free_ char *j = strv_join(v, ",");
		assert_string_equal(j, ".h,a,b,c");
	}
	strv_free(v);
	close(fd);
	fd = openat(dfd, "ls", O_RDONLY | O_DIRECTORY);
	assert_int_equal(fileio_list_dir(fd, FILEIO_LIST_NO_HIDDEN | FILEIO_LIST_REGULAR, &v, &n),
			 0);
	{
		_cleanup_free_ char *j = strv_join(v, ",");
		assert_string_equal(j, "a,c");
	}
	assert_int_equal(n, 2);
	strv_free(v);
	close(fd);
}

/* The one reader of a root's files (sysfs, /proc, the image: hw_dir_read, hw_ctx_read, the
 * doctor's reads): a regular file is read to its end or len; a FIFO opened with O_NONBLOCK,
 * a directory or a device is refused by type, asked after a read that ended empty, failed or
 * filled the buffer (a FIFO would block a blocking read; /dev/zero never ends). */
static void test_read_regular(void **st)
{
	_cleanup_close_ int dfd = dirfd_of();
	char buf[8];
	int fd;

	(void)st;
	fd = openat(dfd, "r", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(fileio_write_all(fd, "0123456789", 10), 0);
	close(fd);
	fd = openat(dfd, "r", O_RDONLY | O_NONBLOCK);
	assert_int_equal(fileio_read_regular(fd, buf, sizeof(buf)), 8); /* up to len */
	assert_memory_equal(buf, "01234567", 8);
	assert_int_equal(fileio_read_regular(fd, buf, sizeof(buf)), 2); /* then to the end */
	assert_int_equal(fileio_read_regular(fd, buf, sizeof(buf)), 0);
	close(fd);
	assert_int_equal(mkfifoat(dfd, "fifo", 0600), 0);
	fd = openat(dfd, "fifo", O_RDONLY | O_NONBLOCK);
	assert_true(fd >= 0);
	assert_int_equal(fileio_read_regular(fd, buf, sizeof(buf)), -FILEIO_ENOTREG);
	close(fd);
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY);
	assert_int_equal(fileio_read_regular(fd, buf, sizeof(buf)), -EISDIR);
	close(fd);
	fd = open("/dev/null", O_RDONLY | O_NONBLOCK);
	assert_int_equal(fileio_check_regular(fd), -FILEIO_ENOTREG);
	assert_int_equal(fileio_read_regular(fd, buf, sizeof(buf)),
			 -FILEIO_ENOTREG); /* empty: asked */
	close(fd);
	fd = open("/dev/zero", O_RDONLY | O_NONBLOCK);
	assert_int_equal(fileio_read_regular(fd, buf, sizeof(buf)),
			 -FILEIO_ENOTREG); /* full: asked */
	close(fd);
	/* a FIFO whose writer is still there: EAGAIN after its bytes, refused */
	{
		int w, rfd = openat(dfd, "fifo", O_RDONLY | O_NONBLOCK);
		assert_true(rfd >= 0);
		w = openat(dfd, "fifo", O_WRONLY | O_NONBLOCK);
		assert_true(w >= 0);
		assert_int_equal(fileio_write_all(w, "ab", 2), 0);
		assert_int_equal(fileio_read_regular(rfd, buf, sizeof(buf)), -FILEIO_ENOTREG);
		close(w);
		close(rfd);
	}
}

static void test_read_file_big_and_pipe(void **st)
{
	_cleanup_free_ char *big = malloc(100000), *buf = NULL;
	int p[2];
	size_t len;

	/* a pipe delivers in pieces: the reader loops to end of file */
	memset(big, 'x', 100000);
	assert_int_equal(pipe(p), 0);
	if (fork() == 0) {
		close(p[0]);
		for (int i = 0; i < 10; i++)
			if (fileio_write_all(p[1], big + i * 10000, 10000) < 0)
				_exit(1);
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(fileio_read_fd(p[0], 100000, &buf, &len), 0);
	close(p[0]);
	assert_int_equal(len, 100000);
	assert_int_equal(memcmp(buf, big, len), 0);
	assert_int_equal(buf[len], '\0');
}

static void test_write_atomic(void **st)
{
	_cleanup_close_ int dfd = dirfd_of();
	_cleanup_free_ char *buf = NULL;
	struct stat s;
	mode_t old = umask(077);

	assert_int_equal(fileio_write_atomic_at(dfd, "a.json", "{}\n", 3, 0644), 0);
	umask(old);
	assert_int_equal(fstatat(dfd, "a.json", &s, 0), 0);
	assert_int_equal(s.st_mode & 07777, 0644); /* exact mode, not masked */
	assert_int_equal(fileio_write_atomic_at(dfd, "a.json", "[1]", 3, 0600), 0);
	assert_int_equal(fileio_read_at(dfd, "a.json", 100, &buf, NULL), 0);
	assert_string_equal(buf, "[1]");
	assert_int_equal(entries(), 1); /* no temp file left behind */
	/* a path with a directory part, relative to dirfd and absolute */
	assert_int_equal(mkdirat(dfd, "sub", 0755), 0);
	assert_int_equal(fileio_write_atomic_at(dfd, "sub/b", "b", 1, 0644), 0);
	assert_int_equal(faccessat(dfd, "sub/b", F_OK, 0), 0);
	{
		char abs[128];

		snprintf(abs, sizeof(abs), "%s/sub/c", dir);
		assert_int_equal(fileio_write_atomic_at(-1, abs, "c", 1, 0644), 0);
		assert_int_equal(faccessat(dfd, "sub/c", F_OK, 0), 0);
	}
	assert_int_equal(fileio_write_atomic_at(dfd, "nosuch/b", "b", 1, 0644), -ENOENT);
	{
		char deep[128];

		snprintf(deep, sizeof(deep), "%s/x/y/z", dir);
		assert_int_equal(fileio_mkdir_p(deep, 0755, 0755), 0);
		assert_int_equal(fileio_mkdir_p(deep, 0755, 0755), 0); /* existing: fine */
		assert_int_equal(faccessat(dfd, "x/y/z", F_OK, 0), 0);
		snprintf(deep, sizeof(deep), "%s/a.json/z", dir);
		assert_int_equal(fileio_mkdir_p(deep, 0755, 0755), -ENOTDIR);
	}
	assert_int_equal(fileio_write_atomic_at(dfd, "sub/", "b", 1, 0644), -EISDIR);
}

static void test_write_atomic_refuses_non_regular(void **st)
{
	_cleanup_close_ int dfd = dirfd_of();
	struct stat s;

	assert_int_equal(symlinkat("target", dfd, "link"), 0);
	assert_int_equal(mkfifoat(dfd, "fifo", 0644), 0);
	assert_int_equal(mkdirat(dfd, "d", 0755), 0);
	assert_int_equal(fileio_write_atomic_at(dfd, "link", "x", 1, 0644), -ELOOP);
	assert_int_equal(fileio_write_atomic_at(dfd, "fifo", "x", 1, 0644), -EEXIST);
	assert_int_equal(fileio_write_atomic_at(dfd, "d", "x", 1, 0644), -EISDIR);
	/* a character device (the issue's `-o /dev/full` turned into a regular file) */
	assert_int_equal(fileio_write_atomic_at(AT_FDCWD, "/dev/null", "x", 1, 0644), -EEXIST);
	assert_int_equal(stat("/dev/null", &s), 0);
	assert_true(S_ISCHR(s.st_mode));
	assert_int_equal(fstatat(dfd, "link", &s, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISLNK(s.st_mode));
	assert_int_equal(faccessat(dfd, "target", F_OK, AT_SYMLINK_NOFOLLOW),
			 -1);		/* not written through */
	assert_int_equal(entries(), 3); /* and no temp file left */
}

/* Temp files of killed writers go; a live writer's (flock held), other names, and what is not
 * a regular file stay. */
static void test_remove_stale_temps(void **st)
{
	_cleanup_close_ int dfd = dirfd_of(), live = -1;
	size_t n = 99;
	int fd;

	fd = openat(dfd, ".a.json.0123abcd.tmp", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	live = openat(dfd, ".a.json.89abcdef.tmp", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(live >= 0);
	assert_int_equal(flock(live, LOCK_EX), 0);
	fd = openat(dfd, ".b.0123abcd.tmp", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mkfifoat(dfd, ".c.0123abcd.tmp", 0600), 0);
	for (const char *const *k =
		     (const char *const[]){ "a.json", ".a.json.0123abcg.tmp", ".a.json.123abcd.tmp",
					    ".0123abcd.tmp", NULL };
	     *k; k++) {
		fd = openat(dfd, *k, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	assert_int_equal(entries(), 8);
	/* only a.json's */
	assert_int_equal(fileio_remove_stale_temps_at(dfd, "a.json", &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(faccessat(dfd, ".a.json.0123abcd.tmp", F_OK, 0), -1);
	assert_int_equal(faccessat(dfd, ".a.json.89abcdef.tmp", F_OK, 0), 0); /* its writer lives */
	assert_int_equal(faccessat(dfd, ".b.0123abcd.tmp", F_OK, 0), 0);
	/* any name */
	assert_int_equal(fileio_remove_stale_temps_at(dfd, NULL, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(faccessat(dfd, ".b.0123abcd.tmp", F_OK, 0), -1);
	assert_int_equal(entries(), 6); /* the live one, the FIFO and the four other names */
	/* the writer gone, its file goes too */
	close(TAKE_FD(live));
	assert_int_equal(fileio_remove_stale_temps_at(dfd, NULL, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(entries(), 5);
	/* and a write holds its own temp file against a reclaimer until it is renamed */
	assert_int_equal(fileio_write_atomic_at(dfd, "a.json", "{}", 2, 0600), 0);
	assert_int_equal(entries(), 5);
}

static void test_strv(void **st)
{
	_cleanup_strv_free_ char **v = NULL;
	_cleanup_free_ char *j = NULL, *e = NULL;
	size_t n = 0;

	assert_int_equal(strv_length(v), 0);
	e = strv_join(v, ",");
	assert_string_equal(e, "");
	for (int i = 20; i > 0; i--) {
		char s[16];

		snprintf(s, sizeof(s), "%02d", i);
		assert_int_equal(strv_extend(&v, &n, s), 0);
		assert_null(v[n]);
	}
	assert_int_equal(n, 20);
	assert_int_equal(strv_length(v), 20);
	strv_sort(v);
	assert_string_equal(v[0], "01");
	assert_string_equal(v[19], "20");
	assert_true(strv_contains(v, "07"));
	assert_false(strv_contains(v, "7"));
	assert_false(strv_contains(NULL, "07"));
	{
		struct strv_list l = { 0 };

		assert_false(strv_contains(l.v, "a"));
		assert_int_equal(strv_extend(&l.v, &l.n, "a"), 0);
		assert_int_equal(strv_extend(&l.v, &l.n, "b"), 0);
		assert_true(strv_contains(l.v, "b"));
		strv_list_clear(&l);
		assert_null(l.v);
		assert_int_equal(l.n, 0);
		strv_list_clear(&l); /* twice is fine */
	}
	v[3] = (free(v[3]), NULL); /* cut to three */
	j = strv_join(v, ", ");
	assert_string_equal(j, "01, 02, 03");
	strv_free(NULL);
	/* strv_free stops at the first NULL: free the rest ourselves */
	for (size_t i = 4; i < n; i++)
		free(v[i]);
}

static void test_append_sep(void **st)
{
	_cleanup_free_ char *s = NULL;

	assert_int_equal(str_append_sep(&s, ", ", "%s:%u", "mlx5_0", 1), 0);
	assert_string_equal(s, "mlx5_0:1");
	assert_int_equal(str_append_sep(&s, ", ", "%s", "mlx5_1"), 0);
	assert_string_equal(s, "mlx5_0:1, mlx5_1");
	for (int i = 0; i < 1000; i++)
		assert_int_equal(str_append_sep(&s, ",", "GPU%d", i), 0);
	assert_true(strlen(s) > 5000); /* no fixed buffer to cut it short */
	assert_non_null(strstr(s, ",GPU999"));
}

/* UTC whatever TZ says, the year kept to its four digits */
static void test_utc(void **st)
{
	char out[STR_UTC_LEN];

	setenv("TZ", "Asia/Shanghai", 1);
	tzset();
	str_utc(0, out);
	assert_string_equal(out, "1970-01-01T00:00:00Z");
	str_utc(1795906348, out);
	assert_string_equal(out, "2026-11-28T22:52:28Z");
	str_utc(951782400, out); /* a leap day */
	assert_string_equal(out, "2000-02-29T00:00:00Z");
	str_utc((time_t)-70000000000LL, out);
	assert_string_equal(out, "0000-01-01T00:00:00Z");
	str_utc(-1, out);
	assert_string_equal(out, "1969-12-31T23:59:59Z");
	str_utc(4102444800 + 86399, out); /* 2100 is not a leap year */
	assert_string_equal(out, "2100-01-01T23:59:59Z");
	str_utc(4107456000, out);
	assert_string_equal(out, "2100-02-28T00:00:00Z");
	str_utc(4107542400, out);
	assert_string_equal(out, "2100-03-01T00:00:00Z");
	str_utc(253402300799, out);
	assert_string_equal(out, "9999-12-31T23:59:59Z");
	str_utc((time_t)400000000000LL, out);
	assert_string_equal(out, "9999-12-31T23:59:59Z");
	/* every day of four centuries against the C library's own conversion */
	for (time_t s = 0; s < (time_t)146097 * 86400; s += 86400 + 3599) {
		char want[32];
		struct tm tm;

		gmtime_r(&s, &tm);
		strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%SZ", &tm);
		str_utc(s, out);
		assert_string_equal(out, want);
	}
	unsetenv("TZ");
	tzset();
}

/* What snprintf(dst, n, "%s%s%s") writes and returns, for every size up to past the end: the
 * sysfs reader joins its paths with it instead of printf. */
static void test_concat(void **st)
{
	static const char *const part[] = { "", "a", "bc", "class/net", "/" };
	char want[16], got[16];
	size_t np = sizeof(part) / sizeof(part[0]);

	for (size_t n = 0; n < 14; n++)
		for (size_t i = 0; i < np * np * np; i++) {
			const char *a = part[i % np], *b = part[i / np % np],
				   *c = part[i / np / np];
			int w;

			memset(want, 'Z', sizeof(want));
			memset(got, 'Z', sizeof(got));
			w = snprintf(want, n, "%s%s%s", a, b, c);
			assert_int_equal(str_concat(got, n, a, b, c), (size_t)w);
			assert_memory_equal(got, want, sizeof(want));
		}
}

/* The one check of a path component, and the safe name built on it */
static void test_path_name(void **st)
{
	static const char *const yes[] = { "a", "mlx5_0", "...", ".a", "a.", "virtfn12", "-" };
	static const char *const no[] = { "", ".", "..", "/", "a/b", "a/", "/a" };

	(void)st;
	for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
		assert_true(str_is_path_name(yes[i]));
		assert_true(str_is_safe_name(yes[i], 8));
	}
	for (size_t i = 0; i < ELEMENTSOF(no); i++) {
		assert_false(str_is_path_name(no[i]));
		assert_false(str_is_safe_name(no[i], 8));
	}
	assert_false(str_is_path_name(NULL));
	assert_false(str_is_safe_name("a b", 8));	/* not printable without blanks */
	assert_false(str_is_safe_name("abcdefghi", 8)); /* longer than max */
	assert_true(str_is_safe_name("abcdefgh", 8));
}

/* str_hwaddr's inverse takes what it writes, and nothing else */
static void test_parse_hwaddr(void **st)
{
	static const char *const bad[] = { "",	     ":",    "a",   "aa:",   ":aa",
					   "aa::bb", "aa:b", "aab", "aa-bb", " aa",
					   "aa ",    "+a",   "0x",  "gg",    "aa:bb:cc:dd" };
	uint8_t a[20], b[20];
	char text[3 * 20 + 1];

	(void)st;
	for (unsigned n = 1; n <= 20; n++) {
		for (unsigned i = 0; i < n; i++)
			a[i] = (uint8_t)(i * 37 + n);
		str_hwaddr(a, n, text);
		assert_int_equal(str_parse_hwaddr(text, b, sizeof(b)), (int)n);
		assert_memory_equal(a, b, n);
		if (n > 1) /* one byte more than room */
			assert_int_equal(str_parse_hwaddr(text, b, n - 1), -EINVAL);
	}
	assert_int_equal(str_parse_hwaddr("0A:fF", b, 6), 2);
	assert_int_equal(b[0], 0x0a);
	assert_int_equal(b[1], 0xff);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		assert_int_equal(str_parse_hwaddr(bad[i], b, 3), -EINVAL);
}

static void test_from_u64(void **st)
{
	static const unsigned long long v[] = {
		0, 7, 10, 99, 100, 4294967295ULL, 18446744073709551615ULL
	};
	char got[21], want[32];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(want, sizeof(want), "%llu", v[i]);
		assert_int_equal(str_from_u64(got, v[i]), strlen(want));
		assert_string_equal(got, want);
	}
}

/* ---- the string helpers as they were before their digit-by-digit and table paths: the
 * reference every answer below is compared with ------------------------------------------ */

static int ref_to_u64(const char *s, int base, unsigned long long *ret)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno)
		return -errno;
	if (*end)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int ref_to_i64(const char *s, int base, long long *ret)
{
	char *end;
	long long v;

	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, base);
	if (errno)
		return -errno;
	if (*end)
		return -EINVAL;
	*ret = v;
	return 0;
}

static size_t ref_rstrip(char *s)
{
	size_t l = strlen(s);

	while (l > 0 && isspace((unsigned char)s[l - 1]))
		s[--l] = '\0';
	return l;
}

static bool ref_is_path_name(const char *s)
{
	return s && s[0] && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static int ref_parse_hwaddr(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	for (;;) {
		int hi, lo;

		if (!isxdigit((unsigned char)s[0]) || !isxdigit((unsigned char)s[1]) || n == max)
			return -EINVAL;
		hi = isdigit((unsigned char)s[0]) ? s[0] - '0'
						  : tolower((unsigned char)s[0]) - 'a' + 10;
		lo = isdigit((unsigned char)s[1]) ? s[1] - '0'
						  : tolower((unsigned char)s[1]) - 'a' + 10;
		out[n++] = (uint8_t)(hi << 4 | lo);
		if (!s[2])
			return (int)n;
		if (s[2] != ':')
			return -EINVAL;
		s += 3;
	}
}

/* a fixed sequence (xorshift64), so that every run tries the same strings */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng64(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static unsigned rng(unsigned n)
{
	return (unsigned)(rng64() % n);
}

/* str_to_u64 and str_to_i64 on s in base: the old answer, the value only on success (a
 * failure leaves *ret as it was) */
static void check_to_int(const char *s, int base)
{
	unsigned long long u1 = 7, u2 = 7;
	long long i1 = 7, i2 = 7;
	int r1 = str_to_u64(s, base, &u1), r2 = ref_to_u64(s, base, &u2);

	if (r1 != r2 || u1 != u2)
		fail_msg("str_to_u64(\"%s\", %d) = %d %llu, was %d %llu", s, base, r1, u1, r2, u2);
	r1 = str_to_i64(s, base, &i1);
	r2 = ref_to_i64(s, base, &i2);
	if (r1 != r2 || i1 != i2)
		fail_msg("str_to_i64(\"%s\", %d) = %d %lld, was %d %lld", s, base, r1, i1, r2, i2);
}

/* The edges of strtoull and strtoll, and of the run of digits read without them */
static void test_to_int_edges(void **st)
{
	static const char *const edge[] = { "0",
					    "-0",
					    "00",
					    "08",
					    "010",
					    "0x",
					    "0X",
					    "0xg",
					    "0x1A",
					    "0X1a",
					    "-0x10",
					    "x10",
					    "-",
					    "+",
					    "+5",
					    "--5",
					    "-+5",
					    "",
					    " 5",
					    "5 ",
					    "\t5",
					    "5\n",
					    "\n",
					    "1\x80",
					    "\x80",
					    "1e3",
					    "1.0",
					    "15b3",
					    "0x15b3",
					    "0x15B3",
					    "1016",
					    "9223372036854775807",
					    "9223372036854775808",
					    "-9223372036854775808",
					    "-9223372036854775809",
					    "18446744073709551615",
					    "18446744073709551616",
					    "-18446744073709551615",
					    "-18446744073709551616",
					    "288230376151711743",
					    "288230376151711744",
					    "2882303761517117439",
					    "2882303761517117440",
					    "4611686018427387903",
					    "4611686018427387904",
					    "0x3ffffffffffffff",
					    "0x400000000000000",
					    "0x3fffffffffffffff",
					    "0x4000000000000000",
					    "0x7fffffffffffffff",
					    "0x8000000000000000",
					    "0xffffffffffffffff",
					    "0x10000000000000000",
					    "-0x8000000000000000",
					    "-0x8000000000000001",
					    "000000000000000000000000000000000000001",
					    "0x00000000000000000000000000001",
					    "-00000000000000000000000000000000000001",
					    "99999999999999999999999999999999999999" };
	static const int base[] = { 0, 10, 16, 8, 2, 36, 1, 37, -1 };
	unsigned long long u = 7;
	long long i = 7;

	(void)st;
	for (size_t k = 0; k < ELEMENTSOF(edge); k++)
		for (size_t b = 0; b < ELEMENTSOF(base); b++)
			check_to_int(edge[k], base[b]);
	/* as documented: whole strings, no blank or sign before an unsigned number */
	assert_int_equal(str_to_u64("0x15b3", 16, &u), 0);
	assert_int_equal(u, 0x15b3);
	assert_int_equal(str_to_u64("010", 0, &u), 0);
	assert_int_equal(u, 8);
	assert_int_equal(str_to_u64("-1", 10, &u), -EINVAL);
	assert_int_equal(str_to_u64("18446744073709551616", 10, &u), -ERANGE);
	assert_int_equal(str_to_u64("12x", 10, &u), -EINVAL);
	assert_int_equal(u, 8); /* untouched by a failure */
	assert_int_equal(str_to_i64("-1", 10, &i), 0);
	assert_int_equal(i, -1);
	assert_int_equal(str_to_i64("-12x", 10, &i), -EINVAL);
	assert_int_equal(i, -1);
	assert_int_equal(str_to_i64(NULL, 10, &i), -EINVAL);
	assert_int_equal(str_to_u64(NULL, 10, &u), -EINVAL);
}

/* Generated strings: a prefix (signs, blanks, "0x"), digits of one alphabet or another, a
 * suffix, in every base the callers use and a few they do not */
static void test_to_int_same_as_strtoll(void **st)
{
	static const char *const prefix[] = { "",   "",	  "",  "-",   "+",  " ",  "\t",
					      "0x", "0X", "0", "-0x", "--", "-+", "\n" };
	static const char *const alphabet[] = { "0123456789", "0123456789abcdefABCDEF",
						"0123456789aFgz\x80 ", "01" };
	static const char *const suffix[] = { "", "", "", " ", "\n", "x", "\x80", "0" };
	static const int base[] = { 0, 10, 16, 8, 2, 36, 1, 37, -1 };
	char s[64];

	(void)st;
	for (int i = 0; i < 40000; i++) {
		const char *a = alphabet[rng(ELEMENTSOF(alphabet))];
		size_t n, len = rng(24);

		strcpy(s, prefix[rng(ELEMENTSOF(prefix))]);
		n = strlen(s);
		for (size_t k = 0; k < len; k++)
			s[n++] = a[rng((unsigned)strlen(a))];
		s[n] = '\0';
		strcat(s, suffix[rng(ELEMENTSOF(suffix))]);
		check_to_int(s, base[rng(ELEMENTSOF(base))]);
	}
}

/* Every length of number, each side of each power of ten, and a spread of others: what printf
 * writes */
static void test_from_u64_all_lengths(void **st)
{
	char got[21], want[32];

	(void)st;
	for (int i = 0; i < 100000; i++) {
		unsigned long long v = i < 20000   ? (unsigned long long)i
				       : i < 40000 ? rng64() >> rng(64)
						   : rng64();

		snprintf(want, sizeof(want), "%llu", v);
		assert_int_equal(str_from_u64(got, v), strlen(want));
		assert_string_equal(got, want);
	}
	for (unsigned long long p = 1; p <= 10000000000000000000ULL; p *= 10) {
		for (unsigned long long v = p - 1; v <= p + 1; v++) {
			snprintf(want, sizeof(want), "%llu", v);
			assert_int_equal(str_from_u64(got, v), strlen(want));
			assert_string_equal(got, want);
		}
		if (p == 10000000000000000000ULL)
			break;
	}
}

/* Every string of up to four bytes from an alphabet of separators, dots, blanks and bytes past
 * ASCII: the old answers of the path-name check, the stripper and the prefix test */
static void test_short_strings_same_as_before(void **st)
{
	static const char alpha[] = { '.',  '/',  'a',	  ' ',	  '\t',	  '\n',	 '\v',
				      '\f', '\r', '\x80', '\xa0', '\x85', '\x1c' };
	size_t na = sizeof(alpha);
	char s[8], t[8], u[8];

	(void)st;
	for (size_t len = 0; len <= 4; len++) {
		size_t count = 1;

		for (size_t k = 0; k < len; k++)
			count *= na;
		for (size_t i = 0; i < count; i++) {
			size_t x = i;

			for (size_t k = 0; k < len; k++, x /= na)
				s[k] = alpha[x % na];
			s[len] = '\0';
			if (str_is_path_name(s) != ref_is_path_name(s))
				fail_msg("str_is_path_name(\"%s\")", s);
			strcpy(t, s);
			strcpy(u, s);
			assert_int_equal(str_rstrip(t), ref_rstrip(u));
			assert_memory_equal(t, u, len + 1);
			for (size_t p = 0; p <= len; p++) {
				memcpy(t, s + len - p, p + 1); /* the last p bytes */
				assert_int_equal(str_startswith(s, t),
						 strncmp(s, t, strlen(t)) == 0);
				assert_int_equal(str_startswith(t, s),
						 strncmp(t, s, strlen(s)) == 0);
			}
		}
	}
}

/* The digit table is isxdigit's set in the C locale, with the values strtoull gives */
static void test_digit_value(void **st)
{
	(void)st;
	for (unsigned c = 0; c < 256; c++) {
		char s[2] = { (char)c, '\0' };

		if (isxdigit((int)c))
			assert_int_equal(str_digit_value[c], strtoul(s, NULL, 16));
		else
			assert_int_equal(str_digit_value[c], STR_NOT_DIGIT);
	}
	assert_true(STR_NOT_DIGIT << 12 > 0xffff);
}

/* Addresses of either case with bytes changed: the old answers */
static void test_parse_hwaddr_same_as_before(void **st)
{
	static const char pick[] = "0123456789abcdefABCDEF:g \x80\xff";
	uint8_t a[8], b[8];
	char s[32];

	(void)st;
	for (int i = 0; i < 20000; i++) {
		size_t n = rng(24);
		int r1, r2;

		for (size_t k = 0; k < n; k++)
			s[k] = k % 3 == 2 && rng(8) ? ':'
						    : pick[rng(rng(4) ? 22 : sizeof(pick) - 1)];
		s[n] = '\0';
		r1 = str_parse_hwaddr(s, a, sizeof(a));
		r2 = ref_parse_hwaddr(s, b, sizeof(b));
		if (r1 != r2)
			fail_msg("str_parse_hwaddr(\"%s\") = %d, was %d", s, r1, r2);
		if (r1 > 0)
			assert_memory_equal(a, b, (size_t)r1);
	}
}

/* read all of fd into buf (size n), NUL-terminated */
static void read_all(int fd, char *buf, size_t n)
{
	size_t len = 0;
	ssize_t k;

	while (len + 1 < n && (k = read(fd, buf + len, n - 1 - len)) > 0)
		len += (size_t)k;
	buf[len] = '\0';
}

/* One parser for every number on a command line: digits only, the range checked, nothing
 * that strtoul would let through (blanks, signs, bases, an empty string). */
static void test_opt_uint(void **st)
{
	unsigned long long v = 7;

	(void)st;
	assert_int_equal(opt_parse_uint("100", 10, 60000, &v), 0);
	assert_int_equal(v, 100);
	assert_int_equal(opt_parse_uint("010", 0, 100, &v), 0);
	assert_int_equal(v, 10); /* not octal */
	v = 7;
	const char *bad[] = { "", " 100", "100 ", "+1", "-1", "0x10", "1e3", "1.5", "nan" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(opt_parse_uint(bad[i], 0, ~0ULL, &v), -EINVAL);
	assert_int_equal(v, 7); /* untouched on failure */
	assert_int_equal(opt_parse_uint("9", 10, 20, &v), -ERANGE);
	assert_int_equal(opt_parse_uint("21", 10, 20, &v), -ERANGE);
	assert_int_equal(opt_parse_uint("18446744073709551615", 0, ~0ULL, &v), 0);
	assert_true(v == ~0ULL);
	assert_int_equal(opt_parse_uint("18446744073709551616", 0, ~0ULL, &v), -ERANGE);
	assert_int_equal(opt_parse_uint("99999999999999999999999", 0, ~0ULL, &v), -ERANGE);
}

/* Decimals the same way (seconds, percents): scaled to an integer, nothing strtod would add. */
static void test_opt_decimal(void **st)
{
	unsigned long long v = 7;

	(void)st;
	assert_int_equal(opt_parse_decimal("10", 3, 0, 600000, &v), 0);
	assert_int_equal(v, 10000);
	assert_int_equal(opt_parse_decimal("0.5", 3, 0, 600000, &v), 0);
	assert_int_equal(v, 500);
	assert_int_equal(opt_parse_decimal("0.125", 3, 0, 600000, &v), 0);
	assert_int_equal(v, 125);
	assert_int_equal(opt_parse_decimal("010.10", 3, 0, 600000, &v), 0);
	assert_int_equal(v, 10100); /* not octal */
	v = 7;
	const char *bad[] = { "",    " 1",  "1 ", "+1", "-1",	 "0x10",  "1e1",
			      "nan", "inf", ".5", "5.", "1.2.3", "0.0005" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(opt_parse_decimal(bad[i], 3, 0, ~0ULL, &v), -EINVAL);
	assert_int_equal(v, 7);
	assert_int_equal(opt_parse_decimal("0.099", 3, 100, 600000, &v), -ERANGE);
	assert_int_equal(opt_parse_decimal("600.001", 3, 100, 600000, &v), -ERANGE);
	assert_int_equal(opt_parse_decimal("18446744073709551", 3, 0, ~0ULL, &v), 0);
	assert_int_equal(opt_parse_decimal("18446744073709552", 3, 0, ~0ULL, &v), -ERANGE);
	assert_int_equal(opt_parse_decimal("5", 0, 0, 10, &v), 0);
	assert_int_equal(opt_parse_decimal("5.0", 0, 0, 10, &v), -EINVAL);
	assert_int_equal(v, 5);
}

static void test_spawn(void **st)
{
	char *argv[] = { "sh", "-c",
			 "read x; echo \"$x $A $B\"; echo err >&2; kill -INT $$; echo alive",
			 NULL };
	char *envp[] = { "A=1", "B=old", NULL };
	char buf[256];
	int in[2], out[2], status;
	pid_t pid;
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;

	(void)st;
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	/* the caller ignores SIGINT; the child gets the default action (it dies of its own kill) */
	sigaction(SIGINT, &ign, &old);
	{
		struct spawn_opts so = { .argv = argv,
					 .search_path = true,
					 .envp = envp,
					 .set_env = "B=new",
					 .in = in[0],
					 .out = out[1],
					 .err = out[1],
					 .new_group = true };

		assert_int_equal(spawn_start(&so, &pid), 0);
	}
	sigaction(SIGINT, &old, NULL);
	close(in[0]);
	close(out[1]);
	assert_int_equal(write(in[1], "hello\n", 6), 6);
	close(in[1]);
	read_all(out[0], buf, sizeof(buf));
	close(out[0]);
	assert_int_equal(spawn_wait(pid, &status), 0);
	/* stdin, stdout and stderr as given, the environment as given with B replaced */
	assert_string_equal(buf, "hello 1 new\nerr\n");
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGINT);
}

static void test_spawn_group_and_errors(void **st)
{
	char *pg[] = { "/bin/sh", "-c",
		       "ps -o pgid= -p $$ 2>/dev/null || cut -d' ' -f5 /proc/$$/stat", NULL };
	char *missing[] = { "rdmak-no-such-program", NULL };
	char *abs_missing[] = { "/nonexistent/rdmak", NULL };
	char buf[64];
	int out[2], status;
	pid_t pid;

	(void)st;
	assert_int_equal(pipe(out), 0);
	{
		struct spawn_opts so = {
			.argv = pg, .in = -1, .out = out[1], .err = -1, .new_group = true
		};

		assert_int_equal(spawn_start(&so, &pid), 0);
	}
	close(out[1]);
	read_all(out[0], buf, sizeof(buf));
	close(out[0]);
	assert_int_equal(spawn_wait(pid, &status), 0);
	assert_true(WIFEXITED(status));
	/* a group of its own: its group id is its pid */
	assert_int_equal(atoi(buf), pid);
	/* a program that is not there is an error here, not a child exiting 127 */
	{
		struct spawn_opts so = {
			.argv = missing, .search_path = true, .in = -1, .out = -1, .err = -1
		};

		assert_int_equal(spawn_start(&so, &pid), -ENOENT);
	}
	{
		struct spawn_opts so = { .argv = abs_missing, .in = -1, .out = -1, .err = -1 };

		assert_int_equal(spawn_start(&so, &pid), -ENOENT);
	}
	{
		struct spawn_opts so = { .argv = NULL };

		assert_int_equal(spawn_start(&so, &pid), -EINVAL);
	}
}

static void test_read_owned(void **st)
{
	char p[128], err[512], *buf = NULL;
	size_t len = 0;
	int fd;

	snprintf(p, sizeof(p), "%s/token", dir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "tok\n", 4), 4);
	close(fd);
	assert_int_equal(fileio_read_owned(AT_FDCWD, p, 64, &buf, &len, err, sizeof(err)), 0);
	assert_int_equal(len, 4);
	free(buf);
	/* larger than allowed */
	assert_int_equal(fileio_read_owned(AT_FDCWD, p, 3, &buf, &len, err, sizeof(err)), -EFBIG);
	/* writable by group: anyone in it could redirect the node's credentials */
	assert_int_equal(chmod(p, 0620), 0);
	assert_int_equal(fileio_read_owned(AT_FDCWD, p, 64, &buf, &len, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "with mode 0620: refused"));
	assert_int_equal(chmod(p, 0600), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(p, 65534, 0), 0);
		assert_int_equal(fileio_read_owned(AT_FDCWD, p, 64, &buf, &len, err, sizeof(err)),
				 -EPERM);
		assert_non_null(strstr(err, "is owned by uid 65534"));
		assert_int_equal(chown(p, 0, 0), 0);
	}
	/* a FIFO: refused at once, no writer needed (a blocking open would wait forever) */
	snprintf(p, sizeof(p), "%s/fifo", dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_int_equal(fileio_read_owned(AT_FDCWD, p, 64, &buf, &len, err, sizeof(err)),
			 -FILEIO_ENOTREG);
	assert_non_null(strstr(err, "fifo is a FIFO: refused"));
	/* a symbolic link, even to a good file */
	snprintf(p, sizeof(p), "%s/link", dir);
	assert_int_equal(symlink("token", p), 0);
	assert_int_equal(fileio_read_owned(AT_FDCWD, p, 64, &buf, &len, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "link is a symbolic link: refused"));
	/* a device, a directory, nothing */
	assert_int_equal(fileio_read_owned(AT_FDCWD, "/dev/null", 64, &buf, &len, err, sizeof(err)),
			 -FILEIO_ENOTREG);
	assert_non_null(strstr(err, "/dev/null is a character device: refused"));
	assert_int_equal(fileio_read_owned(AT_FDCWD, dir, 64, &buf, &len, err, sizeof(err)),
			 -EISDIR);
	snprintf(p, sizeof(p), "%s/none", dir);
	assert_int_equal(fileio_read_owned(AT_FDCWD, p, 64, &buf, &len, err, sizeof(err)), -ENOENT);
}

/* A folder a root process writes in, beneath a base the owner named: one component at a time,
 * no link followed, each root's and writable by nobody else. */
static void test_open_dir_beneath(void **st)
{
	char base[128], p[192], err[512];
	int fd;

	snprintf(base, sizeof(base), "%s/base", dir);
	/* the base made (the owner's), and a folder beneath it */
	snprintf(p, sizeof(p), "%s/a/b", base);
	fd = fileio_open_dir_beneath(base, p, true, 0700, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
	fd = fileio_open_dir_beneath(base, base, false, 0700, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
	/* not beneath: elsewhere, a sibling whose name starts the same, "..", "." */
	assert_int_equal(fileio_open_dir_beneath(base, "/etc", false, 0700, err, sizeof(err)),
			 -EXDEV);
	assert_non_null(strstr(err, "/etc is not "));
	snprintf(p, sizeof(p), "%s2", base);
	assert_int_equal(fileio_open_dir_beneath(base, p, true, 0700, err, sizeof(err)), -EXDEV);
	snprintf(p, sizeof(p), "%s/a/../../x", base);
	assert_int_equal(fileio_open_dir_beneath(base, p, true, 0700, err, sizeof(err)), -EXDEV);
	snprintf(p, sizeof(p), "%s/./a", base);
	assert_int_equal(fileio_open_dir_beneath(base, p, true, 0700, err, sizeof(err)), -EXDEV);
	assert_false(fileio_path_beneath(base, p));
	snprintf(p, sizeof(p), "%s/a//b", base);
	assert_false(fileio_path_beneath(base, p));
	snprintf(p, sizeof(p), "%s/a/b/", base);
	assert_true(fileio_path_beneath(base, p));
	assert_true(fileio_path_beneath("/", "/var/lib"));
	assert_true(fileio_path_beneath("/var/lib/", "/var/lib/x"));
	assert_false(fileio_path_beneath("/var/lib", "/var/lib2"));
	/* a link beneath the base, to a folder of root's: refused, never followed */
	snprintf(p, sizeof(p), "%s/link", base);
	assert_int_equal(symlink("/etc", p), 0);
	snprintf(p, sizeof(p), "%s/link/cron.d", base);
	assert_int_equal(fileio_open_dir_beneath(base, p, true, 0700, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "/base/link is a symbolic link: refused"));
	assert_true(access("/etc/cron.d/cron.d", F_OK) < 0);
	/* a file where a folder should be */
	snprintf(p, sizeof(p), "%s/file", base);
	close(open(p, O_WRONLY | O_CREAT, 0600));
	assert_int_equal(fileio_open_dir_beneath(base, p, true, 0700, err, sizeof(err)), -ENOTDIR);
	assert_non_null(strstr(err, "/base/file is a regular file: refused"));
	/* a folder anyone may write: what a name in it is could be swapped */
	snprintf(p, sizeof(p), "%s/open", base);
	assert_int_equal(mkdir(p, 0777), 0);
	assert_int_equal(chmod(p, 01777), 0);
	snprintf(p, sizeof(p), "%s/open/x", base);
	assert_int_equal(fileio_open_dir_beneath(base, p, true, 0700, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "/base/open is owned by uid 0 with mode 1777: refused"));
	if (geteuid() == 0) {
		/* a folder of another user's (a pod's volume on the host) */
		snprintf(p, sizeof(p), "%s/user", base);
		assert_int_equal(mkdir(p, 0755), 0);
		assert_int_equal(chown(p, 65534, 65534), 0);
		assert_int_equal(fileio_open_dir_beneath(base, p, true, 0700, err, sizeof(err)),
				 -EPERM);
		assert_non_null(strstr(err, "is owned by uid 65534"));
		/* the base itself */
		assert_int_equal(fileio_open_dir_beneath(p, p, true, 0700, err, sizeof(err)),
				 -EPERM);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_file, setup, teardown),
		cmocka_unit_test(test_path_name),
		cmocka_unit_test(test_parse_hwaddr),
		cmocka_unit_test_setup_teardown(test_list_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_regular, setup, teardown),
		cmocka_unit_test(test_read_file_big_and_pipe),
		cmocka_unit_test_setup_teardown(test_write_atomic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_atomic_refuses_non_regular, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_remove_stale_temps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_owned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_dir_beneath, setup, teardown),
		cmocka_unit_test(test_strv),
		cmocka_unit_test(test_append_sep),
		cmocka_unit_test(test_utc),
		cmocka_unit_test(test_concat),
		cmocka_unit_test(test_from_u64),
		cmocka_unit_test(test_from_u64_all_lengths),
		cmocka_unit_test(test_to_int_edges),
		cmocka_unit_test(test_to_int_same_as_strtoll),
		cmocka_unit_test(test_short_strings_same_as_before),
		cmocka_unit_test(test_parse_hwaddr_same_as_before),
		cmocka_unit_test(test_digit_value),
		cmocka_unit_test(test_opt_uint),
		cmocka_unit_test(test_opt_decimal),
		cmocka_unit_test(test_spawn),
		cmocka_unit_test(test_spawn_group_and_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
