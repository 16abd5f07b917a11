/* Inside of the kubelet transport: shared by kubelet.c (lifecycle, socket, inotify, threads),
 * rpc.c (the DevicePlugin service) and register.c (the Registration client). Nobody outside
 * src/kubelet/ includes this. */
#ifndef RDMAK_KUBELET_INTERNAL_H
#define RDMAK_KUBELET_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>

#include "kubelet/kubelet.h"

#define KL_API_VERSION "v1beta1"
#define KL_KUBELET_SOCK "kubelet.sock"
/* Register retry back-off: first and longest wait after a failed attempt. */
#define KL_RETRY_FIRST_MS 20
#define KL_RETRY_MAX_MS 5000

/* Every batch started on the server's completion queue carries one of these as its tag; the
 * completion-queue thread calls done() with the batch's success bit. */
struct kl_tag {
	void (*done)(struct kubelet_server *srv, struct kl_tag *tag, bool ok);
};

#define kl_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

struct kl_rpc;
struct kl_reg;

enum kl_state { KL_NEW, KL_RUNNING, KL_STOPPED };

struct kubelet_server {
	/* Configuration, copied at new(). */
	char *plugin_dir;   /* <kubelet_dir>/device-plugins */
	char *sock_path;    /* <plugin_dir>/<socket_name> */
	char *kubelet_sock; /* <plugin_dir>/kubelet.sock */
	char *socket_name;
	char *resource_name;
	bool preferred_allocation;
	bool prestart_required;
	struct kl_ops ops; /* NULL members replaced by the defaults */
	void *ud;
	kl_log_fn log;
	void *log_ud;
	struct kubelet_server *next_live; /* under kubelet.c's grpc_log_lock */
	bool grpc_up; /* grpc_init() done: free() owes a grpc_shutdown() */

	/* Everything below `lock` is shared by the caller's thread, the watch thread and the
	 * completion-queue thread. */
	pthread_mutex_t lock;
	enum kl_state state;
	bool stopping;
	struct kl_device *devs;
	size_t n_devs;
	unsigned dev_gen;     /* bumped by set_devices */
	grpc_slice list_msg;  /* ListAndWatchResponse for dev_gen, packed once */
	struct kl_rpc *streams; /* open ListAndWatch streams */
	unsigned pending;     /* tags started on cq and not yet completed */
	bool shutdown_done;
	bool cq_shut;
	struct kl_reg *reg;   /* Register call in flight, NULL if none */
	unsigned retry_ms;    /* next back-off for a failed Register */
	unsigned registrations;

	/* The plugin's callbacks run only on the completion-queue thread, hence one at a time, as
	 * kubelet.h promises; they are never called with `lock` held. */

	grpc_completion_queue *cq;
	grpc_server *server;
	grpc_server_credentials *server_creds;
	grpc_channel_credentials *chan_creds;
	void *methods[6];
	struct kl_tag shutdown_tag;

	/* Owned by the watch thread once it runs (by start/stop around it). */
	int listen_fd;
	int inotify_fd;
	int stop_fd;  /* eventfd: stop() wakes the watch thread */
	int timer_fd; /* timerfd: Register retry back-off */
	dev_t sock_dev;
	ino_t sock_ino;
	pthread_t cq_thread;
	pthread_t watch_thread;
};

void kl_logf(struct kubelet_server *srv, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Start a batch on a call bound to srv->cq, counting it in srv->pending. Caller holds lock. */
grpc_call_error kl_start_batch_locked(struct kubelet_server *srv, grpc_call *call, const grpc_op *ops,
				      size_t n, struct kl_tag *tag);

/* rpc.c */
int kl_rpc_register_methods(struct kubelet_server *srv);
int kl_rpc_request_all_locked(struct kubelet_server *srv);
/* Pack the device list into srv->list_msg and push it to every idle stream. Caller holds lock. */
int kl_rpc_devices_changed_locked(struct kubelet_server *srv);

/* register.c */
/* Register with the kubelet now (cancelling an attempt in flight), or, if kubelet.sock is
 * absent, remember to do it when it appears. Called on the watch thread or by start(). */
void kl_register_request(struct kubelet_server *srv);
void kl_register_cancel_locked(struct kubelet_server *srv);

#endif
