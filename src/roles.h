/* Entry points of the roles of the multi-call binary. Each returns the process exit code. */
#ifndef RDMAK_ROLES_H
#define RDMAK_ROLES_H

int list_main(int argc, char **argv);
int snapshot_main(int argc, char **argv);
int plugin_main(int argc, char **argv);
int doctor_main(int argc, char **argv);
int cni_main(int argc, char **argv);
int ipam_main(int argc, char **argv);
int webhook_main(int argc, char **argv);
int bench_main(int argc, char **argv);

#endif
