/* placeholder until the k8s mode lands in this file */
#include <stdio.h>

#include "bench/bench.h"

int bench_k8s_main(int argc, char **argv)
{
	fprintf(stderr, "rdmak bench k8s: not built yet\n");
	return BENCH_EXIT_USAGE;
}
