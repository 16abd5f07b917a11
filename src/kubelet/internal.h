/* SPDX-License-Identifier: Apache-2.0 */
/* Inside of the kubelet transport: shared by kubelet.c (the hub: the folder watch, the threads,
 * our sockets), rpc.c (the DevicePlugin service), register.c (the Registration client),
 * dra.c (the DRA plugin's services) and stream.c (the server-streaming calls of rpc.c and dra.c).
 * Nobody outside src/kubelet/ includes this. */
#ifndef RDMAK_KUBELET_INTERNAL_H
#define RDMAK_KUBELET_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>

#include "kubelet/kubelet.h"

#define KL_API_VERSION	"v1beta1"
#define KL_KUBELET_SOCK "kubelet.sock"
/* Register retry back-off: first and longest wait after a failed attempt. */
#define KL_RETRY_FIRST_MS 20
#define KL_RETRY_MAX_MS	  5000

/* Every batch started on the hub's completion queue carries one of these as its tag; the
 * completion-queue thread calls done() with the batch's success bit. */
struct kubelet_tag {
	void (*done)(struct kubelet_server *srv, struct kubelet_tag *tag, bool ok);
	struct kubelet_server *srv;
};

#define kubelet_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

struct kubelet_rpc;
struct kubelet_reg;

/* stream.c: server-streaming calls that carry one state (ListAndWatch, NodeWatchResources). A
 * stream is embedded in its owner's call, linked in a set while open; every function below is
 * called with the lock that guards the set held. */
struct kubelet_stream {
	struct kubelet_stream *next;
	grpc_call *call;
	void *send_tag; /* the owner's tag: its completion calls kubelet_stream_sent_locked() */
	grpc_byte_buffer *out;
	unsigned sent_gen;
	bool md_sent;
	bool sending;
	bool dead;   /* a send failed: the stream is going away */
	bool closed; /* RECV_CLOSE_ON_SERVER completed */
};

struct kubelet_stream_set {
	struct kubelet_stream *head;
	grpc_slice msg; /* the latest message, packed once for every stream */
	unsigned gen;	/* bumped by publish */
	bool ready;	/* a message exists: a stream opened before waits for the first one */
	/* Start a batch on the owner's queue; an error marks the stream dead. */
	grpc_call_error (*start)(void *owner, grpc_call *call, const grpc_op *ops, size_t n,
				 void *tag);
	void *owner;
};

void kubelet_stream_set_init(struct kubelet_stream_set *set, bool ready,
			     grpc_call_error (*start)(void *owner, grpc_call *call,
						      const grpc_op *ops, size_t n, void *tag),
			     void *owner);
void kubelet_stream_set_clear(struct kubelet_stream_set *set);
/* s->call has its RECV_CLOSE_ON_SERVER started: link it and send it the current message. */
void kubelet_stream_add_locked(struct kubelet_stream_set *set, struct kubelet_stream *s);
/* Take msg as the set's message and send it to every stream. */
void kubelet_stream_publish_locked(struct kubelet_stream_set *set, grpc_slice msg);
/* A send finished / the call closed: true when s is unlinked and done, for the owner to free. */
bool kubelet_stream_sent_locked(struct kubelet_stream_set *set, struct kubelet_stream *s, bool ok);
bool kubelet_stream_closed_locked(struct kubelet_stream_set *set, struct kubelet_stream *s);
size_t kubelet_stream_count_locked(const struct kubelet_stream_set *set);
struct kubelet_dir_watch;

/* A job for the hub's worker thread. */
struct kubelet_work {
	void (*run)(struct kubelet_work *w);
	struct kubelet_work *next;
};

/* Where gRPC core's log lines go: the oldest sink added and not removed. */
struct kubelet_log_sink {
	kubelet_log_fn log;
	void *ud;
	struct kubelet_log_sink *next;
};
void kubelet_log_sink_add(struct kubelet_log_sink *s);
void kubelet_log_sink_remove(struct kubelet_log_sink *s);

/* Does a live process listen on the unix socket at path? 1 (with its pid, 0 if unknown), 0 when
 * nobody does (no file, or a stale socket left by a process that died), <0 error. */
int kubelet_socket_owner(const char *path, pid_t *pid);

/* One per process: what every server shares. */
struct kubelet {
	char *plugin_dir;   /* <kubelet_dir>/device-plugins */
	char *kubelet_sock; /* <plugin_dir>/kubelet.sock */
	kubelet_log_fn log;
	void *log_ud;
	struct kubelet_log_sink sink; /* gRPC's log lines, under kubelet.c's grpc_log_lock */
	bool grpc_up;		      /* grpc_init() done: free() owes a grpc_shutdown() */
	grpc_server_credentials *server_creds;
	grpc_channel_credentials *chan_creds;
	/* Every server's batches complete here, drained by one thread: an event is handled by the
	 * thread that polled it, never handed from one server's thread to another's. */
	grpc_completion_queue *cq;

	/* The watch thread's: one inotify instance for the kubelet folder and the caller's
	 * folders, an epoll set over it, the wake eventfd and every server's listening socket. */
	int epoll_fd;
	int inotify_fd;
	int wake_fd;
	int plugin_wd; /* watch on plugin_dir, -1 none yet */

	pthread_mutex_t
		lock; /* the server list, the folder watches, stopping; before any srv->lock */
	struct kubelet_server *servers;
	uint64_t next_id;
	struct kubelet_dir_watch *watches;
	bool stopping;
	bool threads_up;
	pthread_t watch_thread;
	pthread_t cq_thread;

	/* GetPreferredAllocation runs on a worker thread of its own, so that a big one (the
	 * kubelet may offer 100000 ids) never holds up an Allocate on the queue thread. */
	pthread_t worker_thread;
	pthread_mutex_t work_lock;
	pthread_cond_t work_cond;
	struct kubelet_work *work_head, **work_tail;
	bool work_stop;
};

enum kubelet_state { KL_NEW, KL_RUNNING, KL_STOPPED };

struct kubelet_server {
	struct kubelet *k;
	uint64_t id;		     /* epoll's key for our listening socket */
	struct kubelet_server *next; /* in k->servers, under k->lock */
	/* Configuration, copied at new(). */
	char *sock_path; /* <plugin_dir>/<socket_name> */
	char *socket_name;
	char *resource_name;
	bool preferred_allocation;
	bool prestart_required;
	struct kubelet_ops ops; /* NULL members replaced by the defaults */
	void *ud;
	kubelet_log_fn log;
	void *log_ud;

	/* Everything below `lock` is shared by the caller's thread, the watch thread and the
	 * completion-queue thread. */
	pthread_mutex_t lock;
	pthread_cond_t idle; /* signalled when pending drops to 0 while stopping */
	enum kubelet_state state;
	bool stopping;
	struct kubelet_device *devs;
	size_t n_devs;
	struct kubelet_stream_set streams; /* open ListAndWatch streams and their list */
	unsigned pending;		   /* tags started on the queue and not yet completed */
	struct kubelet_reg *reg;	   /* Register call in flight, NULL if none */
	unsigned retry_ms;		   /* next back-off for a failed Register */
	int64_t retry_at; /* CLOCK_MONOTONIC ms of the next Register attempt, 0 none */
	unsigned registrations;

	/* The plugin's callbacks run on the completion-queue thread (allocate, prestart) and on the
	 * worker thread (preferred), each one at a time, as kubelet.h promises; they are never
	 * called with `lock` held. */

	grpc_server *server;
	void *methods[6];
	struct kubelet_tag shutdown_tag;

	/* The watch thread's once the server is listed (under k->lock). */
	int listen_fd;
	dev_t sock_dev;
	ino_t sock_ino;
	bool ev_ours_gone; /* inotify: a file of our socket's name went away */
	bool registering;  /* start() was called: register now and after every kubelet restart */
};

void kubelet_logf(struct kubelet_server *srv, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void kubelet_hub_logf(struct kubelet *k, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Start a batch on a call bound to the hub's queue, counting it in srv->pending. Caller holds
 * srv->lock. */
grpc_call_error kubelet_start_batch_locked(struct kubelet_server *srv, grpc_call *call,
					   const grpc_op *ops, size_t n, struct kubelet_tag *tag);
/* Queue w for the worker thread. */
void kubelet_work_push(struct kubelet *k, struct kubelet_work *w);
/* Wake the watch thread (a Register retry was scheduled, or stop). */
void kubelet_hub_wake(struct kubelet *k);
int64_t kubelet_now_ms(void);

/* rpc.c */
int kubelet_rpc_register_methods(struct kubelet_server *srv);
int kubelet_rpc_request_all_locked(struct kubelet_server *srv);
void kubelet_rpc_streams_init(struct kubelet_server *srv);
/* Pack the device list and send it to every ListAndWatch stream. Caller holds lock. */
int kubelet_rpc_devices_changed_locked(struct kubelet_server *srv);

/* register.c */
/* Register with the kubelet now (cancelling an attempt in flight), or, if kubelet.sock is
 * absent, remember to do it when it appears; nothing before start(). Called on the watch
 * thread, or by start(), with k->lock held. */
void kubelet_register_request(struct kubelet_server *srv);
void kubelet_register_cancel_locked(struct kubelet_server *srv);

#endif
