/* SPDX-License-Identifier: Apache-2.0 */
/* Many small files read in batches. A scrape of a node with 8 PFs and 1016 VFs reads ~44000
 * counter files, each an openat, a read and a close: three system calls per file. Through
 * io_uring, each file of a batch is one linked chain (open into a slot of the ring's own file
 * table, read from that slot, close it) and the whole batch is one io_uring_enter.
 *
 * The ring helps only where the kernel does the work inline, as the submitting thread would.
 * An open that cannot be resolved from the dentry cache alone (every sysfs file: kernfs
 * revalidates its dentries and refuses to in RCU mode) and a read of a file that cannot promise
 * not to block (sysfs, overlayfs) are handed to io_uring's worker threads instead: a queued work
 * item, a wakeup and two context switches per file. On sysfs that cost twice the CPU of plain
 * openat, read and close. So each open asks RESOLVE_CACHED and each read RWF_NOWAIT: what the
 * kernel would hand to a worker fails at once (EAGAIN, or EOPNOTSUPP for a file without
 * non-blocking reads) and that file is read one system call at a time on this thread; a batch
 * where most files did so switches the reader to one file at a time for the rest of its life
 * (one scrape), so that a tree the ring cannot help costs one batch of tries.
 *
 * The ring needs Linux 5.18 (IORING_SETUP_SUBMIT_ALL; the read's file taken from the slot when
 * it runs, IORING_FEAT_LINKED_FILE, is 5.17). Where it cannot be had (an older kernel,
 * kernel.io_uring_disabled, a seccomp profile that refuses io_uring as container runtimes'
 * default ones do), the files are read one at a time, with the same results: both ways open
 * with the same flags, read at most sizeof(buf) - 1 bytes once, from the start, and trim the same
 * way. */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "exporter/internal.h"

/* one SQE each for the open, the read and the close of a file */
#define SQ_ENTRIES (3 * EXPORTER_READER_BATCH)

/* never followed if a link, never blocking (a FIFO planted in a test tree reads as an error);
 * O_CLOEXEC only for a real descriptor: a ring slot is in no descriptor table (and io_uring
 * refuses the flag there) */
#define OPEN_FLAGS (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)

struct exporter_reader {
	struct exporter_file files[EXPORTER_READER_BATCH];
	int ring; /* -1: one file at a time */
	void *rings, *sqe_map;
	size_t rings_len, sqe_len;
	unsigned *sq_tail, *sq_array, sq_mask;
	unsigned *cq_head, *cq_tail, cq_mask;
	struct io_uring_cqe *cqes;
	struct io_uring_sqe *sqes;
	/* per file of a batch: the open's and the read's results */
	int open_res[EXPORTER_READER_BATCH], read_res[EXPORTER_READER_BATCH];
	/* the ring failed with requests in flight (io_uring_enter refusing to wait: not seen, and
	 * not expected but for a bug): they may still write into files[], so this reader answers
	 * -EIO from then on and is never freed */
	bool lost;
	bool plain;	     /* the ring did not help: one file at a time from now on */
	struct open_how how; /* OPEN_FLAGS, resolved from the dentry cache only */
	struct exporter_reader_stats stats;
};

static void trim(struct exporter_file *f)
{
	if (f->n < 0)
		return;
	f->buf[f->n] = '\0';
	while (f->n && (f->buf[f->n - 1] == '\n' || f->buf[f->n - 1] == ' '))
		f->buf[--f->n] = '\0';
}

static void read_one(struct exporter_file *f)
{
	int fd = f->dirfd < 0 ? -EBADF : openat(f->dirfd, f->name, OPEN_FLAGS | O_CLOEXEC);

	if (fd < 0) {
		f->n = f->dirfd < 0 ? -EBADF : -errno;
		return;
	}
	f->n = read(fd, f->buf, sizeof(f->buf) - 1);
	if (f->n < 0)
		f->n = -errno;
	close(fd);
	trim(f);
}

static void ring_close(struct exporter_reader *r)
{
	if (r->sqe_map)
		munmap(r->sqe_map, r->sqe_len);
	if (r->rings)
		munmap(r->rings, r->rings_len);
	if (r->ring >= 0)
		close(r->ring);
	r->ring = -1;
	r->rings = r->sqe_map = NULL;
}

static int ring_open(struct exporter_reader *r)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SUBMIT_ALL };
	int slots[EXPORTER_READER_BATCH];
	char *m;

	r->ring = (int)syscall(__NR_io_uring_setup, SQ_ENTRIES, &p);
	if (r->ring < 0) {
		r->ring = -1;
		return -errno; /* EINVAL before 5.18, EPERM or ENOSYS where refused */
	}
	if (!(p.features & IORING_FEAT_LINKED_FILE) || !(p.features & IORING_FEAT_SINGLE_MMAP) ||
	    !(p.features & IORING_FEAT_RW_CUR_POS)) {
		ring_close(r);
		return -EOPNOTSUPP;
	}
	r->rings_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	if (r->rings_len < p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe))
		r->rings_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	m = mmap(NULL, r->rings_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->ring,
		 IORING_OFF_SQ_RING);
	if (m == MAP_FAILED) {
		r->rings = NULL;
		goto fail;
	}
	r->rings = m;
	r->sqe_len = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqe_map = mmap(NULL, r->sqe_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
			  r->ring, IORING_OFF_SQES);
	if (r->sqe_map == MAP_FAILED) {
		r->sqe_map = NULL;
		goto fail;
	}
	r->sqes = r->sqe_map;
	r->sq_tail = (unsigned *)(m + p.sq_off.tail);
	r->sq_mask = *(unsigned *)(m + p.sq_off.ring_mask);
	r->sq_array = (unsigned *)(m + p.sq_off.array);
	r->cq_head = (unsigned *)(m + p.cq_off.head);
	r->cq_tail = (unsigned *)(m + p.cq_off.tail);
	r->cq_mask = *(unsigned *)(m + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(m + p.cq_off.cqes);
	/* the ring's own file table, empty: a batch's file i opens into slot i */
	for (size_t i = 0; i < EXPORTER_READER_BATCH; i++)
		slots[i] = -1;
	if (syscall(__NR_io_uring_register, r->ring, IORING_REGISTER_FILES, slots,
		    EXPORTER_READER_BATCH) < 0)
		goto fail;
	return 0;
fail : {
	int err = -errno;

	ring_close(r);
	return err;
}
}

struct exporter_reader *exporter_reader_new(bool ring, int *ring_status)
{
	struct exporter_reader *r = calloc(1, sizeof(*r));
	int st = 0;

	if (!r)
		return NULL;
	r->ring = -1;
	r->how.flags = OPEN_FLAGS;
	r->how.resolve = RESOLVE_CACHED;
	if (ring)
		st = ring_open(r);
	if (ring_status)
		*ring_status = st < 0 ? st : ring ? 1 : 0;
	return r;
}

void exporter_reader_free(struct exporter_reader *r)
{
	if (!r || r->lost)
		return;
	ring_close(r);
	free(r);
}

struct exporter_file *exporter_reader_files(struct exporter_reader *r)
{
	return r->files;
}

static struct io_uring_sqe *sqe_at(struct exporter_reader *r, unsigned tail)
{
	struct io_uring_sqe *s = &r->sqes[tail & r->sq_mask];

	memset(s, 0, sizeof(*s));
	r->sq_array[tail & r->sq_mask] = tail & r->sq_mask;
	return s;
}

static int enter(struct exporter_reader *r, unsigned submit, unsigned wait)
{
	int n;

	do
		n = (int)syscall(__NR_io_uring_enter, r->ring, submit, wait,
				 wait ? IORING_ENTER_GETEVENTS : 0, NULL, 0);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* What the kernel would have handed to a worker thread: an open that needs more than the dentry
 * cache (RESOLVE_CACHED's EAGAIN), a read that could block (RWF_NOWAIT's EAGAIN), or a file that
 * cannot read without blocking at all (EOPNOTSUPP: sysfs, overlayfs). */
static bool punted(int open_res, int read_res)
{
	return open_res == -EAGAIN ||
	       (open_res >= 0 && (read_res == -EAGAIN || read_res == -EOPNOTSUPP));
}

/* The batch through the ring: 0, or -errno when it could not be submitted (nothing was). */
static int ring_read(struct exporter_reader *r, size_t n)
{
	unsigned tail = *r->sq_tail, queued = 0, seen = 0, want;
	size_t back = 0;
	int k;

	for (size_t i = 0; i < n; i++) {
		struct exporter_file *f = &r->files[i];
		struct io_uring_sqe *s;

		r->open_res[i] = f->dirfd < 0 ? -EBADF : 0;
		r->read_res[i] = -ECANCELED;
		if (f->dirfd < 0)
			continue;
		s = sqe_at(r, tail++);
		s->opcode = IORING_OP_OPENAT2;
		s->fd = f->dirfd;
		s->addr = (uintptr_t)f->name;
		s->len = sizeof(r->how);
		s->off = (uintptr_t)&r->how;
		s->file_index = (uint32_t)i + 1;
		/* a failed open cancels the read and the close: there is nothing to close */
		s->flags = IOSQE_IO_LINK;
		s->user_data = i * 3;
		s = sqe_at(r, tail++);
		s->opcode = IORING_OP_READ;
		s->fd = (int)i;
		s->flags = IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK; /* closed even when it fails */
		s->addr = (uintptr_t)f->buf;
		s->len = sizeof(f->buf) - 1;
		s->off = (uint64_t)-1; /* the file position, as read(2): 0, and no ESPIPE */
		s->rw_flags = RWF_NOWAIT;
		s->user_data = i * 3 + 1;
		s = sqe_at(r, tail++);
		s->opcode = IORING_OP_CLOSE;
		s->file_index = (uint32_t)i + 1;
		s->user_data = i * 3 + 2;
		queued += 3;
	}
	__atomic_store_n(r->sq_tail, tail, __ATOMIC_RELEASE);
	/* SUBMIT_ALL: a request that fails its checks completes with its error, the rest go on;
	 * the kernel takes fewer only for want of memory */
	for (unsigned done = 0; done < queued; done += (unsigned)k) {
		k = enter(r, queued - done, 0);
		if (k < 0 && done == 0) {
			/* nothing taken: take the SQEs back, and read these files one at a time */
			__atomic_store_n(r->sq_tail, tail - queued, __ATOMIC_RELEASE);
			return k;
		}
		if (k <= 0) {
			r->lost = true;
			return -EIO;
		}
	}
	/* every SQE completes once (a cancelled one with -ECANCELED), in whatever order */
	for (want = queued; seen < want;) {
		unsigned head = *r->cq_head, ctail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);

		if (head == ctail) {
			k = enter(r, 0, want - seen);
			if (k < 0) {
				r->lost = true;
				return -EIO;
			}
			continue;
		}
		for (; head != ctail; head++, seen++) {
			const struct io_uring_cqe *c = &r->cqes[head & r->cq_mask];
			size_t i = c->user_data / 3;

			if (c->user_data % 3 == 0)
				r->open_res[i] = c->res;
			else if (c->user_data % 3 == 1)
				r->read_res[i] = c->res;
		}
		__atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
	}
	for (size_t i = 0; i < n; i++) {
		struct exporter_file *f = &r->files[i];

		f->n = r->open_res[i] < 0 ? r->open_res[i] : r->read_res[i];
		if (punted(r->open_res[i], r->read_res[i])) {
			read_one(f);
			back++;
		} else {
			trim(f);
		}
	}
	r->stats.ring += n - back;
	r->stats.plain += back;
	if (2 * back > n)
		r->plain = true;
	return 0;
}

void exporter_reader_read(struct exporter_reader *r, size_t n)
{
	if (r->ring >= 0 && !r->lost && !r->plain && ring_read(r, n) == 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (r->lost)
			r->files[i].n = -EIO;
		else
			read_one(&r->files[i]);
	}
	if (!r->lost)
		r->stats.plain += n;
}

void exporter_reader_stats(const struct exporter_reader *r, struct exporter_reader_stats *ret)
{
	*ret = r->stats;
}
