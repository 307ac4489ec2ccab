/* balance.c: what the core offers the load balancers (lb/lb.h), and the
 * TOKEN message. A token travels as its thread-0 address and a copy of its
 * parameter frame; the sender frees its local copy (thesis 2.3: a token has no
 * activation frame yet, so it is free to migrate). */
#include <stdlib.h>
#include <string.h>

#include "core/rts.h"

void etc_balance_init(const char *name)
{
    etc_node_private *p = etc_rts.priv;
    p->lb = etc_lb_find(name);
    if (!p->lb)
        etc_fatal("unknown load balancer '%s'", name);
    p->rng = 0x9E3779B97F4A7C15ull ^ ((uint64_t)(etc_rts.node_id + 1) * 0xBF58476D1CE4E5B9ull);
    if (p->lb->init)
        p->lb->init();
}

double etc_balance_idle(void)
{
    return etc_rts.priv->lb->idle ? etc_rts.priv->lb->idle() : -1.0;
}

void *etc_lb_state(size_t size)
{
    etc_node_private *p = etc_rts.priv;
    if (!p->lb_state)
        p->lb_state = calloc(1, size);
    if (!p->lb_state)
        etc_fatal("out of memory (balancer state)");
    return p->lb_state;
}

size_t etc_lb_tokens(void)
{
    return etc_rts.tq.tail - etc_rts.tq.head;
}

int etc_lb_take_oldest(etc_tok *out)
{
    return etc_tq_pop_head(out);
}

void etc_lb_keep(etc_tok tok)
{
    etc_tq_push_head(tok);
}

int etc_lb_node(void)
{
    return etc_rts.node_id;
}

int etc_lb_nodes(void)
{
    return etc_rts.num_nodes;
}

int etc_lb_busy(void)
{
    return etc_work_here();
}

uint64_t etc_lb_random(void)
{
    uint64_t x = etc_rts.priv->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    etc_rts.priv->rng = x;
    return x;
}

double etc_lb_now(void)
{
    return etc_time();
}

void etc_lb_count_request_sent(void)
{
    ETC_PROF_ADD(requests_sent, 1);
}

void etc_lb_count_request_received(void)
{
    ETC_PROF_ADD(requests_received, 1);
}

void etc_lb_count_extra_token(void)
{
    ETC_PROF_ADD(extra_tokens, 1);
}

void etc_lb_send(int dest, int type, const void *body, size_t len)
{
    etc_send(dest, type, body, len, NULL, 0);
}

void etc_lb_send_token(int dest, etc_tok tok, int origin, int hops, int reply)
{
    etc_token_msg h = {
        .fn = (uint64_t)(uintptr_t)tok.fn,
        .size = (uint32_t)tok.size,
        .origin = origin,
        .hops = hops,
        .load = (int32_t)etc_lb_tokens(),
        .reply = reply,
        .pad = 0,
    };
    ETC_PROF_ADD(tokens_sent, 1);
    etc_send(dest, ETC_M_TOKEN, &h, sizeof h, tok.pp, tok.size);
    etc_block_free(tok.pp, tok.size);
}

void etc_balance_token_message(int src, const void *body, size_t len)
{
    etc_token_msg h;
    if (len < sizeof h)
        etc_fatal("malformed token message (%zu bytes) from node %d", len, src);
    memcpy(&h, body, sizeof h);
    if (h.size != len - sizeof h)
        etc_fatal("malformed token message (%zu bytes) from node %d", len, src);
    etc_tok tok = {(etc_thread)(uintptr_t)h.fn, etc_frame_alloc(h.size), h.size, 1};
    memcpy(tok.pp, (const char *)body + sizeof h, h.size);
    ETC_PROF_ADD(tokens_received, 1);
    etc_rts.priv->lb->token(src, &h, tok);
}
