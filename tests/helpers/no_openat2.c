/* SPDX-License-Identifier: Apache-2.0 */
/* no_openat2 PROGRAM [ARG...]: runs PROGRAM with openat2(2) answered ENOSYS by a seccomp filter,
 * as a kernel before 5.6 answers it (a container runtime's seccomp profile that does not know the
 * call answers EPERM, which rdmak takes the same way). So the tests run the shipped rdmak on its
 * user-space walk (src/util/inroot.c) with nothing in the program to switch it. Every other call
 * is allowed; exit 126 when the filter cannot be installed, 127 when PROGRAM cannot run. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "no_openat2: add this architecture's AUDIT_ARCH_ value"
#endif

#ifndef SYS_openat2
#define SYS_openat2 437 /* the same number on every architecture (asm-generic and x86_64) */
#endif

int main(int argc, char **argv)
{
	struct sock_filter code[] = {
		/* another architecture's calls (x32, ia32) are not this program's: allowed */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };

	if (argc < 2) {
		fprintf(stderr, "usage: no_openat2 PROGRAM [ARG...]\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		fprintf(stderr, "no_openat2: installing the filter: %s\n", strerror(errno));
		return 126;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "no_openat2: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
