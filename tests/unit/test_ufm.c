/* SPDX-License-Identifier: Apache-2.0 */
/* src/ufm, the parts a root process runs on input from the network or from files: the parser of
 * the fabric manager's HTTP answer (Content-Length, chunked, cut short, larger than allowed, not
 * HTTP, NUL bytes in the body), the parser of a pkey's member list (not JSON, no list, entries
 * that name no GUID), the node's fabrics file, the reader of secrets (a FIFO, a symbolic link, a
 * device, a directory, another owner, a group-writable file, too large: each refused by name, none
 * blocking), and the journal and lock, each keyed by fabric. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "httpc/httpc.h"
#include "ufm/internal.h"
#include "ufm/ufm.h"
#include "util/fileio.h"

static char dir[64];

static int setup(void **st)
{
	strcpy(dir, "/tmp/rdmak-ufm.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* parse(TEXT, max): the answer as the request loop hands it over, NUL after the bytes */
static int parse_n(const char *text, size_t len, size_t max, struct httpc_answer *a, char *err)
{
	char *buf = malloc(len + 1);
	int r;

	assert_non_null(buf);
	memcpy(buf, text, len);
	buf[len] = '\0';
	err[0] = '\0';
	*a = (struct httpc_answer){ 0 };
	r = httpc_parse_answer(buf, len, max, a, err, 256);
	free(buf);
	return r;
}
#define parse(t, max, a, err) parse_n(t, sizeof(t) - 1, max, a, err)

static void test_answer(void **st)
{
	struct httpc_answer a;
	char err[256];

	(void)st;
	assert_int_equal(
		parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello, and more", 64, &a, err),
		0);
	assert_int_equal(a.status, 200);
	assert_int_equal(a.len, 5);
	assert_string_equal(a.body, "hello");
	httpc_answer_clear(&a);
	/* until the connection closed, without a length */
	assert_int_equal(parse("HTTP/1.0 404 Not Found\r\nServer: x\r\n\r\n{}", 64, &a, err), 0);
	assert_int_equal(a.status, 404);
	assert_string_equal(a.body, "{}");
	httpc_answer_clear(&a);
	/* the body's length is its bytes, NUL bytes included */
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\na\0b", 64, &a, err), 0);
	assert_int_equal(a.len, 3);
	assert_memory_equal(a.body, "a\0b", 3);
	httpc_answer_clear(&a);
}

static void test_answer_chunked(void **st)
{
	struct httpc_answer a;
	char err[256];

	(void)st;
	assert_int_equal(
		parse("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n"
		      "6\r\n world\r\nA\r\n, chunked.\r\n0\r\nTrailer: x\r\n\r\n",
		      64, &a, err),
		0);
	assert_string_equal(a.body, "hello world, chunked.");
	assert_int_equal(a.len, 21);
	httpc_answer_clear(&a);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 64,
			       &a, err),
			 0);
	assert_int_equal(a.len, 0);
	httpc_answer_clear(&a);
	/* cut short: in a size line, in a chunk, before the last chunk */
	assert_int_equal(
		parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5", 64, &a, err),
		-EPROTO);
	assert_string_equal(err, "the answer's chunked body is cut short or malformed");
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nhello",
			       64, &a, err),
			 -EPROTO);
	assert_int_equal(
		parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", 64, &a,
		      err),
		-EPROTO);
	/* malformed: a size that is not hex, signed, too long; data not followed by CRLF */
	assert_int_equal(
		parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n0\r\n\r\n",
		      64, &a, err),
		-EPROTO);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: "
			       "chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n",
			       64, &a, err),
			 -EPROTO);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n "
			       "-5\r\nhello\r\n0\r\n\r\n",
			       64, &a, err),
			 -EPROTO);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: "
			       "chunked\r\n\r\n000000005\r\nhello\r\n0\r\n\r\n",
			       64, &a, err),
			 -EPROTO);
	assert_int_equal(
		parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
		      64, &a, err),
		-EPROTO);
	assert_null(a.body);
}

static void test_answer_refused(void **st)
{
	struct httpc_answer a;
	char err[256];

	(void)st;
	/* truncated */
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", 64, &a, err),
			 -EPROTO);
	assert_string_equal(err, "the answer is cut short (5 of 10 bytes)");
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n", 64, &a, err), -EPROTO);
	assert_string_equal(err, "the answer is not HTTP/1.x");
	/* oversized: declared, sent without a length, in chunks */
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello", 64, &a, err),
			 -EPROTO);
	assert_string_equal(err, "the answer is larger than 64 bytes (100)");
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
			       64, &a, err),
			 -EPROTO);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\n\r\n0123456789", 8, &a, err), -EPROTO);
	assert_string_equal(err, "the answer is larger than 8 bytes");
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: "
			       "chunked\r\n\r\n5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n",
			       8, &a, err),
			 -EPROTO);
	assert_string_equal(err, "the answer is larger than 8 bytes");
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: "
			       "chunked\r\n\r\nffffffff\r\nhello\r\n0\r\n\r\n",
			       64, &a, err),
			 -EPROTO);
	/* not HTTP */
	assert_int_equal(parse("SSH-2.0-OpenSSH_9.2\r\n\r\n", 64, &a, err), -EPROTO);
	assert_string_equal(err, "the answer is not HTTP/1.x");
	assert_int_equal(parse("HTTP/2 200\r\n\r\n", 64, &a, err), -EPROTO);
	assert_int_equal(parse("HTTP/1.1 2x0 OK\r\n\r\n", 64, &a, err), -EPROTO);
	assert_int_equal(parse("HTTP/1.1 099 OK\r\n\r\n", 64, &a, err), -EPROTO);
	assert_int_equal(parse("HTTP/1.1 2000 OK\r\n\r\n", 64, &a, err), -EPROTO);
	assert_int_equal(parse("", 64, &a, err), -EPROTO);
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\nhello", 64, &a, err),
			 -EPROTO);
	assert_string_equal(err, "the answer's Content-Length is not a number");
	assert_null(a.body);
}

static void test_members(void **st)
{
	struct ufm_member *m = NULL;
	size_t n = 7;
	const char *ok = "{\"partition_name\":\"p\",\"guids\":[{\"guid\":\"0002c90300216e70\","
			 "\"membership\":\"limited\","
			 "\"index0\":true},{\"guid\":\"0x0002C90300216E71\"},\"0002c90300216e72\","
			 "{\"guid\":7},"
			 "{\"guid\":\"nonsense\"},null]}";

	(void)st;
	assert_int_equal(ufm_members_parse(ok, strlen(ok), &m, &n), 1);
	assert_int_equal(n, 3);
	assert_true(m[0].guid == 0x0002c90300216e70ull && m[0].limited && m[0].index0);
	assert_true(m[1].guid == 0x0002c90300216e71ull && !m[1].limited && !m[1].index0);
	assert_true(m[2].guid == 0x0002c90300216e72ull);
	free(m);
	/* an empty object: a pkey some versions do not know */
	m = NULL;
	assert_int_equal(ufm_members_parse("{}", 2, &m, &n), 0);
	assert_int_equal(n, 0);
	assert_null(m);
	/* not JSON, no list, a list of something else */
	assert_int_equal(ufm_members_parse("<html>502 Bad Gateway</html>", 28, &m, &n), -EPROTO);
	assert_int_equal(ufm_members_parse("{\"guids\":\"all\"}", 15, &m, &n), -EPROTO);
	assert_int_equal(ufm_members_parse("[]", 2, &m, &n), -EPROTO);
	assert_int_equal(ufm_members_parse("{\"guids\":[]", 11, &m, &n), -EPROTO);
	assert_int_equal(ufm_members_parse("", 0, &m, &n), -EPROTO);
}

static void test_fabrics(void **st)
{
	struct ufm_fabrics f = { 0 };
	char err[512];
	const char *ok = "{\"stateDir\":\"/var/lib/x\",\"fabrics\":{\"rail0\":{\"ufm\":\"https:"
			 "//ufm-a.example:8443/p\","
			 "\"credentials\":\"/etc/rdmak/fabric/rail0\",\"ca\":"
			 "\"/etc/rdmak/fabric/rail0/ca.crt\","
			 "\"timeoutSeconds\":2.5},\"rail1\":{\"ufm\":\"https://10.0.0.2\","
			 "\"credentials\":\"/c\"}}}";

	(void)st;
	assert_int_equal(ufm_fabrics_parse(ok, strlen(ok), &f, err, sizeof(err)), 0);
	assert_int_equal(f.n, 2);
	assert_string_equal(f.state_dir, "/var/lib/x");
	assert_string_equal(ufm_fabrics_find(&f, "rail0")->ufm, "https://ufm-a.example:8443/p");
	assert_int_equal(ufm_fabrics_find(&f, "rail0")->timeout_ms, 2500);
	assert_int_equal(ufm_fabrics_find(&f, "rail1")->timeout_ms, UFM_DEFAULT_TIMEOUT_MS);
	assert_null(ufm_fabrics_find(&f, "rail1")->ca_file);
	assert_null(ufm_fabrics_find(&f, "rail2"));
	assert_string_equal(ufm_fabrics_find_url(&f, "https://10.0.0.2")->name, "rail1");
	assert_null(ufm_fabrics_find_url(&f, "https://10.0.0.3"));
	ufm_fabrics_names(&f, err, sizeof(err));
	assert_string_equal(err, "rail0, rail1");
	ufm_fabrics_clear(&f);
	assert_int_equal(ufm_fabrics_parse("{\"fabrics\":{}}", 14, &f, err, sizeof(err)), 0);
	assert_string_equal(f.state_dir, "/var/lib/cni/rdmak-cni");
	ufm_fabrics_clear(&f);

	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "{\"fabrics\":{\"Rail_0\":{\"ufm\":\"https://u\",\"credentials\":\"/c\"}}}",
		  "fabrics.Rail_0: not a fabric name" },
		{ "{\"fabrics\":{\"r\":{\"ufm\":\"http://u\",\"credentials\":\"/c\"}}}",
		  "fabrics.r.ufm: \"http://u\" is not an https:// URL" },
		{ "{\"fabrics\":{\"r\":{\"ufm\":\"https://user@u\",\"credentials\":\"/c\"}}}",
		  "fabrics.r.ufm: " },
		{ "{\"fabrics\":{\"r\":{\"ufm\":\"https://u\"}}}",
		  "fabrics.r.credentials: missing" },
		{ "{\"fabrics\":{\"r\":{\"ufm\":\"https://u\",\"credentials\":\"c\"}}}",
		  "fabrics.r.credentials: \"c\" is not an absolute path" },
		{ "{\"fabrics\":{\"r\":{\"ufm\":\"https://u\",\"credentials\":\"/a/../b\"}}}",
		  "fabrics.r.credentials: " },
		{ "{\"fabrics\":{\"r\":{\"ufm\":\"https://u\",\"credentials\":\"/c\","
		  "\"timeoutSeconds\":0}}}",
		  "fabrics.r.timeoutSeconds: 0 is out of range" },
		{ "{\"fabrics\":{\"r\":{\"ufm\":\"https://u\",\"credentials\":\"/c\",\"verify\":"
		  "false}}}",
		  "fabrics.r.verify: " },
		{ "{\"fabrics\":{\"r\":7}}", "fabrics.r: expected an object" },
		{ "{\"fabrics\":{},\"stateDir\":\"x\"}", "stateDir: " },
		{ "{}", "fabrics: missing" },
		{ "[1]", "not a JSON object" },
		{ "{\"fabrics\":{},\"fabrics\":{}}", "not a JSON object" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(
			ufm_fabrics_parse(bad[i].text, strlen(bad[i].text), &f, err, sizeof(err)),
			-EINVAL);
		if (!strstr(err, bad[i].err))
			fail_msg("%s: got \"%s\", want \"%s\"", bad[i].text, err, bad[i].err);
	}
}

static void test_journal(void **st)
{
	struct ufm_fabric a = { .name = "rail-a", .ufm = (char *)"https://a" },
			  b = { .name = "rail-b", .ufm = (char *)"https://b" };
	struct ufm_journal_entry *v = NULL;
	char p[256];
	size_t n = 0;
	int la, fd;

	(void)st;
	assert_int_equal(ufm_journal_add(dir, &a, 0x8101, 0x0002c90300216e70ull), 0);
	assert_int_equal(ufm_journal_add(dir, &b, 0x0101, 0x0002c90300216e71ull), 0);
	/* an entry of the version before, which named no fabric */
	snprintf(p, sizeof(p),
		 "mkdir -p %s/fabric-journal && echo remove "
		 ">%s/fabric-journal/0101-0002c90300216e72",
		 dir, dir);
	assert_int_equal(system(p), 0);
	assert_int_equal(ufm_journal_list(dir, "rail-a", &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].fabric, "rail-a");
	assert_string_equal(v[0].url, "https://a");
	assert_int_equal(v[0].pkey, 0x0101);
	assert_true(v[0].guid == 0x0002c90300216e70ull);
	free(v);
	assert_int_equal(ufm_journal_list(dir, NULL, &v, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].fabric, "rail-a");
	assert_string_equal(v[1].fabric, "rail-b");
	assert_string_equal(v[2].fabric, "");
	assert_true(v[2].guid == 0x0002c90300216e72ull);
	free(v);
	assert_int_equal(ufm_journal_remove(dir, "rail-a", 0x0101, 0x0002c90300216e70ull), 0);
	assert_int_equal(ufm_journal_remove(dir, "", 0x0101, 0x0002c90300216e72ull), 0);
	assert_int_equal(ufm_journal_list(dir, NULL, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].fabric, "rail-b");
	free(v);
	assert_int_equal(ufm_journal_list(dir, "rail-c", &v, &n), 0);
	assert_int_equal(n, 0);
	free(v);
	assert_int_equal(ufm_journal_add(dir,
					 &(struct ufm_fabric){ .name = "../x", .ufm = (char *)"" },
					 1, 1),
			 -EINVAL);
	/* a fabric the node did not know then: no URL, retried against the fabric of that name */
	assert_int_equal(
		ufm_journal_add(dir, &(struct ufm_fabric){ .name = "rail-c", .ufm = (char *)"" }, 1,
				2),
		0);
	assert_int_equal(ufm_journal_list(dir, "rail-c", &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].url, "");
	free(v);
	/* one lock per fabric: rail-a's held does not hold rail-b's */
	la = ufm_lock(dir, "rail-a");
	assert_true(la >= 0);
	close(ufm_lock(dir, "rail-b"));
	snprintf(p, sizeof(p), "%s/.fabric/rail-b/lock", dir);
	fd = open(p, O_RDWR | O_CLOEXEC);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/.fabric/rail-a/lock", dir);
	fd = open(p, O_RDWR | O_CLOEXEC);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), -1);
	assert_int_equal(errno, EWOULDBLOCK);
	close(fd);
	close(la);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answer),	       cmocka_unit_test(test_answer_chunked),
		cmocka_unit_test(test_answer_refused), cmocka_unit_test(test_members),
		cmocka_unit_test(test_fabrics),	       cmocka_unit_test(test_journal),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
