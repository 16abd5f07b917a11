/* SPDX-License-Identifier: Apache-2.0 */
/* src/exporter: the format an Accept header asks for (Prometheus sends OpenMetrics first with
 * text as a fallback; a q of 0 refuses a type), and the concurrency bound: a scrape past
 * max_scrapes is -EBUSY, not queued. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <netlink/attr.h>
#include <netlink/handlers.h>
#include <netlink/socket.h>
#include <rdma/rdma_netlink.h>

#include "exporter/exporter.h"
#include "exporter/internal.h"
#include "nl/nl-internal.h"
#include "unit/nldev_replies.h"
#include "util/strutil.h"

static void test_accept(void **st)
{
	assert_int_equal(exporter_format_from_accept(NULL), EXPORTER_TEXT);
	assert_int_equal(exporter_format_from_accept(""), EXPORTER_TEXT);
	assert_int_equal(exporter_format_from_accept("*/*"), EXPORTER_TEXT);
	assert_int_equal(exporter_format_from_accept("text/plain;version=0.0.4"), EXPORTER_TEXT);
	/* Prometheus 2.x's scrape Accept header */
	assert_int_equal(exporter_format_from_accept(
				 "application/openmetrics-text;version=1.0.0,application/"
				 "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;"
				 "q=0.5,*/*;q=0.1"),
			 EXPORTER_OPENMETRICS);
	assert_int_equal(exporter_format_from_accept("text/plain, Application/OpenMetrics-Text"),
			 EXPORTER_OPENMETRICS);
	assert_int_equal(exporter_format_from_accept("application/openmetrics-text;q=0,text/plain"),
			 EXPORTER_TEXT);
	assert_int_equal(exporter_format_from_accept("application/openmetrics"), EXPORTER_TEXT);
	assert_int_equal(exporter_format_from_accept("application/openmetrics-textual"),
			 EXPORTER_TEXT);
	/* the q is the parameter named q, and no other: not one that ends in q, not a "q=" in a
	 * quoted value */
	assert_int_equal(exporter_format_from_accept("application/openmetrics-text;seq=0"),
			 EXPORTER_OPENMETRICS);
	assert_int_equal(exporter_format_from_accept("application/openmetrics-text;foq=0.0"),
			 EXPORTER_OPENMETRICS);
	assert_int_equal(exporter_format_from_accept(
				 "application/openmetrics-text;version=\"1.0.0;q=0\",text/plain"),
			 EXPORTER_OPENMETRICS);
	/* names are case-insensitive, the q stands anywhere among the parameters */
	assert_int_equal(exporter_format_from_accept("application/openmetrics-text;Q=0"),
			 EXPORTER_TEXT);
	assert_int_equal(exporter_format_from_accept(
				 "application/openmetrics-text ; q=0 ; version=1.0.0, text/plain"),
			 EXPORTER_TEXT);
	/* a quoted comma does not end the media range */
	assert_int_equal(exporter_format_from_accept(
				 "application/openmetrics-text;x=\"a,b\";q=0, text/plain"),
			 EXPORTER_TEXT);
	/* one that cannot be read is skipped: no guess at what it meant */
	assert_int_equal(exporter_format_from_accept("application/openmetrics-text;q=0.5000"),
			 EXPORTER_TEXT);
	assert_int_equal(exporter_format_from_accept("application/openmetrics-text;q=\"1\""),
			 EXPORTER_TEXT);
	assert_int_equal(exporter_format_from_accept("application/openmetrics-text;q=1;q=0"),
			 EXPORTER_TEXT);
	assert_int_equal(exporter_format_from_accept("application/openmetrics-text junk"),
			 EXPORTER_TEXT);
	/* empty elements and whitespace around them are nothing */
	assert_int_equal(exporter_format_from_accept(" ,, \tapplication/openmetrics-text\t,"),
			 EXPORTER_OPENMETRICS);
	assert_string_equal(exporter_content_type(EXPORTER_TEXT),
			    "text/plain; version=0.0.4; charset=utf-8");
}

/* An empty sysfs root: no device, a scrape still answers; with max_scrapes of them in flight,
 * one more is refused. */
static void test_busy(void **st)
{
	char dir[] = "/tmp/rdmak-exp.XXXXXX";
	char sys[64];
	struct hw_ctx *ctx = NULL;
	struct exporter *e = NULL;
	struct hw_error err;
	char *buf = NULL;
	size_t len = 0;

	assert_non_null(mkdtemp(dir));
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	assert_int_equal(mkdir(sys, 0755), 0);
	assert_int_equal(hw_ctx_new(sys, NULL, &ctx), 0);
	assert_int_equal(exporter_new(ctx, 1, &e, &err), 0);
	assert_int_equal(exporter_scrape(e, EXPORTER_TEXT, &buf, &len), 0);
	assert_non_null(strstr(buf, "rdmak_exporter_topology_loads_total 1\n"));
	assert_null(strstr(buf, "node_infiniband_state_id{"));
	free(buf);
	atomic_store(&e->inflight, 1); /* one scrape in flight */
	assert_int_equal(exporter_scrape(e, EXPORTER_TEXT, &buf, &len), -EBUSY);
	atomic_store(&e->inflight, 0);
	assert_int_equal(exporter_scrape(e, EXPORTER_OPENMETRICS, &buf, &len), 0);
	assert_int_equal(len >= 6 && !strcmp(buf + len - 6, "# EOF\n"), 1);
	free(buf);
	exporter_free(e);
	hw_ctx_free(ctx);
	rmdir(sys);
	rmdir(dir);
}

/* The rdmak_rdma_counter_* text of n devices, NUL-ended (the caller frees it). */
static char *rdma_text(const struct exp_rdma_dev *d, size_t n)
{
	struct exporter_buf b;

	assert_int_equal(exporter_buf_init(&b, 0), 0);
	assert_int_equal(exporter_rdma_write(&b, EXPORTER_TEXT, d, n), 0);
	exporter_buf_putc(&b, '\0');
	assert_false(b.oom);
	return b.p;
}

/* The counter objects of RDMA netlink: parsed from a dump built as nldev.c builds it (this
 * kernel has no RDMA), then written as rdmak_rdma_counter_* series. */
static void test_rdma_counters(void **st)
{
	static const uint32_t qps[] = { 178, 179 };
	static const struct nldev_hw hw_a[] = { { "rx_write_requests", 7 },
						{ "out_of_sequence", 2 } };
	static const struct nldev_hw hw_b[] = { { "rx_write_requests", 18446744073709551615ULL } };
	static const struct nldev_counter c[] = {
		{ .port = 1,
		  .id = 3,
		  .mode = RDMA_COUNTER_MODE_AUTO,
		  .qp_type = 2,
		  .pid = 4242,
		  .qpns = qps,
		  .n_qpns = 2,
		  .hw = hw_a,
		  .n_hw = 2 },
		{ .port = 2,
		  .id = 4,
		  .mode = RDMA_COUNTER_MODE_MANUAL,
		  .qp_type = -1,
		  .pid = -1,
		  .hw = hw_b,
		  .n_hw = 1 },
	};
	struct exp_rdma_dev d = { .name = "mlx5_0" };
	struct nl_msg *m = nldev_counter_dump(1, NLM_F_MULTI, 0, "mlx5_0", c, 2);
	struct nlmsghdr *h = nlmsg_hdr(m);
	char *buf;

	assert_int_equal(nl_rdma_counters_parse(h, h->nlmsg_len, &d.v, &d.n), 0);
	nlmsg_free(m);
	buf = rdma_text(&d, 1);
	assert_non_null(
		strstr(buf, "# TYPE rdmak_rdma_counter_info gauge\n"
			    "rdmak_rdma_counter_info{device=\"mlx5_0\",port=\"1\",counter_id=\"3\","
			    "mode=\"auto\","
			    "qp_type=\"RC\",pid=\"4242\",comm=\"\"} 1\n"
			    "rdmak_rdma_counter_info{device=\"mlx5_0\",port=\"2\",counter_id=\"4\","
			    "mode=\"manual\","
			    "qp_type=\"\",pid=\"\",comm=\"\"} 1\n"));
	assert_non_null(strstr(
		buf, "rdmak_rdma_counter_qps{device=\"mlx5_0\",port=\"1\",counter_id=\"3\"} 2\n"
		     "rdmak_rdma_counter_qps{device=\"mlx5_0\",port=\"2\",counter_id=\"4\"} 0\n"));
	assert_non_null(strstr(
		buf, "rdmak_rdma_counter_qp_info{device=\"mlx5_0\",port=\"1\",counter_id=\"3\","
		     "lqpn=\"178\"} 1\n"
		     "rdmak_rdma_counter_qp_info{device=\"mlx5_0\",port=\"1\",counter_id=\"3\","
		     "lqpn=\"179\"} 1\n"));
	/* one family per hardware counter name, sorted, each with every counter that has it */
	assert_non_null(
		strstr(buf, "# TYPE rdmak_rdma_counter_out_of_sequence_total counter\n"
			    "rdmak_rdma_counter_out_of_sequence_total{device=\"mlx5_0\",port=\"1\","
			    "counter_id=\"3\"} 2\n"
			    "# HELP rdmak_rdma_counter_rx_write_requests_total"));
	assert_non_null(strstr(
		buf, "# TYPE rdmak_rdma_counter_rx_write_requests_total counter\n"
		     "rdmak_rdma_counter_rx_write_requests_total{device=\"mlx5_0\",port=\"1\","
		     "counter_id=\"3\"} 7\n"
		     "rdmak_rdma_counter_rx_write_requests_total{device=\"mlx5_0\",port=\"2\","
		     "counter_id=\"4\"} "
		     "18446744073709551615\n"));
	free(buf);
	/* the same device read in a pod's namespace (exclusive mode): every series says which */
	d.netns = "cni-trainer0";
	buf = rdma_text(&d, 1);
	assert_non_null(
		strstr(buf, "rdmak_rdma_counter_info{device=\"mlx5_0\",port=\"1\",counter_id=\"3\","
			    "mode=\"auto\","));
	assert_non_null(strstr(buf, ",netns=\"cni-trainer0\"} 1\n"));
	assert_non_null(
		strstr(buf, "rdmak_rdma_counter_qps{device=\"mlx5_0\",port=\"1\",counter_id=\"3\","
			    "netns=\"cni-trainer0\"} 2\n"));
	assert_non_null(strstr(
		buf, "rdmak_rdma_counter_qp_info{device=\"mlx5_0\",port=\"1\",counter_id=\"3\","
		     "lqpn=\"178\",netns=\"cni-trainer0\"} 1\n"));
	assert_non_null(
		strstr(buf, "rdmak_rdma_counter_out_of_sequence_total{device=\"mlx5_0\",port=\"1\","
			    "counter_id=\"3\",netns=\"cni-trainer0\"} 2\n"));
	assert_null(strstr(buf, "counter_id=\"3\"} "));
	free(buf);
	nl_rdma_counters_free(d.v, d.n);
}

/* A per-process counter object gets its process's pod from <procfs>/<pid>/cgroup: the UID and
 * container ID as the kubelet's systemd cgroup driver names them. A process outside any pod,
 * or gone since the dump, gets no rdmak_rdma_counter_pod_info series, and the scrape goes on. */
static void test_rdma_owners(void **st)
{
	static const uint32_t qps[] = { 178 };
	static const struct nldev_hw hw[] = { { "rx_write_requests", 7 } };
	static const struct nldev_counter c[] = {
		{ .port = 1,
		  .id = 3,
		  .mode = RDMA_COUNTER_MODE_AUTO,
		  .qp_type = 2,
		  .pid = 4242,
		  .qpns = qps,
		  .n_qpns = 1,
		  .hw = hw,
		  .n_hw = 1 },
		{ .port = 1,
		  .id = 5,
		  .mode = RDMA_COUNTER_MODE_AUTO,
		  .qp_type = 2,
		  .pid = 77,
		  .qpns = qps,
		  .n_qpns = 1,
		  .hw = hw,
		  .n_hw = 1 },
		{ .port = 1,
		  .id = 6,
		  .mode = RDMA_COUNTER_MODE_AUTO,
		  .qp_type = 2,
		  .pid = 99,
		  .qpns = qps,
		  .n_qpns = 1,
		  .hw = hw,
		  .n_hw = 1 },
	};
	char dir[] = "/tmp/rdmak-proc.XXXXXX", path[96];
	struct exp_rdma_dev *d = calloc(1, sizeof(*d));
	struct exporter e;
	struct nl_msg *m = nldev_counter_dump(1, NLM_F_MULTI, 0, "mlx5_0", c, 3);
	struct nlmsghdr *h = nlmsg_hdr(m);
	char *buf;
	FILE *f;

	assert_non_null(d);
	snprintf(d->name, sizeof(d->name), "mlx5_0");
	memset(&e, 0, sizeof(e));
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/4242", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/4242/cgroup", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("0::/kubepods.slice/kubepods-besteffort.slice/"
	      "kubepods-besteffort-pod5759a1ae_36ca_48a8_b20a_b0b5c8a90fb8.slice/"
	      "cri-containerd-"
	      "2cf7b0992492cfc7b4c473e2d022758ee09be9dd3761b3ee2d87598eec9a045a.scope\n",
	      f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/77", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/77/cgroup", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("0::/system.slice/rdma-ndd.service\n", f);
	fclose(f);
	/* pid 99: no folder (the process has exited) */
	assert_int_equal(nl_rdma_counters_parse(h, h->nlmsg_len, &d->v, &d->n), 0);
	nlmsg_free(m);
	/* no procfs: nothing looked up */
	assert_int_equal(exporter_rdma_owners(&e, d, 1), 0);
	assert_null(d->owner);
	assert_int_equal(exporter_rdma_procfs(&e, "/nonexistent/proc"), -ENOENT);
	assert_int_equal(exporter_rdma_procfs(&e, dir), 0);
	assert_int_equal(exporter_rdma_owners(&e, d, 1), 0);
	buf = rdma_text(d, 1);
	assert_non_null(strstr(
		buf, "# TYPE rdmak_rdma_counter_pod_info gauge\n"
		     "rdmak_rdma_counter_pod_info{device=\"mlx5_0\",port=\"1\",counter_id=\"3\","
		     "pid=\"4242\","
		     "pod_uid=\"5759a1ae-36ca-48a8-b20a-b0b5c8a90fb8\","
		     "container_id=\"2cf7b0992492cfc7b4c473e2d022758ee"
		     "09be9dd3761b3ee2d87598eec9a045a\"} 1\n# HELP rdmak_rdma_counter_qps "));
	assert_null(strstr(buf, "counter_id=\"5\",pid"));
	assert_null(strstr(buf, "counter_id=\"6\",pid"));
	free(buf);
	exporter_rdma_devs_free(d, 1);
	close(e.rdma_procfs_fd);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

/* The writer: a buffer that grows from its first size, label values escaped as both formats want,
 * 64-bit values exact, OpenMetrics' counter family named without _total. */
static void test_text(void **st)
{
	const char *l[] = { "device", "mlx5_0", "pod", "a\"b\\c\nd", NULL };
	const char *none[] = { NULL };
	const char *want =
		"# HELP x help\n# TYPE x counter\n"
		"# HELP x_total help\n# TYPE x_total counter\n"
		"# HELP g_total h\n# TYPE g_total gauge\n"
		"x_total{device=\"mlx5_0\",pod=\"a\\\"b\\\\c\\nd\"} 18446744073709551615\n"
		"x_total 0\n"
		"y{device=\"mlx5_0\",pod=\"a\\\"b\\\\c\\nd\"} 0\n"
		"y{device=\"mlx5_0\",pod=\"a\\\"b\\\\c\\nd\"} 999999937\n";
	struct exporter_buf b, lab;
	size_t lines = 0;

	assert_int_equal(exporter_buf_init(&b, 0), 0);
	assert_int_equal(exporter_buf_init(&lab, 0), 0);
	exporter_out_family(&b, EXPORTER_OPENMETRICS, "x_total", EXP_COUNTER, "help");
	exporter_out_family(&b, EXPORTER_TEXT, "x_total", EXP_COUNTER, "help");
	exporter_out_family(&b, EXPORTER_OPENMETRICS, "g_total", EXP_GAUGE, "h");
	exporter_out_sample(&b, "x_total", l, UINT64_MAX);
	exporter_out_sample(&b, "x_total", none, 0);
	exporter_buf_labels(&lab, l);
	/* past the first 4096 bytes: the buffer grows, nothing is lost */
	for (uint64_t v = 0; b.len < 3 * 4096; v += 999999937, lines++)
		exporter_out_sample_pre(&b, "y", 1, lab.p, lab.len, v);
	exporter_buf_putc(&b, '\0');
	assert_false(b.oom);
	assert_int_equal(strncmp(b.p, want, strlen(want)), 0);
	{
		char last[96];

		snprintf(last, sizeof(last), "} %" PRIu64 "\n", (uint64_t)(lines - 1) * 999999937);
		size_t n = 0;

		assert_int_equal(strcmp(b.p + b.len - 1 - strlen(last), last), 0);
		for (const char *p = b.p; (p = strstr(p, "\ny{")); p++)
			n++;
		assert_int_equal(n, lines);
	}
	exporter_buf_free(&lab);
	exporter_buf_free(&b);
}

/* A counter file's text is read as str_to_u64 read it (strtoull, base 10, nothing after), and
 * "N/A (no PMA)" is no value and no error. */
static void test_counter_parse(void **st)
{
	static const char *const in[] = {
		"0",
		"42",
		"+7",
		"007",
		"18446744073709551615",
		"18446744073709551616",
		"-1",
		" 1",
		"1 ",
		"1x",
		"0x10",
		"",
		"+",
		"+-1",
		"99999999999999999999999",
		"4294967296",
	};
	uint64_t v = 0;

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		unsigned long long w = 0;
		int want = str_to_u64(in[i], 10, &w);
		int r = exporter_counter_parse(in[i], &v);

		assert_int_equal(r == 1, want == 0);
		if (r == 1)
			assert_true(v == w);
		else
			assert_true(r < 0);
	}
	assert_int_equal(exporter_counter_parse("N/A (no PMA)", &v), 0);
}

/* The reader: through io_uring (where this kernel offers it) and one file at a time, the same
 * answers for every kind of entry a counter folder could hold, over two batches that reuse the
 * ring's slots. */
static void test_reader(void **st)
{
	static const char *const names[] = { "num",  "na",  "long",    "fifo",
					     "link", "dir", "missing", "empty" };
	enum { N = sizeof(names) / sizeof(names[0]) };
	char dir[] = "/tmp/rdmak-reader.XXXXXX", path[PATH_MAX], big[200];
	struct exporter_file want[N];
	struct exporter_reader *one, *ring;
	int dfd, status = 0;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/num", dir);
	assert_non_null(f = fopen(path, "w"));
	fputs("5000000007919 \n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/na", dir);
	assert_non_null(f = fopen(path, "w"));
	fputs("N/A (no PMA)\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/long", dir);
	assert_non_null(f = fopen(path, "w"));
	memset(big, '7', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	fputs(big, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/empty", dir);
	assert_non_null(f = fopen(path, "w"));
	fclose(f);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/link", dir);
	assert_int_equal(symlink("num", path), 0);
	snprintf(path, sizeof(path), "%s/dir", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_true((dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0);

	assert_non_null(one = exporter_reader_new(false, &status));
	assert_int_equal(status, 0);
	assert_non_null(ring = exporter_reader_new(true, &status));
	if (status < 0)
		print_message("io_uring refused here (%s): both readers read one file at a time\n",
			      strerror(-status));
	for (int pass = 0; pass < 2; pass++) {
		struct exporter_file *a = exporter_reader_files(one),
				     *b = exporter_reader_files(ring);

		/* a whole batch: the names over and over, and a folder that is no descriptor */
		for (size_t i = 0; i < EXPORTER_READER_BATCH; i++) {
			a[i].dirfd = b[i].dirfd = i == 5 ? -1 : dfd;
			a[i].name = b[i].name = names[i % N];
		}
		exporter_reader_read(one, EXPORTER_READER_BATCH);
		exporter_reader_read(ring, EXPORTER_READER_BATCH);
		for (size_t i = 0; i < EXPORTER_READER_BATCH; i++) {
			assert_int_equal(a[i].n, b[i].n);
			if (a[i].n >= 0)
				assert_string_equal(a[i].buf, b[i].buf);
			if (i < N)
				want[i] = a[i];
		}
	}
	assert_int_equal(want[0].n, 13);
	assert_string_equal(want[0].buf, "5000000007919"); /* the trailing space and newline cut */
	assert_string_equal(want[1].buf, "N/A (no PMA)");
	assert_int_equal(want[2].n, sizeof(want[2].buf) - 1); /* at most one buffer, once */
	assert_int_equal(want[3].n, 0);	     /* a FIFO: opened without blocking, nothing */
	assert_int_equal(want[4].n, -ELOOP); /* a link is not followed */
	assert_int_equal(want[5].n, -EBADF); /* no folder */
	assert_int_equal(want[6].n, -ENOENT);
	assert_int_equal(want[7].n, 0);
	{
		struct exporter_file *a = exporter_reader_files(one);

		a[0].dirfd = dfd;
		a[0].name = "dir";
		exporter_reader_read(one, 1);
		assert_int_equal(a[0].n, -EISDIR);
	}
	exporter_reader_free(one);
	exporter_reader_free(ring);
	close(dfd);
	for (size_t i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		i == 5 ? rmdir(path) : unlink(path);
	}
	rmdir(dir);
}

/* Threads of this process named iou-wrk-*: io_uring's workers, made when the kernel hands a
 * request to one instead of doing it inline. */
static int io_workers(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, "iou-wrk", 7))
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

/* sysfs through the ring: kernfs can neither open from the dentry cache alone nor read without
 * blocking, so io_uring would hand every file to a worker thread (twice the CPU of plain system
 * calls). The reader reads them on its own thread, one at a time after the first batch, with
 * the same answers as the plain reader. */
static void test_reader_sysfs(void **st)
{
	static const char *const names[] = { "mtu",	 "type",    "flags",
					     "addr_len", "ifindex", "tx_queue_len" };
	enum { N = sizeof(names) / sizeof(names[0]) };
	struct exporter_reader *one, *ring;
	struct exporter_reader_stats s, first = { 0 };
	int dfd, status = 0;

	dfd = open("/sys/class/net/lo", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		print_message("# no /sys/class/net/lo here\n");
		skip();
	}
	assert_non_null(one = exporter_reader_new(false, NULL));
	assert_non_null(ring = exporter_reader_new(true, &status));
	if (status <= 0) {
		exporter_reader_free(one);
		exporter_reader_free(ring);
		close(dfd);
		print_message("# io_uring refused here (%s)\n", strerror(-status));
		skip();
	}
	for (int pass = 0; pass < 2; pass++) {
		struct exporter_file *a = exporter_reader_files(one),
				     *b = exporter_reader_files(ring);

		for (size_t i = 0; i < EXPORTER_READER_BATCH; i++) {
			a[i].dirfd = b[i].dirfd = dfd;
			a[i].name = b[i].name = names[i % N];
		}
		exporter_reader_read(one, EXPORTER_READER_BATCH);
		exporter_reader_read(ring, EXPORTER_READER_BATCH);
		for (size_t i = 0; i < EXPORTER_READER_BATCH; i++) {
			assert_true(a[i].n > 0);
			assert_int_equal(a[i].n, b[i].n);
			assert_string_equal(a[i].buf, b[i].buf);
		}
		if (pass == 0)
			exporter_reader_stats(ring, &first);
	}
	assert_int_equal(io_workers(), 0);
	exporter_reader_stats(ring, &s);
	assert_int_equal(s.ring + s.plain, 2 * EXPORTER_READER_BATCH);
	print_message("# sysfs: %zu of %zu files of the first batch through the ring\n", first.ring,
		      first.ring + first.plain);
	/* a first batch mostly read one at a time: the second all so, no ring tried */
	if (2 * first.plain > EXPORTER_READER_BATCH)
		assert_int_equal(s.plain - first.plain, EXPORTER_READER_BATCH);
	exporter_reader_free(one);
	exporter_reader_free(ring);
	close(dfd);
}

/* ---- a stand-in RDMA kernel ------------------------------------------------------------------
 * While standin.on (unit/nl_standin.h), src/nl's sockets connect nowhere and each request is
 * answered from fake.dev, as nldev.c would (an index it does not know: EINVAL); otherwise they
 * go to the kernel. */
struct fake_dev {
	uint32_t index;
	const char *name;
	uint64_t node_guid;
	uint64_t value; /* its port 1's local_ack_timeout_err */
};
static struct {
	struct fake_dev dev[4];
	unsigned n_dev;
	unsigned dumps, stats, counters; /* the requests asked, by kind */
} fake;

#include "unit/nl_standin.h"

static const struct fake_dev *fake_find(struct nlattr **tb)
{
	for (unsigned i = 0; tb[RDMA_NLDEV_ATTR_DEV_INDEX] && i < fake.n_dev; i++)
		if (fake.dev[i].index == nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]))
			return &fake.dev[i];
	return NULL;
}

static void standin_request(const struct nlmsghdr *h)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX + 1];
	const struct fake_dev *d;
	bool dump = h->nlmsg_flags & NLM_F_DUMP;

	assert_int_equal(nlmsg_parse((struct nlmsghdr *)h, 0, tb, RDMA_NLDEV_ATTR_MAX, NULL), 0);
	d = fake_find(tb);
	switch (RDMA_NL_GET_OP(h->nlmsg_type)) {
	case RDMA_NLDEV_CMD_GET:
		assert_true(dump);
		fake.dumps++;
		for (unsigned i = 0; i < fake.n_dev; i++)
			standin_put(nldev_dev(0, NLM_F_MULTI, fake.dev[i].index, fake.dev[i].name,
					      1, fake.dev[i].node_guid));
		standin_put(standin_done(0, 0));
		break;
	case RDMA_NLDEV_CMD_STAT_GET:
		if (dump) {
			fake.counters++;
			/* no counter objects, or an unknown index */
			standin_put(d ? standin_done(0, 0) : standin_error(0, -EINVAL));
			break;
		}
		fake.stats++;
		if (d && nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]) == 1) {
			const struct nldev_hw hw[] = { { "local_ack_timeout_err", d->value } };

			standin_put(nldev_port_stat(0, d->index, d->name, 1, hw, 1, false));
			standin_put(standin_error(NLM_F_CAPPED, 0));
		} else {
			standin_put(standin_error(0, -EINVAL));
		}
		break;
	default:
		fail_msg("the stand-in kernel was asked command %d", RDMA_NL_GET_OP(h->nlmsg_type));
	}
}

static char *scrape_text(struct exporter *e)
{
	char *buf = NULL;
	size_t len = 0;

	assert_int_equal(exporter_scrape(e, EXPORTER_TEXT, &buf, &len), 0);
	return buf;
}

#define ACK_MLX5_0 "rdmak_port_hw_local_ack_timeout_err_total{device=\"mlx5_0\",port=\"1\"} "

/* The host's device list is read with the topology, not per scrape: each scrape asks one
 * STAT_GET per port and one counter dump per device over a socket kept between scrapes. A
 * device registered again under another index (its old one answers EINVAL) has the list
 * asked again within that scrape, once, and its own numbers served, never another's or none;
 * the next scrape loads the topology again, which reads the list. */
static void test_rdma_kernel_list(void **st)
{
	const char *top = getenv("TOP");
	char sys[4096], *buf;
	struct hw_ctx *ctx = NULL;
	struct exporter *e = NULL;
	struct hw_error err;

	snprintf(sys, sizeof(sys), "%s/examples/nodes/b2-cx6dx-roce/sys", top ? top : ".");
	memset(&fake, 0, sizeof(fake));
	standin_reset();
	fake.dev[0] = (struct fake_dev){ 3, "mlx5_0", 0x0c42a103001dd12aull, 1111 };
	fake.dev[1] = (struct fake_dev){ 4, "mlx5_1", 0x0c42a103001dd12bull, 2222 };
	fake.n_dev = 2;
	standin.on = true;
	assert_int_equal(hw_ctx_new(sys, NULL, &ctx), 0);
	assert_int_equal(exporter_new(ctx, 2, &e, &err), 0);
	assert_int_equal(exporter_rdma_enable(e), 0);
	assert_int_equal(fake.dumps, 1); /* the topology's list */
	for (int i = 0; i < 3; i++) {
		fake.stats = fake.counters = 0;
		buf = scrape_text(e);
		assert_non_null(strstr(buf, ACK_MLX5_0 "1111\n"));
		assert_non_null(strstr(buf, "rdmak_exporter_hw_counters_netlink_ports 2\n"));
		assert_non_null(strstr(buf, "rdmak_exporter_rdma_netlink_errors_total 0\n"));
		free(buf);
		assert_int_equal(fake.dumps, 1);
		assert_int_equal(fake.stats, 2);
		assert_int_equal(fake.counters, 2);
	}
	assert_int_equal(standin.opens, 1); /* the socket of exporter_rdma_enable, kept */
	assert_int_equal(exporter_loads(e), 1);

	/* mlx5_0 unbound and bound again: index 7 now, 3 unknown */
	fake.dev[0].index = 7;
	fake.dev[0].value = 5555;
	fake.stats = fake.counters = 0;
	buf = scrape_text(e);
	assert_non_null(strstr(buf, ACK_MLX5_0 "5555\n"));
	assert_non_null(strstr(buf, "rdmak_exporter_hw_counters_netlink_ports 2\n"));
	free(buf);
	assert_int_equal(fake.dumps, 2); /* once in the scrape */
	assert_int_equal(fake.stats, 3); /* mlx5_0 twice */
	assert_int_equal(exporter_loads(e), 1);
	/* the next scrape loads the topology (its list read again) and asks no more */
	buf = scrape_text(e);
	free(buf);
	assert_int_equal(exporter_loads(e), 2);
	assert_int_equal(fake.dumps, 3);
	fake.stats = fake.counters = 0;
	buf = scrape_text(e);
	assert_non_null(strstr(buf, ACK_MLX5_0 "5555\n"));
	free(buf);
	assert_int_equal(fake.dumps, 3);
	assert_int_equal(fake.stats, 2);
	assert_int_equal(fake.counters, 2);
	assert_int_equal(exporter_loads(e), 2);

	/* an index another device answers: not taken for mlx5_0's */
	fake.dev[0].index = 9;
	fake.dev[1].index = 7;
	fake.dev[1].value = 3333;
	fake.stats = 0;
	buf = scrape_text(e);
	assert_non_null(strstr(buf, ACK_MLX5_0 "5555\n"));
	assert_non_null(strstr(buf, "rdmak_port_hw_local_ack_timeout_err_total{device=\"mlx5_1\","
				    "port=\"1\"} 3333\n"));
	free(buf);
	assert_int_equal(fake.dumps, 4);
	exporter_free(e);
	hw_ctx_free(ctx);
	standin_reset();
	memset(&fake, 0, sizeof(fake));
}

/* Where the kernel has no RDMA netlink, enabling it says so and a scrape has none of its
 * series; the scrape is not failed. */
static void test_rdma_absent(void **st)
{
	char dir[] = "/tmp/rdmak-exp.XXXXXX";
	char sys[64];
	struct hw_ctx *ctx = NULL;
	struct exporter *e = NULL;
	struct hw_error err;
	char *buf = NULL;
	size_t len = 0;
	int r;

	assert_non_null(mkdtemp(dir));
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	assert_int_equal(mkdir(sys, 0755), 0);
	assert_int_equal(hw_ctx_new(sys, NULL, &ctx), 0);
	assert_int_equal(exporter_new(ctx, 1, &e, &err), 0);
	r = exporter_rdma_enable(e);
	if (r == 0) {
		print_message("# this kernel has RDMA netlink: the absent case is not seen here\n");
	} else {
		assert_int_equal(r, -EPROTONOSUPPORT);
		assert_int_equal(exporter_scrape(e, EXPORTER_TEXT, &buf, &len), 0);
		assert_null(strstr(buf, "rdmak_rdma_counter"));
		assert_null(strstr(buf, "rdmak_exporter_rdma_netlink_errors_total"));
		assert_non_null(strstr(buf, "rdmak_exporter_scrape_duration_seconds"));
		free(buf);
	}
	exporter_free(e);
	hw_ctx_free(ctx);
	rmdir(sys);
	rmdir(dir);
	if (r == 0)
		skip();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accept),	      cmocka_unit_test(test_busy),
		cmocka_unit_test(test_rdma_counters), cmocka_unit_test(test_rdma_owners),
		cmocka_unit_test(test_rdma_absent),   cmocka_unit_test(test_text),
		cmocka_unit_test(test_counter_parse), cmocka_unit_test(test_reader),
		cmocka_unit_test(test_reader_sysfs),  cmocka_unit_test(test_rdma_kernel_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
