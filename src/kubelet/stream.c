/* SPDX-License-Identifier: Apache-2.0 */
/* Server-streaming calls that carry one state: every stream of a set gets the set's latest
 * message at once, and again whenever it changes, with at most one message in flight per
 * stream: a stream that is slow to read skips the states that came and went meanwhile and gets
 * the newest, never a queue of them. The device plugin's ListAndWatch (rpc.c) and DRA's
 * NodeWatchResources (dra.c) are such calls; each owner embeds a struct kubelet_stream in its
 * call, starts its batches on its own completion queue through set->start, and calls these
 * under the lock that guards the set. */
#include <grpc/byte_buffer.h>

#include "kubelet/internal.h"

void kubelet_stream_set_init(struct kubelet_stream_set *set, bool ready,
			     grpc_call_error (*start)(void *owner, grpc_call *call,
						      const grpc_op *ops, size_t n, void *tag),
			     void *owner)
{
	*set = (struct kubelet_stream_set){
		.msg = grpc_empty_slice(), .ready = ready, .start = start, .owner = owner
	};
}

void kubelet_stream_set_clear(struct kubelet_stream_set *set)
{
	grpc_slice_unref(set->msg);
	set->msg = grpc_empty_slice();
}

/* Send the current message unless this stream already has it or a send is in flight (that
 * send's completion calls us again). */
static void kick_locked(struct kubelet_stream_set *set, struct kubelet_stream *s)
{
	grpc_op ops[2] = { 0 };
	size_t n = 0;

	if (s->sending || s->dead || s->closed || !set->ready || s->sent_gen == set->gen)
		return;
	s->out = grpc_raw_byte_buffer_create(&set->msg, 1);
	if (!s->md_sent)
		ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[n].op = GRPC_OP_SEND_MESSAGE;
	ops[n++].data.send_message.send_message = s->out;
	if (set->start(set->owner, s->call, ops, n, s->send_tag) != GRPC_CALL_OK) {
		grpc_byte_buffer_destroy(s->out);
		s->out = NULL;
		s->dead = true;
		return;
	}
	s->md_sent = true;
	s->sending = true;
	s->sent_gen = set->gen;
}

static void unlink_locked(struct kubelet_stream_set *set, struct kubelet_stream *s)
{
	for (struct kubelet_stream **pp = &set->head; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			return;
		}
}

void kubelet_stream_add_locked(struct kubelet_stream_set *set, struct kubelet_stream *s)
{
	s->next = set->head;
	set->head = s;
	s->sent_gen = set->gen - 1; /* every new stream starts with the current message */
	kick_locked(set, s);
}

void kubelet_stream_publish_locked(struct kubelet_stream_set *set, grpc_slice msg)
{
	grpc_slice_unref(set->msg);
	set->msg = msg;
	set->gen++;
	set->ready = true;
	for (struct kubelet_stream *s = set->head; s; s = s->next)
		kick_locked(set, s);
}

bool kubelet_stream_sent_locked(struct kubelet_stream_set *set, struct kubelet_stream *s, bool ok)
{
	s->sending = false;
	grpc_byte_buffer_destroy(s->out);
	s->out = NULL;
	if (!ok)
		s->dead = true;
	kick_locked(set, s);
	if (!s->closed || s->sending)
		return false;
	unlink_locked(set, s);
	return true;
}

bool kubelet_stream_closed_locked(struct kubelet_stream_set *set, struct kubelet_stream *s)
{
	s->closed = true;
	if (s->sending)
		return false;
	unlink_locked(set, s);
	return true;
}

size_t kubelet_stream_count_locked(const struct kubelet_stream_set *set)
{
	size_t n = 0;

	for (const struct kubelet_stream *s = set->head; s; s = s->next)
		n++;
	return n;
}
