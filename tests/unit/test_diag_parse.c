/* SPDX-License-Identifier: Apache-2.0 */
/* Parsers of `rdmak doctor`: the exact texts the kernel, the container runtimes and NCCL
 * produce (real-outputs.md G10, proc(5), cgroup v1/v2 docs, NCCL env.rst), and malformed
 * input that must be refused, not misread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "diag/parse.h"

#define S(x) (x), strlen(x)

/* /proc/self/limits of a container under containerd with systemd's default (8 MiB). */
static const char limits_8m[] =
	"Limit                     Soft Limit           Hard Limit           Units     \n"
	"Max cpu time              unlimited            unlimited            seconds   \n"
	"Max file size             unlimited            unlimited            bytes     \n"
	"Max data size             unlimited            unlimited            bytes     \n"
	"Max stack size            8388608              unlimited            bytes     \n"
	"Max core file size        unlimited            unlimited            bytes     \n"
	"Max resident set          unlimited            unlimited            bytes     \n"
	"Max processes             unlimited            unlimited            processes \n"
	"Max open files            1048576              1048576              files     \n"
	"Max locked memory         8388608              8388608              bytes     \n"
	"Max address space         unlimited            unlimited            bytes     \n"
	"Max file locks            unlimited            unlimited            locks     \n"
	"Max pending signals       2062710              2062710              signals   \n"
	"Max msgqueue size         819200               819200               bytes     \n"
	"Max nice priority         0                    0                    \n"
	"Max realtime priority     0                    0                    \n"
	"Max realtime timeout      unlimited            unlimited            us        \n";

static void test_limits(void **st)
{
	uint64_t s, h;

	assert_int_equal(diag_limits_parse(S(limits_8m), "Max locked memory", &s, &h), 1);
	assert_int_equal(s, 8388608);
	assert_int_equal(h, 8388608);
	assert_int_equal(diag_limits_parse(S(limits_8m), "Max cpu time", &s, &h), 1);
	assert_true(s == DIAG_UNLIMITED && h == DIAG_UNLIMITED);
	assert_int_equal(diag_limits_parse(S(limits_8m), "Max stack size", &s, &h), 1);
	assert_true(s == 8388608 && h == DIAG_UNLIMITED);
	/* "Max locked" alone is not a row name */
	assert_int_equal(diag_limits_parse(S(limits_8m), "Max locked", &s, &h), 0);
	assert_int_equal(diag_limits_parse(S("Max locked memory         unlimited   "
					     "         unlimited            bytes\n"),
					   "Max locked memory", &s, &h),
			 1);
	assert_true(s == DIAG_UNLIMITED);
	/* the kernel's old 64 KiB default (above libibverbs' 32 KiB warning line) */
	assert_int_equal(diag_limits_parse(S("Max locked memory 65536 65536 bytes"),
					   "Max locked memory", &s, &h),
			 1);
	assert_int_equal(s, 65536);
	assert_int_equal(diag_limits_parse(S("Max locked memory  lots  8388608  bytes\n"),
					   "Max locked memory", &s, &h),
			 0);
	assert_true(diag_limits_parse(S("Max locked memory  8388608\n"), "Max locked memory", &s,
				      &h) < 0);
	assert_true(diag_limits_parse(S("Max locked memory  -1  -1 bytes\n"), "Max locked memory",
				      &s, &h) < 0);
	assert_int_equal(diag_limits_parse(S(""), "Max locked memory", &s, &h), 0);
	/* embedded NUL: cut there, no over-read */
	assert_int_equal(diag_limits_parse("Max locked memory 1\0 2 bytes", 29, "Max locked memory",
					   &s, &h) < 0,
			 1);
}

static void test_status_caps(void **st)
{
	/* G10: uid 1000 with IPC_LOCK added: in the bounding set, not effective */
	static const char nonroot[] =
		"Name:\tbash\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t1\nPid:\t1\nPPid:\t0\n"
		"Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nGroups:\t1000 \n"
		"CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n"
		"CapBnd:\t00000000a80465fb\nCapAmb:\t0000000000000000\nNoNewPrivs:\t0\n";
	static const char root[] =
		"Uid:\t0\t0\t0\t0\nCapInh:\t0000000000000000\nCapPrm:\t00000000a80465fb\n"
		"CapEff:\t00000000a80465fb\nCapBnd:\t00000000a80465fb\nCapAmb:\t0000000000000000\n";
	struct diag_proc_status ps;

	assert_int_equal(diag_proc_status_parse(S(nonroot), &ps), 1);
	assert_true(ps.has_uid && ps.has_caps);
	assert_int_equal(ps.uid[1], 1000);
	assert_int_equal(ps.cap_eff, 0);
	assert_true(ps.cap_bnd & (1ull << CAP_IPC_LOCK_BIT));
	assert_int_equal(ps.cap_bnd, 0xa80465fbull);
	assert_int_equal(diag_proc_status_parse(S(root), &ps), 1);
	assert_int_equal(ps.uid[0], 0);
	assert_true(ps.cap_eff & (1ull << CAP_IPC_LOCK_BIT));
	/* Docker's default set without IPC_LOCK: a80425fb */
	assert_int_equal(
		diag_proc_status_parse(S("Uid:\t0\t0\t0\t0\nCapEff:\t00000000a80425fb\n"), &ps), 1);
	assert_false(ps.cap_eff & (1ull << CAP_IPC_LOCK_BIT));
	/* malformed values are refused */
	assert_true(diag_proc_status_parse(S("CapEff:\tzz\n"), &ps) < 0);
	assert_true(diag_proc_status_parse(S("CapEff:\t00000000000000000\n"), &ps) <
		    0); /* 17 digits */
	assert_true(diag_proc_status_parse(S("Uid:\t0\t0\n"), &ps) < 0);
	assert_true(diag_proc_status_parse(S("Uid:\t0\t0\t0\t99999999999\n"), &ps) < 0);
	assert_int_equal(diag_proc_status_parse(S("Name:\tx\n"), &ps), 0);
}

/* A Kubernetes container's mountinfo (containerd, cgroup v2), /dev/shm at Docker's 64 MiB. */
static const char mountinfo[] =
	"1363 1283 0:324 / / rw,relatime master:488 - overlay "
	"overlay rw,lowerdir=/var/lib/containerd/l1,upperdir=/u,"
	"workdir=/w\n"
	"1364 1363 0:327 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
	"1365 1363 0:328 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755,inode64\n"
	"1366 1365 0:329 / /dev/pts rw,nosuid,noexec,"
	"relatime - devpts devpts rw,gid=5,mode=620,"
	"ptmxmode=666\n"
	"1367 1365 0:323 / /dev/mqueue rw,nosuid,nodev,noexec,relatime - mqueue mqueue rw\n"
	"1368 1363 0:330 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro\n"
	"1369 1368 0:27 / /sys/fs/cgroup ro,nosuid,nodev,noexec,"
	"relatime - cgroup2 cgroup rw,nsdelegate,"
	"memory_recursiveprot\n"
	"1370 1365 0:322 / /dev/shm rw,nosuid,nodev,"
	"noexec,relatime - tmpfs shm rw,size=65536k,"
	"inode64\n"
	"1371 1363 259:2 /var/lib/kubelet/pods/x/etc-hosts "
	"/etc/hosts rw,relatime - ext4 /dev/nvme0n1p2 rw\n"
	"1372 1363 259:2 /data/my\\040dir /mnt/my\\040dir rw,relatime - ext4 /dev/nvme0n1p2 rw\n";

static void test_mountinfo(void **st)
{
	struct diag_mount_entry m;
	uint64_t size;

	assert_int_equal(diag_mountinfo_find(S(mountinfo), "/dev/shm", &m), 1);
	assert_string_equal(m.fstype, "tmpfs");
	assert_string_equal(m.source, "shm");
	assert_int_equal(diag_mount_option_size(m.options, &size), 1);
	assert_int_equal(size, 64ull << 20);
	assert_int_equal(diag_mountinfo_find(S(mountinfo), "/mnt/my dir", &m), 1);
	assert_string_equal(m.mountpoint, "/mnt/my dir");
	assert_int_equal(diag_mountinfo_find(S(mountinfo), "/dev/hugepages", &m), 0);
	/* an emptyDir medium: Memory over-mounted later wins */
	{
		static const char two[] =
			"1370 1365 0:322 / /dev/shm rw - tmpfs shm rw,size=65536k\n"
			"1400 1370 0:400 / /dev/shm rw,relatime "
			"- tmpfs tmpfs rw,size=1048576k,inode64\n";
		assert_int_equal(diag_mountinfo_find(S(two), "/dev/shm", &m), 1);
		assert_int_equal(diag_mount_option_size(m.options, &size), 1);
		assert_int_equal(size, 1ull << 30);
	}
	/* no separator: malformed */
	assert_true(diag_mountinfo_find(S("1 2 0:1 / /dev/shm rw tmpfs shm rw\n"), "/dev/shm", &m) <
		    0);
	/* /proc/mounts format */
	assert_int_equal(diag_mounts_find(S("overlay / overlay rw 0 0\nshm /dev/shm tmpfs rw,"
					    "nosuid,nodev,noexec,relatime,size=65536k 0 0\n"),
					  "/dev/shm", &m),
			 1);
	assert_int_equal(diag_mount_option_size(m.options, &size), 1);
	assert_int_equal(size, 64ull << 20);
}

static void test_mount_size(void **st)
{
	uint64_t b;

	assert_int_equal(diag_mount_option_size("rw,size=1g", &b), 1);
	assert_int_equal(b, 1ull << 30);
	assert_int_equal(diag_mount_option_size("rw,size=512M,mode=1777", &b), 1);
	assert_int_equal(b, 512ull << 20);
	assert_int_equal(diag_mount_option_size("rw,size=4096", &b), 1);
	assert_int_equal(b, 4096);
	assert_int_equal(diag_mount_option_size("rw,size=50%", &b),
			 0); /* relative: unknown in bytes */
	assert_int_equal(diag_mount_option_size("rw,nosuid", &b), 0);
	assert_int_equal(diag_mount_option_size("rw,nr_inodes=size=1", &b), 0);
	assert_true(diag_mount_option_size("size=12q", &b) < 0);
	assert_true(diag_mount_option_size("size=k", &b) < 0);
	assert_true(diag_mount_option_size("size=99999999999999999999t", &b) < 0);
}

static void test_cgroup(void **st)
{
	uint64_t v;
	char path[256];

	assert_int_equal(diag_cgroup_value_parse(S("max\n"), &v), 0);
	assert_true(v == DIAG_UNLIMITED);
	assert_int_equal(diag_cgroup_value_parse(S("68719476736\n"), &v), 0);
	assert_int_equal(v, 64ull << 30);
	/* cgroup v1 "no limit" on 4 KiB pages and on 64 KiB pages (arm64) */
	assert_int_equal(diag_cgroup_value_parse(S("9223372036854771712\n"), &v), 0);
	assert_true(v == DIAG_UNLIMITED);
	assert_int_equal(diag_cgroup_value_parse(S("9223372036854710272\n"), &v), 0);
	assert_true(v == DIAG_UNLIMITED);
	assert_true(diag_cgroup_value_parse(S("-1\n"), &v) < 0);
	assert_true(diag_cgroup_value_parse(S("12 MB\n"), &v) < 0);
	assert_true(diag_cgroup_value_parse(S(""), &v) < 0);

	assert_int_equal(diag_cgroup_path_parse(S("0::/\n"), true, path, sizeof(path)), 1);
	assert_string_equal(path, "/");
	assert_int_equal(
		diag_cgroup_path_parse(
			S("0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope\n"), true,
			path, sizeof(path)),
		1);
	assert_string_equal(path, "/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope");
	{
		static const char v1[] = "12:pids:/kubepods/burstable/pod1/abc\n"
					 "11:cpu,cpuacct:/kubepods/burstable/pod1/abc\n"
					 "4:memory:/kubepods/burstable/pod1/abc\n"
					 "1:name=systemd:/kubepods/burstable/pod1/abc\n"
					 "0::/\n";
		assert_int_equal(diag_cgroup_path_parse(S(v1), false, path, sizeof(path)), 1);
		assert_string_equal(path, "/kubepods/burstable/pod1/abc");
		assert_int_equal(
			diag_cgroup_path_parse(S("3:memoryx:/a\n"), false, path, sizeof(path)), 0);
	}
	assert_int_equal(diag_cgroup_path_parse(S("4:memory:/a\n"), true, path, sizeof(path)), 0);
	assert_true(diag_cgroup_path_parse(S("0::relative\n"), true, path, sizeof(path)) < 0);
}

static void test_devices_list(void **st)
{
	/* a container given uverbs0 and rdma_cm by the device plugin (runc's default rules
	 * first) */
	static const char plugin[] =
		"c *:* m\nb *:* m\nc 1:3 rwm\nc 1:5 rwm\nc 1:7 rwm\nc 5:0 rwm\nc 5:2 rwm\n"
		"c 1:8 rwm\nc 1:9 rwm\nc 136:* rwm\nc 10:200 rwm\nc 231:192 rw\nc 10:121 rw\n";

	assert_int_equal(diag_devices_list_allows(S(plugin), 231, 192), 1);
	assert_int_equal(diag_devices_list_allows(S(plugin), 10, 121), 1);
	assert_int_equal(diag_devices_list_allows(S(plugin), 231, 193),
			 0); /* "c *:* m": mknod only */
	assert_int_equal(diag_devices_list_allows(S("a *:* rwm\n"), 231, 193), 1); /* privileged */
	assert_int_equal(diag_devices_list_allows(S("c 231:* rw\n"), 231, 200), 1);
	assert_int_equal(diag_devices_list_allows(S("c 231:192 r\n"), 231, 192), 0);
	assert_int_equal(diag_devices_list_allows(S(""), 231, 192), 0);
	assert_true(diag_devices_list_allows(S("c 231:192 rwx\n"), 231, 192) < 0);
	assert_true(diag_devices_list_allows(S("x 231:192 rw\n"), 231, 192) < 0);
	assert_true(diag_devices_list_allows(S("c 231 rw\n"), 231, 192) < 0);
}

static void test_nccl_list(void **st)
{
	struct diag_nccl_list l;

	/* the prefix pitfall: mlx5_1 selects mlx5_10 too, unless '=' */
	assert_int_equal(diag_nccl_list_parse("mlx5_1", &l), 0);
	assert_false(l.exclude || l.exact);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.e[0].port, -1);
	assert_true(diag_nccl_list_selects(&l, "mlx5_1", 1));
	assert_true(diag_nccl_list_selects(&l, "mlx5_10", 1));
	assert_false(diag_nccl_list_selects(&l, "mlx5_2", 1));
	assert_int_equal(diag_nccl_list_parse("=mlx5_1", &l), 0);
	assert_true(l.exact);
	assert_true(diag_nccl_list_selects(&l, "mlx5_1", 1));
	assert_false(diag_nccl_list_selects(&l, "mlx5_10", 1));

	/* ports: mlx5_0:1,mlx5_1 */
	assert_int_equal(diag_nccl_list_parse("mlx5_0:1,mlx5_1", &l), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.e[0].name, "mlx5_0");
	assert_int_equal(l.e[0].port, 1);
	assert_int_equal(l.e[1].port, -1);
	assert_true(diag_nccl_list_selects(&l, "mlx5_0", 1));
	assert_false(diag_nccl_list_selects(&l, "mlx5_0", 2));
	assert_true(diag_nccl_list_selects(&l, "mlx5_1", 2));

	/* exclusion, and exact exclusion of the LAG device */
	assert_int_equal(diag_nccl_list_parse("^mlx5_0", &l), 0);
	assert_true(l.exclude);
	assert_false(diag_nccl_list_selects(&l, "mlx5_0", 1));
	assert_true(diag_nccl_list_selects(&l, "mlx5_1", 1));
	assert_int_equal(diag_nccl_list_parse("^=mlx5_bond_0", &l), 0);
	assert_true(l.exclude && l.exact);
	assert_false(diag_nccl_list_selects(&l, "mlx5_bond_0", 1));
	assert_true(diag_nccl_list_selects(&l, "mlx5_bond_01", 1));
	/* newer NCCL: hca:port:rail:plane */
	assert_int_equal(diag_nccl_list_parse("=mlx5_0:1:0:1", &l), 0);
	assert_int_equal(l.e[0].port, 1);
	/* "^" alone keeps everything, an empty include list selects nothing */
	assert_int_equal(diag_nccl_list_parse("^", &l), 0);
	assert_true(diag_nccl_list_selects(&l, "mlx5_0", 1));
	assert_int_equal(diag_nccl_list_parse("", &l), 0);
	assert_false(diag_nccl_list_selects(&l, "mlx5_0", 1));

	/* malformed */
	assert_true(diag_nccl_list_parse("mlx5_0,", &l) < 0);
	assert_true(diag_nccl_list_parse(",mlx5_0", &l) < 0);
	assert_true(diag_nccl_list_parse("mlx5_0:", &l) < 0);
	assert_true(diag_nccl_list_parse("mlx5_0:x", &l) < 0);
	assert_true(diag_nccl_list_parse("mlx5_0:999", &l) < 0);
	assert_true(diag_nccl_list_parse("=:1", &l) < 0);
	{
		char many[33 * 8 + 1] = "";

		for (int i = 0; i < 33; i++)
			strcat(many, i ? ",mlx5_0" : "mlx5_0");
		assert_true(diag_nccl_list_parse(many, &l) < 0);
	}
	/* NCCL_SOCKET_IFNAME forms */
	assert_int_equal(diag_nccl_list_parse("^lo,docker", &l), 0);
	assert_false(diag_nccl_list_selects(&l, "docker0", -1));
	assert_true(diag_nccl_list_selects(&l, "eth0", -1));
}

static void env_refused(const char *text, const char *want)
{
	struct diag_env e;
	char err[256] = "";

	assert_int_equal(diag_env_parse(text, strlen(text), false, &e, err, sizeof(err)), -EINVAL);
	if (!strstr(err, want))
		fail_msg("%s: got \"%s\", want \"%s\"", text, err, want);
}

static void test_env(void **st)
{
	struct diag_env e;
	char err[256];
	/* what `set -a; . FILE` takes in a file of simple assignments */
	static const char file[] =
		"# NCCL settings\nexport NCCL_IB_HCA=\"=mlx5_1\"\nNCCL_SOCKET_IFNAME=eth0\n\n"
		"  NCCL_DEBUG='INFO'   # a comment\nNCCL_SOCKET_IFNAME=net1\nEMPTY=\nNCCL_X=a#b\n"
		"Q='it has \"double\" and $dollar'\n";
	static const char environ_[] = "PATH=/usr/bin\0NCCL_IB_HCA=mlx5_0:1\0HOME=/root\0";
	static const char nul_text[] = "A=1\nB=2\0C=3\n";

	assert_int_equal(diag_env_parse(S(file), false, &e, err, sizeof(err)), 0);
	assert_string_equal(diag_env_get(&e, "NCCL_IB_HCA"), "=mlx5_1");
	assert_string_equal(diag_env_get(&e, "NCCL_DEBUG"), "INFO");
	assert_string_equal(diag_env_get(&e, "NCCL_SOCKET_IFNAME"), "net1"); /* last wins */
	assert_string_equal(diag_env_get(&e, "EMPTY"), "");
	assert_string_equal(diag_env_get(&e, "NCCL_X"),
			    "a#b"); /* '#' inside a word is not a comment */
	assert_string_equal(diag_env_get(&e, "Q"), "it has \"double\" and $dollar");
	assert_null(diag_env_get(&e, "NCCL_IB"));
	diag_env_clear(&e);
	assert_int_equal(diag_env_parse(environ_, sizeof(environ_) - 1, true, &e, err, sizeof(err)),
			 0);
	assert_int_equal(e.n, 3);
	assert_string_equal(diag_env_get(&e, "NCCL_IB_HCA"), "mlx5_0:1");
	diag_env_clear(&e);
	/* what a shell would do differently, or not at all: refused, by line */
	env_refused("A=1\ngarbage line\n", "line 2: not an assignment");
	env_refused("export X\n", "line 1: not an assignment");
	env_refused("1X=2\n", "line 1: not an assignment");
	env_refused("A=$HOME/x\n", "line 1: a character the shell would interpret");
	env_refused("A=\"$HOME\"\n", "line 1: $, ` or \\ inside double quotes");
	env_refused("A=a b\n", "line 1: text after the value");
	env_refused("A='open\n", "line 1: a quote that does not close");
	env_refused("A='x'y\n", "line 1: text right after the closing quote");
	env_refused("A=1; rm -rf /\n", "line 1: a character the shell would interpret");
	/* a NUL byte in a text file: refused, not read as /proc/PID/environ */
	assert_int_equal(
		diag_env_parse(nul_text, sizeof(nul_text) - 1, false, &e, err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "line 2: a NUL byte"));
}

static void test_versions(void **st)
{
	unsigned maj, min;
	bool open_module;

	assert_int_equal(diag_nvidia_version_parse(S("NVRM version: NVIDIA UNIX Open Kernel "
						     "Module for x86_64  535.104.05  Release "
						     "Build  (dvs-builder@U16-T02-35-3)  Thu "
						     "Aug 24 17:28:36 UTC 2023\nGCC version:  "
						     "gcc "
						     "version 11.4.0\n"),
						   &maj, &open_module),
			 1);
	assert_int_equal(maj, 535);
	assert_true(open_module);
	assert_int_equal(
		diag_nvidia_version_parse(
			S("NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.223.02  Sat Oct  7 "
			  "15:39:11 UTC 2023\n"),
			&maj, &open_module),
		1);
	assert_int_equal(maj, 470);
	assert_false(open_module);
	assert_int_equal(diag_nvidia_version_parse(S("550.54.15\n"), &maj, &open_module), 1);
	assert_int_equal(maj, 550);
	assert_int_equal(diag_nvidia_version_parse(S("no version here\n"), &maj, &open_module), 0);
	assert_int_equal(diag_kernel_release_parse(S("5.15.0-91-generic\n"), &maj, &min), 0);
	assert_true(maj == 5 && min == 15);
	assert_true(diag_kernel_release_parse(S("linux\n"), &maj, &min) < 0);
}

static void test_bytes(void **st)
{
	char b[32];

	assert_string_equal(diag_bytes(8388608, b, sizeof(b)), "8 MiB");
	assert_string_equal(diag_bytes(65536, b, sizeof(b)), "64 KiB");
	assert_string_equal(diag_bytes(1ull << 30, b, sizeof(b)), "1 GiB");
	assert_string_equal(diag_bytes(1000, b, sizeof(b)), "1000 B");
	assert_string_equal(diag_bytes(25275826176ull, b, sizeof(b)), "23.5 GiB");
	assert_string_equal(diag_bytes(1536, b, sizeof(b)), "1.5 KiB");
	assert_string_equal(diag_bytes(DIAG_UNLIMITED, b, sizeof(b)), "unlimited");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limits),	  cmocka_unit_test(test_status_caps),
		cmocka_unit_test(test_mountinfo), cmocka_unit_test(test_mount_size),
		cmocka_unit_test(test_cgroup),	  cmocka_unit_test(test_nccl_list),
		cmocka_unit_test(test_env),	  cmocka_unit_test(test_devices_list),
		cmocka_unit_test(test_versions),  cmocka_unit_test(test_bytes),
	};

	return cmocka_run_group_tests_name("diag_parse", tests, NULL, NULL);
}
