/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak cni install`: puts rdmak-cni and rdmak-ipam on a node, from the bundle the image holds
 * (deploy/bundle.sh: bin/rdmak, bin/rdmak-cni, lib/ with the libraries and the loader). The
 * rdmak-cni DaemonSet runs it; it replaced a shell script, so that the image needs no shell.
 *
 * On the host: /opt/rdmak/lib -> lib-<hash> (the libraries and the loader the relocated binaries
 * ask for), /opt/rdmak/bin/rdmak (the operator CLI, and what rdmak-ipam hands an etcd store's
 * requests to), CNI_DIR/rdmak-cni (the bundle's per-pod binary) and CNI_DIR/rdmak-ipam, a hard
 * link of it (one binary that dispatches on its name; a symbolic link would not survive a copy).
 * Every file appears by rename(2), so a runtime exec'ing the plugin mid-upgrade gets the old or
 * the new one, never half of one; the libraries go first, into a new folder switched in by
 * renaming a symbolic link over lib, so an old binary never meets a half-copied library.
 * Nothing is removed on SIGTERM: pods attached with rdmak-cni still need it for their DEL. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "k8s/names.h"
#include "log/log.h"
#include "nodeconf/nodeconf.h"
#include "roles.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/strv.h"

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

/* the largest file of a bundle: rdmak with the static gRPC is ~11 MB, libc 2 MB */
#define BUNDLE_FILE_MAX (256u << 20)

struct install_opts {
	const char *src, *host, *cni_dir, *node_src, *alive_file;
	bool wait;
};

static void usage(FILE *f)
{
	fputs("Usage: rdmak cni install [--src DIR] [--host-root DIR] [--cni-dir DIR] [--node-src DIR]\n"
	      "                         [--wait [--alive-file FILE]]\n"
	      "Put rdmak-cni and rdmak-ipam (and rdmak with its libraries, in /opt/rdmak) on the host whose\n"
	      "root is mounted at --host-root: what the chart's cni DaemonSet runs (docs/deploy.md).\n\n"
	      "  --src DIR         the bundle (bin/rdmak, bin/rdmak-cni, lib/) (default /opt/rdmak)\n"
	      "  --host-root DIR   where the host's / is mounted (default /host)\n"
	      "  --cni-dir DIR     the runtime's CNI_PATH folder on the host, absolute (default /opt/cni/bin)\n"
	      "  --node-src DIR    the node's settings (the chart's values): DIR/cni.json (checked first)\n"
	      "                    with DIR/etcd/NAME/ (an etcd store's Secret: ca.crt, tls.crt, tls.key),\n"
	      "                    DIR/fabrics.json with DIR/fabric/NAME/ (a fabric's Secret: username and\n"
	      "                    password, or token; ca.crt) become the host's /etc/rdmak/cni.json,\n"
	      "                    /etc/rdmak/etcd/NAME/, /etc/rdmak/fabrics.json and /etc/rdmak/fabric/NAME/,\n"
	      "                    root's files of mode 0600 in folders of mode 0700 (docs/cni.md,\n"
	      "                    docs/fabric.md)\n"
	      "  --wait            then wait for SIGTERM (the DaemonSet's container), removing nothing;\n"
	      "                    with --node-src, install the node's settings again when they change\n"
	      "  --alive-file FILE with --wait: touch FILE every second (for `rdmak probe FILE`)\n"
	      "  -h, --help\n\n"
	      "RDMAK_NODE_NAME, when set (the downward API's spec.nodeName), is written to the host's\n"
	      "/opt/rdmak/node-name: rdmak-ipam's node for per-node blocks, since the runtime execs it\n"
	      "without this container's environment.\n"
	      "Exit: 0 installed (--wait: and stopped by SIGTERM), 1 the install failed, 2 usage.\n",
	      f);
}

static int parse_args(int argc, char **argv, struct install_opts *o)
{
	static const struct option opts[] = { { "src", required_argument, NULL, 's' },
					      { "host-root", required_argument, NULL, 'H' },
					      { "cni-dir", required_argument, NULL, 'c' },
					      { "node-src", required_argument, NULL, 'f' },
					      { "wait", no_argument, NULL, 'w' },
					      { "alive-file", required_argument, NULL, 'a' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': o->src = optarg; break;
		case 'H': o->host = optarg; break;
		case 'c': o->cni_dir = optarg; break;
		case 'f': o->node_src = optarg; break;
		case 'w': o->wait = true; break;
		case 'a': o->alive_file = optarg; break;
		case 'h': usage(stdout); return -1;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmak cni install: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (o->cni_dir[0] != '/') {
		fprintf(stderr,
			"rdmak cni install: --cni-dir %s: must be absolute (a path on the host)\n",
			o->cni_dir);
		return EXIT_USAGE;
	}
	if (o->alive_file && !o->wait) {
		fprintf(stderr, "rdmak cni install: --alive-file goes with --wait\n");
		return EXIT_USAGE;
	}
	return 0;
}

/* The regular files of folder dirfd, sorted (a bundle holds nothing else: anything else is
 * refused by name). */
static int list_files(int dirfd, const char *what, char ***ret, size_t *ret_n)
{
	_cleanup_strv_free_ char **names = NULL;
	size_t n = 0;
	int r;

	/* the hash listed this folder already: from its start again */
	if (lseek(dirfd, 0, SEEK_SET) < 0)
		return log_error_errno(errno, "listing %s: %m", what);
	r = fileio_list_dir(dirfd, 0, &names, &n);
	if (r < 0)
		return log_error_errno(r, "listing %s: %m", what);
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			return log_error_errno(errno, "%s/%s: %m", what, names[i]);
		if (!S_ISREG(st.st_mode))
			return log_error_errno(FILEIO_ENOTREG, "%s/%s: not a regular file", what,
					       names[i]);
	}
	*ret = TAKE_PTR(names);
	*ret_n = n;
	return 0;
}

/* SHA-256 of the bundle's files, bin/ then lib/, each in name order: the library folder's name,
 * so that an upgrade gets a new folder and a re-install of the same bundle changes nothing. */
static int bundle_hash(int bin, int lib, char hex[13])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned md_len = 0;
	EVP_MD_CTX *h = EVP_MD_CTX_new();
	int dirs[2] = { bin, lib }, r = 0;

	if (!h || !EVP_DigestInit_ex(h, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(h);
		return -ENOMEM;
	}
	for (size_t d = 0; d < 2 && r == 0; d++) {
		_cleanup_strv_free_ char **names = NULL;
		size_t n = 0;

		r = list_files(dirs[d], d ? "lib" : "bin", &names, &n);
		for (size_t i = 0; r == 0 && i < n; i++) {
			_cleanup_free_ char *buf = NULL;
			size_t len = 0;

			r = fileio_read_at(dirs[d], names[i], BUNDLE_FILE_MAX, &buf, &len);
			if (r < 0)
				log_error_errno(r, "reading %s/%s: %m", d ? "lib" : "bin",
						names[i]);
			else if (!EVP_DigestUpdate(h, buf, len))
				r = -ENOMEM;
		}
	}
	if (r == 0 && !EVP_DigestFinal_ex(h, md, &md_len))
		r = -ENOMEM;
	EVP_MD_CTX_free(h);
	for (size_t i = 0; r == 0 && i < 6; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return r;
}

/* Copy file name of folder from into folder to, as `as` with mode, by rename. */
static int place(int from, const char *name, int to, const char *as, mode_t mode, const char *where)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = fileio_read_at(from, name, BUNDLE_FILE_MAX, &buf, &len);
	if (r < 0)
		return log_error_errno(r, "reading %s: %m", name);
	r = fileio_write_atomic_at(to, as, buf, len, mode);
	if (r < 0)
		return log_error_errno(r, "writing %s/%s: %m", where, as);
	return 0;
}

/* Remove the folder name of dirfd and the files in it (a library or fabric folder: flat). */
static int remove_flat_dir(int dirfd, const char *name)
{
	_cleanup_close_ int fd =
		openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_strv_free_ char **names = NULL;
	size_t n = 0;
	int r;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	r = fileio_list_dir(fd, 0, &names, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (unlinkat(fd, names[i], 0) < 0 && errno != ENOENT)
			return -errno;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* The libraries into dest/lib-<hash> (once per bundle), then dest/lib switched to it. */
static int install_libs(int lib, int dest, const char *hash)
{
	char dir[32], tmp[40];
	_cleanup_strv_free_ char **names = NULL;
	size_t n = 0;
	int r;

	snprintf(dir, sizeof(dir), "lib-%s", hash);
	snprintf(tmp, sizeof(tmp), ".lib-%s.tmp", hash);
	if (faccessat(dest, dir, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		_cleanup_close_ int t = -1;

		/* a copy killed half-way left its folder: start it again */
		if ((r = remove_flat_dir(dest, tmp)) < 0)
			return log_error_errno(r, "removing /opt/rdmak/%s: %m", tmp);
		if (mkdirat(dest, tmp, 0755) < 0)
			return log_error_errno(errno, "creating /opt/rdmak/%s: %m", tmp);
		t = openat(dest, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (t < 0)
			return log_error_errno(errno, "opening /opt/rdmak/%s: %m", tmp);
		if ((r = list_files(lib, "lib", &names, &n)) < 0)
			return r;
		for (size_t i = 0; i < n; i++)
			if ((r = place(lib, names[i], t, names[i], 0755, tmp)) < 0)
				return r;
		if (renameat(dest, tmp, dest, dir) < 0)
			return log_error_errno(errno, "renaming /opt/rdmak/%s: %m", tmp);
	}
	(void)unlinkat(dest, ".lib.tmp", 0);
	if (symlinkat(dir, dest, ".lib.tmp") < 0)
		return log_error_errno(errno, "linking /opt/rdmak/.lib.tmp: %m");
	if (renameat(dest, ".lib.tmp", dest, "lib") < 0)
		return log_error_errno(
			errno, "switching /opt/rdmak/lib to %s: %m (is lib a folder?)", dir);
	return 0;
}

/* Libraries of earlier bundles: no new process can reach them once lib points elsewhere. */
static void remove_old_libs(int dest, const char *hash)
{
	_cleanup_strv_free_ char **names = NULL;
	char keep[32];
	size_t n = 0;
	int r;

	snprintf(keep, sizeof(keep), "lib-%s", hash);
	if (fileio_list_dir(dest, 0, &names, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(names[i], "lib-", 4) && strcmp(names[i], keep) &&
		    (r = remove_flat_dir(dest, names[i])) < 0)
			log_warning_errno(r, "removing the old /opt/rdmak/%s: %m", names[i]);
}

static int open_dir(const char *path, bool create)
{
	int fd;

	if (create && fileio_mkdir_p(path, 0755, 0755) < 0)
		return log_error_errno(errno, "creating %s: %m", path);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return log_error_errno(errno, "%s: %m", path);
	return fd;
}

/* File name of folder from (a Secret volume's file: a link into ..data, followed) as the regular
 * file `as` of folder to, mode 0600, by rename: 1 written, 0 already there as it is, -errno. */
static int put_secret(int from, const char *name, int to, const char *as)
{
	_cleanup_free_ char *want = NULL, *have = NULL;
	size_t wlen = 0, hlen = 0;
	struct stat st;
	int r;

	r = fileio_read_at(from, name, 1u << 20, &want, &wlen);
	if (r < 0)
		return r;
	if (fstatat(to, as, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    (st.st_mode & 07777) == 0600 && st.st_uid == geteuid() &&
	    fileio_read_at(to, as, 1u << 20, &have, &hlen) == 0 && hlen == wlen &&
	    !memcmp(have, want, wlen))
		return 0;
	r = fileio_write_atomic_at(to, as, want, wlen, 0600);
	return r < 0 ? r : 1;
}

static int open_private_dir(int at, const char *name)
{
	int fd;

	if (mkdirat(at, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0700) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

/* The message of a failure to install the node's settings, for the caller to log (once, while it lasts). */
static int __attribute__((format(printf, 4, 5)))
install_fail(char *why, size_t n, int err, const char *fmt, ...)
{
	va_list ap;

	err = err < 0 ? -err : err;
	errno = err;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -err;
}

/* The folders of src/sub (one per fabric or store, each a Secret's volume) into the host's
 * /etc/rdmak/sub/NAME/, each of files copied as root's of mode 0600 (a file the Secret no longer
 * has removed), in folders of mode 0700; a folder no longer in src/sub removed. Sets *changed.
 * The names: *ret_list ("rail0 rail1"). */
static int install_secret_dirs(int src, const char *src_path, const char *sub, int etc,
			       const char *const *files, size_t n_files, bool *changed,
			       char **ret_list, char *why, size_t why_len)
{
	_cleanup_close_ int srcf = -1, dst = -1;
	_cleanup_strv_free_ char **names = NULL, **installed = NULL;
	size_t n = 0, n_installed = 0;
	int r;

	if ((dst = open_private_dir(etc, sub)) < 0)
		return install_fail(why, why_len, dst, "/etc/rdmak/%s: %m", sub);
	srcf = openat(src, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (srcf >= 0 && (r = fileio_list_dir(srcf, FILEIO_LIST_NO_HIDDEN, &names, &n)) < 0)
		return install_fail(why, why_len, r, "listing %s/%s: %m", src_path, sub);
	for (size_t i = 0; i < n; i++) {
		_cleanup_close_ int from = -1, to = -1;

		/* a name becomes a folder of the host: the names rdmak-cni and rdmak-ipam take */
		if (!str_is_safe_name(names[i], 63))
			return install_fail(why, why_len, EINVAL,
					    "%s/%s/%s: not a name of the node's", src_path, sub,
					    names[i]);
		from = openat(srcf, names[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (from < 0)
			continue; /* not a folder */
		if ((to = open_private_dir(dst, names[i])) < 0)
			return install_fail(why, why_len, to, "/etc/rdmak/%s/%s: %m", sub,
					    names[i]);
		for (size_t k = 0; k < n_files; k++) {
			if (faccessat(from, files[k], F_OK, 0) == 0) {
				r = put_secret(from, files[k], to, files[k]);
				if (r < 0)
					return install_fail(why, why_len, r,
							    "installing /etc/rdmak/%s/%s/%s: %m",
							    sub, names[i], files[k]);
				*changed |= r > 0;
			} else if (unlinkat(to, files[k], 0) == 0) {
				*changed = true;
			}
		}
		if (strv_extend(&installed, &n_installed, names[i]) < 0 ||
		    str_append_sep(ret_list, " ", "%s", names[i]) < 0)
			return -ENOMEM;
	}
	{
		_cleanup_strv_free_ char **have = NULL;
		size_t n_have = 0;

		if (lseek(dst, 0, SEEK_SET) == 0 && fileio_list_dir(dst, 0, &have, &n_have) == 0)
			for (size_t i = 0; i < n_have; i++)
				if (!strv_contains(installed, have[i])) {
					if ((r = remove_flat_dir(dst, have[i])) < 0)
						return install_fail(why, why_len, r,
								    "removing /etc/rdmak/%s/%s: %m",
								    sub, have[i]);
					*changed = true;
				}
	}
	return 0;
}

/* The node's settings (docs/fabric.md and docs/cni.md, "What it trusts"): rdmak-cni and
 * rdmak-ipam read their node files and the secrets those name only as regular files owned by
 * root that neither group nor others may write, never through a symbolic link, so each is
 * copied. From --node-src: fabrics.json with fabric/NAME/ (the fabric managers' credentials),
 * cni.json with etcd/NAME/ (each etcd store's client certificate, key and CA). What a file names
 * goes first, the file last; a folder no longer in the source is removed. cni.json is checked as
 * the plugins read it: a bad one is not installed. 1 something changed, 0 nothing did, -errno with
 * why (its message). */
static int install_node(const struct install_opts *o, char *why, size_t why_len)
{
	static const char *const fabric_files[] = { "username", "password", "token", "ca.crt" };
	static const char *const etcd_files[] = { "ca.crt", "tls.crt", "tls.key" };
	_cleanup_close_ int src = -1, etc = -1;
	_cleanup_free_ char *etc_path = NULL, *fabrics = NULL, *stores = NULL;
	bool changed = false, has_fabrics, has_cni;
	int r;

	src = open(o->node_src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src < 0)
		return install_fail(why, why_len, errno, "--node-src %s: %m", o->node_src);
	has_fabrics = faccessat(src, "fabrics.json", R_OK, 0) == 0;
	has_cni = faccessat(src, "cni.json", R_OK, 0) == 0;
	if (!has_fabrics && !has_cni)
		return install_fail(why, why_len, ENOENT,
				    "--node-src %s has neither fabrics.json nor cni.json",
				    o->node_src);
	if (asprintf(&etc_path, "%s/etc/rdmak", o->host) < 0)
		return -ENOMEM;
	if (fileio_mkdir_p(etc_path, 0755, 0755) < 0 ||
	    (etc = open(etc_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return install_fail(why, why_len, errno, "%s: %m", etc_path);
	if (has_cni) {
		_cleanup_free_ char *text = NULL;
		struct nodeconf n = { 0 };
		char bad[NODECONF_ERR_MAX];
		size_t len = 0;

		r = fileio_read_at(src, "cni.json", 1u << 20, &text, &len);
		if (r < 0)
			return install_fail(why, why_len, r, "%s/cni.json: %m", o->node_src);
		if ((r = nodeconf_parse(text, len, &n, bad, sizeof(bad))) < 0)
			return install_fail(why, why_len, r, "%s/cni.json: %s: not installed",
					    o->node_src, bad);
		nodeconf_clear(&n);
		r = install_secret_dirs(src, o->node_src, "etcd", etc, etcd_files,
					ELEMENTSOF(etcd_files), &changed, &stores, why, why_len);
		if (r < 0)
			return r;
		r = put_secret(src, "cni.json", etc, "cni.json");
		if (r < 0)
			return install_fail(why, why_len, r, "installing /etc/rdmak/cni.json: %m");
		changed |= r > 0;
	}
	if (has_fabrics) {
		r = install_secret_dirs(src, o->node_src, "fabric", etc, fabric_files,
					ELEMENTSOF(fabric_files), &changed, &fabrics, why, why_len);
		if (r < 0)
			return r;
		r = put_secret(src, "fabrics.json", etc, "fabrics.json");
		if (r < 0)
			return install_fail(why, why_len, r,
					    "installing /etc/rdmak/fabrics.json: %m");
		changed |= r > 0;
	}
	if (changed)
		log_info("installed the node's settings:%s%s%s%s%s%s",
			 has_cni ? " /etc/rdmak/cni.json (etcd stores: " : "",
			 has_cni ? (stores ? stores : "none") : "", has_cni ? ")" : "",
			 has_fabrics ? " /etc/rdmak/fabrics.json (" : "",
			 has_fabrics ? (fabrics ? fabrics : "") : "", has_fabrics ? ")" : "");
	return changed;
}

static int install(const struct install_opts *o)
{
	_cleanup_close_ int src = -1, bin = -1, lib = -1, dest = -1, dest_bin = -1, cni = -1;
	_cleanup_free_ char *dest_path = NULL, *cni_path = NULL;
	const char *node = getenv("RDMAK_NODE_NAME"), *why = NULL, *plugin = "rdmak-cni";
	char why_buf[512];
	char hash[13];
	int r;

	src = open(o->src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src >= 0) {
		bin = openat(src, "bin", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		lib = openat(src, "lib", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (bin < 0 || lib < 0 || faccessat(bin, "rdmak", X_OK, 0) < 0)
		return log_error_errno(EINVAL,
				       "%s is not a bundle (bin/rdmak, lib/): see deploy/bundle.sh",
				       o->src);
	/* a bundle without a per-pod binary: its rdmak serves as rdmak-cni too */
	if (faccessat(bin, plugin, X_OK, 0) < 0)
		plugin = "rdmak";
	if (node && *node && !k8s_dns1123_subdomain(node, &why))
		return log_error_errno(EINVAL, "RDMAK_NODE_NAME '%s': not a node name (%s)", node,
				       why);
	if (access(o->host, F_OK) < 0)
		return log_error_errno(errno, "--host-root %s: %m (mount the host's / there)",
				       o->host);
	if (asprintf(&dest_path, "%s/opt/rdmak", o->host) < 0 ||
	    asprintf(&cni_path, "%s%s", o->host, o->cni_dir) < 0)
		return -ENOMEM;
	if ((dest = open_dir(dest_path, true)) < 0 || (cni = open_dir(cni_path, true)) < 0)
		return -EIO;
	if (mkdirat(dest, "bin", 0755) < 0 && errno != EEXIST)
		return log_error_errno(errno, "creating /opt/rdmak/bin: %m");
	if ((dest_bin = openat(dest, "bin", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return log_error_errno(errno, "/opt/rdmak/bin: %m");
	if ((r = bundle_hash(bin, lib, hash)) < 0 || (r = install_libs(lib, dest, hash)) < 0)
		return r;
	if ((r = place(bin, "rdmak", dest_bin, "rdmak", 0755, "/opt/rdmak/bin")) < 0 ||
	    (r = place(bin, plugin, cni, "rdmak-cni", 0755, o->cni_dir)) < 0)
		return r;
	(void)unlinkat(cni, ".rdmak-ipam.tmp", 0);
	if (linkat(cni, "rdmak-cni", cni, ".rdmak-ipam.tmp", 0) < 0 ||
	    renameat(cni, ".rdmak-ipam.tmp", cni, "rdmak-ipam") < 0)
		return log_error_errno(errno, "linking %s/rdmak-ipam: %m", o->cni_dir);
	if (node && *node) {
		_cleanup_free_ char *line = NULL;

		if (asprintf(&line, "%s\n", node) < 0)
			return -ENOMEM;
		if ((r = fileio_write_atomic_at(dest, "node-name", line, strlen(line), 0644)) < 0)
			return log_error_errno(r, "writing /opt/rdmak/node-name: %m");
	}
	remove_old_libs(dest, hash);
	log_info("installed %s/rdmak-cni, %s/rdmak-ipam and /opt/rdmak (libraries lib-%s)",
		 o->cni_dir, o->cni_dir, hash);
	if (o->node_src && (r = install_node(o, why_buf, sizeof(why_buf))) < 0)
		return log_error_errno(r, "%s", why_buf);
	return 0;
}

/* The daemon loop's reload (a watched file changed, SIGHUP, every second): a rotated Secret's
 * files, a changed ConfigMap, are installed again; a failure is logged and tried again. */
static void node_again(void *ud, enum daemon_reload_reason reason)
{
	static struct daemon_refusal last;
	char why[512];

	(void)reason;
	if (install_node(ud, why, sizeof(why)) >= 0)
		daemon_refusal_clear(&last);
	else if (daemon_refusal_is_new(&last, why, NULL))
		log_error("installing the node's settings: %s (trying again every second)", why);
}

static int wait_stop(const struct install_opts *o)
{
	static const struct daemon_ops none = { 0 }, node = { .reload = node_again };
	struct daemon_loop *l = NULL;
	int r;

	r = daemon_loop_new(o->node_src ? &node : &none, (void *)o, &l);
	if (r < 0)
		return log_error_errno(r, "starting the loop: %m");
	if (o->alive_file && (r = daemon_loop_alive_file(l, o->alive_file)) < 0) {
		daemon_loop_free(l);
		return log_error_errno(r, "--alive-file %s: %m", o->alive_file);
	}
	r = daemon_loop_run(l);
	daemon_loop_free(l);
	if (r < 0)
		return log_error_errno(r, "the loop failed: %m");
	log_info("stopping on %s; the installed files stay for the pods' DEL", strsignal(r));
	return 0;
}

int cni_install_main(int argc, char **argv)
{
	struct install_opts o = { .src = "/opt/rdmak", .host = "/host", .cni_dir = "/opt/cni/bin" };
	int r;

	r = parse_args(argc, argv, &o);
	if (r)
		return r < 0 ? EXIT_OK : r;
	log_set_program("cni install");
	if (o.wait)
		log_set_time(true);
	if (install(&o) < 0)
		return EXIT_FAILED;
	if (o.wait && wait_stop(&o) < 0)
		return EXIT_FAILED;
	return EXIT_OK;
}

int cni_cli_main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "install"))
		return cni_install_main(argc - 1, argv + 1);
	return cni_main(argc, argv);
}
