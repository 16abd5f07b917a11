/* SPDX-License-Identifier: Apache-2.0 */
/* The fuzz corpora as regression tests: each fuzz_*.c harness is linked with this main instead
 * of libFuzzer's (by `make tests`, with the suite's compiler and sanitizers), and replays every
 * file named on its command line through LLVMFuzzerTestOneInput, one TAP line per file. A
 * crash, a sanitizer report or the harness's abort() fails the run, as it would under the
 * fuzzer; tests/cmd/fuzz_replay.sh runs each target on its corpus. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return -errno;
	do {
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap ? cap * 2 : 4096);
			if (!nb) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = nb;
			cap = cap ? cap * 2 : 4096;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int failed = 0;

	for (int i = 1; i < argc; i++) {
		int r = replay(argv[i]);

		printf("%sok %d - %s%s%s\n", r < 0 ? "not " : "", i, argv[i], r < 0 ? ": " : "",
		       r < 0 ? strerror(-r) : "");
		fflush(stdout);
		failed |= r < 0;
	}
	printf("1..%d\n", argc - 1);
	return failed;
}
