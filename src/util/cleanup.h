/* SPDX-License-Identifier: Apache-2.0 */
/* Scope-bound cleanup, after systemd's macros: ownership is visible at the declaration. */
#ifndef RDMAK_UTIL_CLEANUP_H
#define RDMAK_UTIL_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void freep(void *p)
{
	free(*(void **)p);
}
static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved =
			errno; /* close() must not clobber the errno a caller is about to return */
		close(*fd);
		errno = saved;
	}
}
static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}
static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

#define _cleanup_(f)	   __attribute__((cleanup(f)))
#define _cleanup_free_	   _cleanup_(freep)
#define _cleanup_close_	   _cleanup_(closep)
#define _cleanup_fclose_   _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Hand ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _p_ = (p);                                                           \
		(p) = NULL;                                                                        \
		_p_;                                                                               \
	})
#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _fd_ = (fd);                                                                   \
		(fd) = -1;                                                                         \
		_fd_;                                                                              \
	})

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

#endif
