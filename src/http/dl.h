/* SPDX-License-Identifier: Apache-2.0 */
/* libmicrohttpd and GnuTLS, loaded on first use instead of linked: a role of the rdmak binary
 * that serves no HTTPS does not pay their shared objects (GnuTLS brings p11-kit, nettle,
 * hogweed, gmp, tasn1, idn2, unistring and ffi) in the dynamic loader at every exec, and the
 * per-pod binary (rdmak-cni and rdmak-ipam, src/pod.c) names neither library at all (docs/cni.md
 * has the figures). The HTTP server (the webhook's, the exporter's) loads both when it starts
 * (http_dl_load); the HTTPS client (src/httpc: the fabric manager's, the API server's) GnuTLS
 * alone (http_dl_load_gnutls), and only when it is used. One table, one loader: server.c, tls.c
 * and httpc/httpc.c include this after the libraries' headers, and their calls go through the
 * table loaded here. */
#ifndef RDMAK_HTTP_DL_H
#define RDMAK_HTTP_DL_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#define HTTP_DL_MHD    "libmicrohttpd.so.12"
#define HTTP_DL_GNUTLS "libgnutls.so.30"

/* every function of the two libraries that src/http calls */
/* an X-macro list, which clang-format 14 breaks inside X() */
/* clang-format off */
#define HTTP_DL_MHD_FUNCS(X)                                                                              \
	X(MHD_add_response_header) X(MHD_create_response_from_buffer) X(MHD_destroy_response)              \
	X(MHD_get_connection_info) X(MHD_get_daemon_info) X(MHD_lookup_connection_value)                  \
	X(MHD_queue_response) X(MHD_start_daemon) X(MHD_stop_daemon)                                     \
	X(MHD_get_connection_values) X(MHD_create_response_from_callback) X(MHD_suspend_connection)      \
	X(MHD_resume_connection)
#define HTTP_DL_GNUTLS_FUNCS(X)                                                                           \
	X(gnutls_pcert_deinit) X(gnutls_pcert_list_import_x509_raw) X(gnutls_privkey_deinit)               \
	X(gnutls_privkey_import_x509_raw) X(gnutls_privkey_init) X(gnutls_pubkey_deinit)                   \
	X(gnutls_pubkey_export2) X(gnutls_pubkey_import_privkey) X(gnutls_pubkey_init) X(gnutls_strerror)  \
	X(gnutls_x509_crt_deinit) X(gnutls_x509_crt_get_dn3) X(gnutls_x509_crt_get_expiration_time)        \
	X(gnutls_x509_crt_get_subject_alt_name) X(gnutls_x509_crt_import) X(gnutls_x509_crt_init)         \
	X(gnutls_handshake_set_hook_function) X(gnutls_system_recv_timeout) X(gnutls_transport_get_ptr)    \
	X(gnutls_transport_set_ptr2) X(gnutls_transport_set_pull_function)                                \
	X(gnutls_transport_set_pull_timeout_function)                                                     \
	X(gnutls_certificate_server_set_request) X(gnutls_session_set_verify_function)                    \
	X(gnutls_certificate_get_peers) X(gnutls_x509_trust_list_init) X(gnutls_x509_trust_list_deinit)   \
	X(gnutls_x509_trust_list_add_trust_mem) X(gnutls_x509_trust_list_verify_crt2)                     \
	X(gnutls_certificate_verification_status_print) X(gnutls_certificate_allocate_credentials)         \
	X(gnutls_certificate_free_credentials) X(gnutls_certificate_set_x509_trust_mem)                   \
	X(gnutls_certificate_set_x509_system_trust) X(gnutls_init) X(gnutls_deinit)                       \
	X(gnutls_set_default_priority) X(gnutls_credentials_set) X(gnutls_server_name_set)                \
	X(gnutls_session_set_verify_cert) X(gnutls_transport_set_int2) X(gnutls_handshake)                \
	X(gnutls_handshake_set_timeout) X(gnutls_record_set_timeout) X(gnutls_record_send)                \
	X(gnutls_record_recv) X(gnutls_error_is_fatal) X(gnutls_session_get_verify_cert_status)        \
	X(gnutls_record_check_pending) X(gnutls_certificate_set_x509_key_mem)
/* clang-format on */

#define HTTP_DL_FIELD(f) __typeof__(f) *f;
struct http_dl {
	HTTP_DL_MHD_FUNCS(HTTP_DL_FIELD)
	HTTP_DL_GNUTLS_FUNCS(HTTP_DL_FIELD)
	gnutls_free_function *gnutls_free; /* GnuTLS's gnutls_free is a variable */
};
#undef HTTP_DL_FIELD
extern struct http_dl http_dl;

/* Load both libraries and every function above, once per process (later calls return 0 at
 * once). -ENOENT with err naming the library, its Debian package and dlerror()'s words, or the
 * missing function; nothing of this call stays loaded then. */
int http_dl_load(char *err, size_t errlen);
/* GnuTLS alone (its functions above), for a TLS client; the same errors. */
int http_dl_load_gnutls(char *err, size_t errlen);
/* The same with other file names, for tests. */
int http_dl_load_from(const char *mhd, const char *gnutls, char *err, size_t errlen);
int http_dl_load_gnutls_from(const char *gnutls, char *err, size_t errlen);
/* Whether this program can load them: false in one linked statically (the per-pod binary,
 * src/pod.c), which has no dynamic loader of its own. A static program's dlopen() would bring in
 * the host's libc beside the one linked in, of whatever version the host has; the loaders above
 * refuse instead (-ENOENT, saying so), and a CNI request that needs TLS goes to the full rdmak. */
bool http_dl_possible(void);

#ifndef HTTP_DL_IMPL
#define HTTP_DL_CALL(f)			     (*http_dl.f)
#define MHD_add_response_header		     HTTP_DL_CALL(MHD_add_response_header)
#define MHD_create_response_from_buffer	     HTTP_DL_CALL(MHD_create_response_from_buffer)
#define MHD_destroy_response		     HTTP_DL_CALL(MHD_destroy_response)
#define MHD_get_connection_info		     HTTP_DL_CALL(MHD_get_connection_info)
#define MHD_get_daemon_info		     HTTP_DL_CALL(MHD_get_daemon_info)
#define MHD_lookup_connection_value	     HTTP_DL_CALL(MHD_lookup_connection_value)
#define MHD_queue_response		     HTTP_DL_CALL(MHD_queue_response)
#define MHD_start_daemon		     HTTP_DL_CALL(MHD_start_daemon)
#define MHD_stop_daemon			     HTTP_DL_CALL(MHD_stop_daemon)
#define MHD_get_connection_values	     HTTP_DL_CALL(MHD_get_connection_values)
#define MHD_create_response_from_callback    HTTP_DL_CALL(MHD_create_response_from_callback)
#define MHD_suspend_connection		     HTTP_DL_CALL(MHD_suspend_connection)
#define MHD_resume_connection		     HTTP_DL_CALL(MHD_resume_connection)
#define gnutls_pcert_deinit		     HTTP_DL_CALL(gnutls_pcert_deinit)
#define gnutls_pcert_list_import_x509_raw    HTTP_DL_CALL(gnutls_pcert_list_import_x509_raw)
#define gnutls_privkey_deinit		     HTTP_DL_CALL(gnutls_privkey_deinit)
#define gnutls_privkey_import_x509_raw	     HTTP_DL_CALL(gnutls_privkey_import_x509_raw)
#define gnutls_privkey_init		     HTTP_DL_CALL(gnutls_privkey_init)
#define gnutls_pubkey_deinit		     HTTP_DL_CALL(gnutls_pubkey_deinit)
#define gnutls_pubkey_export2		     HTTP_DL_CALL(gnutls_pubkey_export2)
#define gnutls_pubkey_import_privkey	     HTTP_DL_CALL(gnutls_pubkey_import_privkey)
#define gnutls_pubkey_init		     HTTP_DL_CALL(gnutls_pubkey_init)
#define gnutls_strerror			     HTTP_DL_CALL(gnutls_strerror)
#define gnutls_x509_crt_deinit		     HTTP_DL_CALL(gnutls_x509_crt_deinit)
#define gnutls_x509_crt_get_dn3		     HTTP_DL_CALL(gnutls_x509_crt_get_dn3)
#define gnutls_x509_crt_get_expiration_time  HTTP_DL_CALL(gnutls_x509_crt_get_expiration_time)
#define gnutls_x509_crt_get_subject_alt_name HTTP_DL_CALL(gnutls_x509_crt_get_subject_alt_name)
#define gnutls_x509_crt_import		     HTTP_DL_CALL(gnutls_x509_crt_import)
#define gnutls_x509_crt_init		     HTTP_DL_CALL(gnutls_x509_crt_init)
#define gnutls_handshake_set_hook_function   HTTP_DL_CALL(gnutls_handshake_set_hook_function)
#define gnutls_system_recv_timeout	     HTTP_DL_CALL(gnutls_system_recv_timeout)
#define gnutls_transport_get_ptr	     HTTP_DL_CALL(gnutls_transport_get_ptr)
#define gnutls_transport_set_ptr2	     HTTP_DL_CALL(gnutls_transport_set_ptr2)
#define gnutls_transport_set_pull_function   HTTP_DL_CALL(gnutls_transport_set_pull_function)
#define gnutls_transport_set_pull_timeout_function                                                 \
	HTTP_DL_CALL(gnutls_transport_set_pull_timeout_function)
#define gnutls_certificate_server_set_request HTTP_DL_CALL(gnutls_certificate_server_set_request)
#define gnutls_session_set_verify_function    HTTP_DL_CALL(gnutls_session_set_verify_function)
#define gnutls_certificate_get_peers	      HTTP_DL_CALL(gnutls_certificate_get_peers)
#define gnutls_x509_trust_list_init	      HTTP_DL_CALL(gnutls_x509_trust_list_init)
#define gnutls_x509_trust_list_deinit	      HTTP_DL_CALL(gnutls_x509_trust_list_deinit)
#define gnutls_x509_trust_list_add_trust_mem  HTTP_DL_CALL(gnutls_x509_trust_list_add_trust_mem)
#define gnutls_x509_trust_list_verify_crt2    HTTP_DL_CALL(gnutls_x509_trust_list_verify_crt2)
#define gnutls_certificate_verification_status_print                                               \
	HTTP_DL_CALL(gnutls_certificate_verification_status_print)
#define gnutls_certificate_allocate_credentials                                                    \
	HTTP_DL_CALL(gnutls_certificate_allocate_credentials)
#define gnutls_certificate_free_credentials   HTTP_DL_CALL(gnutls_certificate_free_credentials)
#define gnutls_certificate_set_x509_trust_mem HTTP_DL_CALL(gnutls_certificate_set_x509_trust_mem)
#define gnutls_certificate_set_x509_system_trust                                                   \
	HTTP_DL_CALL(gnutls_certificate_set_x509_system_trust)
#define gnutls_init			      HTTP_DL_CALL(gnutls_init)
#define gnutls_deinit			      HTTP_DL_CALL(gnutls_deinit)
#define gnutls_set_default_priority	      HTTP_DL_CALL(gnutls_set_default_priority)
#define gnutls_credentials_set		      HTTP_DL_CALL(gnutls_credentials_set)
#define gnutls_server_name_set		      HTTP_DL_CALL(gnutls_server_name_set)
#define gnutls_session_set_verify_cert	      HTTP_DL_CALL(gnutls_session_set_verify_cert)
#define gnutls_transport_set_int2	      HTTP_DL_CALL(gnutls_transport_set_int2)
#define gnutls_handshake		      HTTP_DL_CALL(gnutls_handshake)
#define gnutls_handshake_set_timeout	      HTTP_DL_CALL(gnutls_handshake_set_timeout)
#define gnutls_record_set_timeout	      HTTP_DL_CALL(gnutls_record_set_timeout)
#define gnutls_record_send		      HTTP_DL_CALL(gnutls_record_send)
#define gnutls_record_recv		      HTTP_DL_CALL(gnutls_record_recv)
#define gnutls_error_is_fatal		      HTTP_DL_CALL(gnutls_error_is_fatal)
#define gnutls_session_get_verify_cert_status HTTP_DL_CALL(gnutls_session_get_verify_cert_status)
#define gnutls_record_check_pending	      HTTP_DL_CALL(gnutls_record_check_pending)
#define gnutls_certificate_set_x509_key_mem   HTTP_DL_CALL(gnutls_certificate_set_x509_key_mem)
#undef gnutls_free
#define gnutls_free(a) ((*http_dl.gnutls_free)((void *)(a)), (a) = NULL)
#endif

#endif
