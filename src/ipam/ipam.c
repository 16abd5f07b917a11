/* Placeholder so the role table links while the role is being built; replaced by the role itself. */
#include <stdio.h>

#include "roles.h"

int ipam_main(int argc, char **argv)
{
	fprintf(stderr, "rdmak ipam: not built yet\n");
	return 2;
}
