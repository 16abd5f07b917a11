# SPDX-License-Identifier: Apache-2.0
# The pkg-config packages rdmak builds against, one list for the Makefile and tests/fuzz/Makefile
# (their Debian packages: tools/install-deps.sh).
PKGS := jansson libprotobuf-c grpc gpr libnl-route-3.0 libmicrohttpd gnutls yaml-0.1
# The unit tests' own: cmocka.
TEST_PKGS := cmocka
