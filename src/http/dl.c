/* SPDX-License-Identifier: Apache-2.0 */
/* Loading libmicrohttpd and GnuTLS on first use: see dl.h. */
#define HTTP_DL_IMPL
#include "http/dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

struct http_dl http_dl;

static pthread_mutex_t dl_lock = PTHREAD_MUTEX_INITIALIZER;
/* each library once per process; a loaded one stays */
static bool mhd_loaded, gnutls_loaded;

/* sym from h into *slot (a function or data pointer of any type); false when absent */
static bool load_sym(void *h, const char *sym, void *slot)
{
	void *p = dlsym(h, sym);

	if (!p)
		return false;
	memcpy(slot, &p, sizeof(p));
	return true;
}

bool http_dl_possible(void)
{
	/* the kernel passes the interpreter's address; a static program was started without one */
	return getauxval(AT_BASE) != 0;
}

static void *open_lib(const char *name, const char *package, char *err, size_t errlen)
{
	void *h;

	if (!http_dl_possible()) {
		snprintf(err, errlen, "cannot load %s: this program is linked statically", name);
		return NULL;
	}
	h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();

		snprintf(err, errlen, "cannot load %s%s%s%s: %s", name,
			 package ? " (Debian package " : "", package ? package : "",
			 package ? ")" : "", why ? why : "unknown error");
	}
	return h;
}

/* The libraries not loaded yet (mhd NULL: GnuTLS alone), all of them or none: a failure closes
 * what this call opened and leaves the table as it was. Called with dl_lock held. */
static int load_locked(const char *mhd, const char *gnutls, char *err, size_t errlen)
{
	struct http_dl t = http_dl;
	void *hm = NULL, *hg = NULL;
	const char *missing = NULL, *from = NULL;

	if (mhd && !mhd_loaded &&
	    !(hm = open_lib(mhd, strcmp(mhd, HTTP_DL_MHD) == 0 ? "libmicrohttpd12" : NULL, err,
			    errlen)))
		return -ENOENT;
	if (!gnutls_loaded &&
	    !(hg = open_lib(gnutls, strcmp(gnutls, HTTP_DL_GNUTLS) == 0 ? "libgnutls30" : NULL, err,
			    errlen)))
		goto fail;
#define HTTP_DL_LOAD_MHD(f)                                                                        \
	if (hm && !missing && !load_sym(hm, #f, &t.f)) {                                           \
		missing = #f;                                                                      \
		from = mhd;                                                                        \
	}
#define HTTP_DL_LOAD_GNUTLS(f)                                                                     \
	if (hg && !missing && !load_sym(hg, #f, &t.f)) {                                           \
		missing = #f;                                                                      \
		from = gnutls;                                                                     \
	}
	HTTP_DL_MHD_FUNCS(HTTP_DL_LOAD_MHD)
	HTTP_DL_GNUTLS_FUNCS(HTTP_DL_LOAD_GNUTLS)
	HTTP_DL_LOAD_GNUTLS(gnutls_free)
#undef HTTP_DL_LOAD_MHD
#undef HTTP_DL_LOAD_GNUTLS
	if (missing) {
		snprintf(err, errlen, "%s has no %s (a version older than rdmak was built for?)",
			 from, missing);
		goto fail;
	}
	http_dl = t;
	mhd_loaded |= hm != NULL;
	gnutls_loaded |= hg != NULL;
	return 0;
fail:
	if (hg)
		dlclose(hg);
	if (hm)
		dlclose(hm);
	return -ENOENT;
}

int http_dl_load_from(const char *mhd, const char *gnutls, char *err, size_t errlen)
{
	int r;

	pthread_mutex_lock(&dl_lock);
	r = load_locked(mhd, gnutls, err, errlen);
	pthread_mutex_unlock(&dl_lock);
	return r;
}

int http_dl_load_gnutls_from(const char *gnutls, char *err, size_t errlen)
{
	return http_dl_load_from(NULL, gnutls, err, errlen);
}

int http_dl_load(char *err, size_t errlen)
{
	return http_dl_load_from(HTTP_DL_MHD, HTTP_DL_GNUTLS, err, errlen);
}

int http_dl_load_gnutls(char *err, size_t errlen)
{
	return http_dl_load_gnutls_from(HTTP_DL_GNUTLS, err, errlen);
}
