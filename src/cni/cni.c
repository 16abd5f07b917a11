/* Placeholder so the role table links while the role is being built; replaced by the role itself. */
#include <stdio.h>

#include "roles.h"

int cni_main(int argc, char **argv)
{
	fprintf(stderr, "rdmak cni: not built yet\n");
	return 2;
}
