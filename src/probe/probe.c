/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak probe: a container's liveness probe for rdmak's daemons. Each daemon touches its
 * --alive-file at every pass of its loop (daemon_loop_alive_file, at least once a second); the
 * kubelet execs `rdmak probe FILE` in the container, and a loop stuck for longer than
 * --max-age gets the container restarted. An exec probe, because the image has no shell and the
 * plugin, the doctor, the vf part and the CNI installer serve no HTTP. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "daemon/daemon.h"
#include "roles.h"
#include "util/fileio.h"
#include "util/opt.h"

enum { EXIT_ALIVE = 0, EXIT_NOT_ALIVE = 1, EXIT_USAGE = 2 };

static void usage(FILE *f)
{
	fputs("Usage: rdmak probe [--max-age SECONDS] FILE\n"
	      "Exit 0 when FILE, a daemon's --alive-file, was touched at most SECONDS ago (default 30):\n"
	      "the daemon's loop still turns. For a container's livenessProbe (exec).\n\n"
	      "  --max-age SECONDS  1 to 86400 (default 30)\n"
	      "  -h, --help\n\n"
	      "Exit: 0 alive, 1 not (too old, missing, not a regular file), 2 usage.\n",
	      f);
}

int probe_main(int argc, char **argv)
{
	static const struct option opts[] = { { "max-age", required_argument, NULL, 'm' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	unsigned long long max_age = 30;
	int64_t age = 0;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (opt_uint("probe", "--max-age", optarg, 1, 86400, "s", &max_age) < 0)
				return EXIT_USAGE;
			break;
		case 'h': usage(stdout); return EXIT_ALIVE;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		usage(stderr);
		return EXIT_USAGE;
	}
	r = daemon_alive_check(argv[optind], (int64_t)max_age * 1000, &age);
	if (r == -ESTALE)
		fprintf(stderr,
			"rdmak probe: %s: last touched %lld s ago (more than %llu s): the daemon's loop is stuck\n",
			argv[optind], (long long)(age / 1000), max_age);
	else if (r == -FILEIO_ENOTREG)
		fprintf(stderr, "rdmak probe: %s: not a regular file\n", argv[optind]);
	else if (r == -ENOENT)
		fprintf(stderr, "rdmak probe: %s: missing: the daemon has not started its loop\n",
			argv[optind]);
	else if (r < 0)
		fprintf(stderr, "rdmak probe: %s: %s\n", argv[optind], strerror(-r));
	return r < 0 ? EXIT_NOT_ALIVE : EXIT_ALIVE;
}
