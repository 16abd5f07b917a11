# SPDX-License-Identifier: Apache-2.0
"""Low-level writer for a fake root (sys/ + dev/).

Paths are relative to the node root ("sys/devices/..."). Files are written with
os.open/os.write/os.close (about twice as fast as open() on ext4; the big node has ~215k
files) and no subprocesses. The root must be a fresh, empty directory. Symlinks are
relative and computed the way the kernel computes them (kernfs_get_target_path): walk up
from the link's directory until reaching a directory that contains the target's *parent*,
then walk down. That differs from os.path.relpath only when the target is an ancestor of
the link (e.g. <BDF>/infiniband/mlx5_0/device -> ../../../0000:37:00.0, never ../..).
"""
import os
import stat

_W = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC


def kernel_link_target(link, target):
    """Relative symlink text the kernel would create at `link` pointing to `target`."""
    base = os.path.dirname(link)
    tparent = os.path.dirname(target)
    ups = 0
    while base and not (tparent == base or tparent.startswith(base + "/")):
        base = os.path.dirname(base)
        ups += 1
    rest = target[len(base) + 1:] if base else target
    return "../" * ups + rest


class Tree:
    def __init__(self, root):
        self.root = root
        self._dirs = set()
        self.nfiles = 0
        self.nlinks = 0
        self.nnodes = 0

    def _abs(self, rel):
        return self.root + "/" + rel

    def mkdir(self, rel):
        if rel in self._dirs or not rel:
            return
        parent = rel.rpartition("/")[0]
        if parent not in self._dirs:
            self.mkdir(parent)
        os.mkdir(self._abs(rel))
        self._dirs.add(rel)

    def write(self, rel, value):
        """Attribute file: str(value) + "\\n" (every sysfs show routine ends in a newline)."""
        self.write_raw(rel, "%s\n" % (value,))

    def write_empty(self, rel):
        """A file whose read fails (EINVAL) or prints nothing on a real kernel: 0 bytes."""
        self.write_raw(rel, "")

    def write_raw(self, rel, text):
        d = rel.rpartition("/")[0]
        if d not in self._dirs:
            self.mkdir(d)
        fd = os.open(self._abs(rel), _W, 0o644)
        if text:
            os.write(fd, text.encode())
        os.close(fd)
        self.nfiles += 1

    def files(self, reldir, mapping):
        """Write several attributes of one directory; None values are skipped."""
        self.mkdir(reldir)
        for k, v in mapping.items():
            if v is not None:
                self.write(reldir + "/" + k, v)

    def link(self, rel, target_rel):
        d = rel.rpartition("/")[0]
        if d not in self._dirs:
            self.mkdir(d)
        os.symlink(kernel_link_target(rel, target_rel), self._abs(rel))
        self.nlinks += 1

    def chardev(self, rel, major, minor, mode):
        d = rel.rpartition("/")[0]
        if d not in self._dirs:
            self.mkdir(d)
        path = self._abs(rel)
        os.mknod(path, stat.S_IFCHR | mode, os.makedev(major, minor))
        os.chmod(path, mode)  # mknod honours the umask
        self.nnodes += 1
