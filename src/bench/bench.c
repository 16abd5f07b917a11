/* Placeholder so the role table links while the role is being built; replaced by the role itself. */
#include <stdio.h>

#include "roles.h"

int bench_main(int argc, char **argv)
{
	fprintf(stderr, "rdmak bench: not built yet\n");
	return 2;
}
