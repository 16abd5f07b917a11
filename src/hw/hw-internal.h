/* SPDX-License-Identifier: Apache-2.0 */
/* Internals shared by the files of src/hw. Not for other modules. */
#ifndef RDMAK_HW_INTERNAL_H
#define RDMAK_HW_INTERNAL_H

#include <string.h>

#include "hw/hw.h"

struct hw_ctx {
	int fd[HW_ROOT_N]; /* O_PATH directory fds of the roots; -errno where absent (not sysfs) */
	char *path[HW_ROOT_N]; /* as given, for messages */
	hw_recorder_fn recorder;
	void *recorder_ud;
};

/* An open directory under the sysfs root, with its path relative to the root (for
 * messages and the recorder). Reads through it cost one openat() per file. */
struct hw_dir {
	int fd;
	/* Its entries are symbolic links out of it (class/net, bus/pci/devices: ../../devices/...):
	 * a path through one is resolved from the root at once, not first tried beneath the
	 * directory, which always fails there (EXDEV) and cost an openat2 per read. */
	bool links_out;
	char path[PATH_MAX];
};

/* Open `name` (relative to `parent`, or to the sysfs root when parent is NULL). */
int hw_dir_open(struct hw_ctx *ctx, const struct hw_dir *parent, const char *name,
		struct hw_dir *ret);
/* The same for a directory of links out of it (a class or bus directory). */
int hw_dir_open_links(struct hw_ctx *ctx, const char *path, struct hw_dir *ret);
/* Open what `name`, a link of such a directory, points at, and read the link's text into buf
 * (size len; "" when name is not a link): hw_dir_readlink() and hw_dir_open() in one, the link
 * read once. ret's path is links' path and name, as hw_dir_open's. */
int hw_dir_open_link(struct hw_ctx *ctx, const struct hw_dir *links, const char *name, char *buf,
		     size_t len, struct hw_dir *ret);
void hw_dir_close(struct hw_dir *d);
/* Read a sysfs attribute into buf (trailing newline stripped). Returns its length or -errno. */
int hw_dir_read(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, char *buf,
		size_t len);
/* Read a symlink's text. Returns its length or -errno (-EINVAL: not a symlink). */
int hw_dir_readlink(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, char *buf,
		    size_t len);
/* Entries of a directory (no "." / ".."), sorted by strcmp: a strv (util/strv.h; NULL when
 * empty) and its length. */
int hw_dir_list(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, char ***ret,
		size_t *n);
/* A directory whose entries the kernel numbers from a known first one with none missing (an
 * RDMA device's ports/ from rdma_start_port, a port's gids/ from 0 to gid_tbl_len - 1): opened
 * for reads beneath it and recorded as listed (a snapshot captures every entry), but not
 * listed: the caller reads up to the first number that is absent (ENOENT). A listing is two
 * getdents64 and the names sorted: 4 118 calls on cx7-rail-1016vf for what that one failed
 * open per table tells. A tree with a gap in its numbers is one no kernel makes. */
int hw_dir_open_table(struct hw_ctx *ctx, const struct hw_dir *parent, const char *name,
		      struct hw_dir *ret);
bool hw_dir_exists(struct hw_ctx *ctx, const struct hw_dir *d, const char *name);

/* What devfs holds at relpath (relative to the devfs root), through the recorder. */
void hw_devnode_stat(struct hw_ctx *ctx, const char *relpath, struct hw_devnode *n);

/* Record the error (first one wins) and return -err. */
int hw_fail(struct hw_error *e, const struct hw_dir *d, const char *name, int err);
/* Read an optional attribute: "" when absent or unreadable with EINVAL/ENODATA/EOPNOTSUPP
 * (the kernel's answer for attributes that have no value now); other errors are returned. */
int hw_read_opt(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, char *buf,
		size_t len);
/* Entry idx of a table opened by hw_dir_open_table(), as hw_read_opt() reads an attribute ("" for
 * the kernel's "no value now"), but -ENOENT when there is no entry idx: past the table's end. */
int hw_table_read(struct hw_ctx *ctx, const struct hw_dir *table, unsigned idx, char *buf,
		  size_t len);
int hw_read_int(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, int base,
		long long *ret);

/* State of one hw_load(): names read early are resolved to pointers once every array exists. */
struct hw_build {
	struct hw_ctx *ctx;
	unsigned flags;
	struct hw_node *node;
	struct hw_error *err;
	char (*netdev_bdf)[HW_BDF_MAX]; /* per netdev: its PCI function, "" if virtual */
	char (*netdev_master)[HW_IFNAME_MAX];
	char **bond_slaves; /* per netdev: bonding/slaves text, NULL if not a bond */
	char (*bond_active)[HW_IFNAME_MAX];
	char (*rdma_bdf)[HW_BDF_MAX]; /* per RDMA device: its parent PCI function */
	bool *gone;		      /* per item of the loop running: vanished while read */
};

/* Run fn(b, i, ud) for i in [0, n) in order; the first error stops the loop and is returned.
 * fn writes item i's own slots and reports failures through hw_fail(). */
int hw_for_items(struct hw_build *b, size_t n, int (*fn)(struct hw_build *b, size_t i, void *ud),
		 void *ud);

/* Run one item's loader with its own error record. Devices and netdevs come and go while we
 * read (hot-unplug, a pod's veth): when the loader fails and `class_dir/name` no longer
 * exists, the item is marked in b->gone and the load goes on; any other failure is the
 * load's failure, or with HW_LOAD_PARTIAL (but for -ENOMEM) a skip: gone, and listed. */
int hw_load_item(struct hw_build *b, size_t i, const struct hw_dir *class_dir, const char *name,
		 int (*load)(struct hw_build *b, size_t i, const struct hw_dir *class_dir,
			     const char *name));

/* HW_LOAD_PARTIAL: what is being read left e out, appended to node->skipped (the items run in
 * order on one thread, so the list is in item order). 0 or -ENOMEM. */
int hw_skip(struct hw_build *b, const struct hw_error *e);
/* Before a loop over n items: b->gone. -ENOMEM. */
int hw_items_begin(struct hw_build *b, size_t n);
/* After it: b->gone freed; r, the loop's result, returned. */
int hw_items_end(struct hw_build *b, int r);

/* Loaders, each filling its part of the node; called in this order by hw_load(). */
int hw_load_netdevs(struct hw_build *b);
int hw_load_rdma(struct hw_build *b);
int hw_load_pci(struct hw_build *b);
int hw_load_chardevs(struct hw_build *b);
int hw_load_kernel(struct hw_build *b);
void hw_link_netdevs(struct hw_build *b);
void hw_map_ports(struct hw_build *b);
void hw_load_gpus_topology(struct hw_node *node);
void hw_build_free(struct hw_build *b);

/* The last BDF-shaped component of a sysfs device path ("../../devices/pci0000:36/0000:36:02.0/
 * 0000:37:00.0/infiniband/mlx5_0" -> "0000:37:00.0"). -ENOENT for virtual devices. */
int hw_path_parent_bdf(const char *path, char bdf[HW_BDF_MAX]);

/* The next component of the path at *p, as strtok_r with "/" finds it (empty ones skipped), in
 * place: its start, and its length in *len; NULL at the end. *p moves past it. */
static inline const char *hw_path_next(const char **p, size_t *len)
{
	const char *s = *p, *e;

	while (*s == '/')
		s++;
	if (!*s)
		return NULL;
	e = strchrnul(s, '/');
	*len = (size_t)(e - s);
	*p = e;
	return s;
}

/* Whether the component c[0..len) is the string s. */
static inline bool hw_comp_is(const char *c, size_t len, const char *s)
{
	return strlen(s) == len && !memcmp(c, s, len);
}

/* Whether the component c[0..len) starts with prefix. */
static inline bool hw_comp_starts(const char *c, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && !memcmp(c, prefix, n);
}

/* Whether the component c[0..len) is a BDF (hw_is_bdf); then it is in bdf. Only a component
 * of a BDF's length is copied out and asked. */
static inline bool hw_comp_bdf(const char *c, size_t len, char bdf[HW_BDF_MAX])
{
	if (len != HW_BDF_MAX - 4)
		return false;
	memcpy(bdf, c, len);
	bdf[len] = '\0';
	return hw_is_bdf(bdf);
}

#endif
