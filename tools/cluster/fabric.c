/*
 * The cluster's network: a discrete-event model of switches and links.
 *
 * A frame enters at the time its NIC sent it, reaches its switch one link
 * latency later, waits in the egress queue of each link it leaves by
 * (serialised at the link's rate; dropped when the queue holds more than
 * the link's buffer) and reaches the next switch or the destination NIC
 * one latency after it left. A switch forwards by destination MAC
 * (fixed tables from the topology's tree) and floods what it has no entry
 * for (broadcast, multicast, unknown) to every other link.
 *
 * Order: events are taken by (time, sequence number), and sequence numbers
 * are given in the order frames come in, which the hub makes the nodes'
 * order, so equal inputs give equal outputs, byte for byte.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"

struct FabEvent {
    uint64_t t, seq;
    int sw, via;            /* at switch @sw, in by link @via */
    uint32_t len;
    uint8_t data[];
};

struct FabRecord {
    uint64_t t, seq;
    uint32_t len;
    uint8_t *data;
};

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        perror("accio-switch");
        exit(2);
    }
    return p;
}

void fab_init(Fabric *f, FabDeliver *deliver, void *opaque)
{
    memset(f, 0, sizeof(*f));
    f->deliver = deliver;
    f->opaque = opaque;
}

int fab_finish_setup(Fabric *f, char *err, size_t errlen)
{
    f->lat_min = UINT64_MAX;
    for (int n = 0; n < f->nnodes; n++) {
        f->nodes[n].uplink = -1;
    }
    for (int l = 0; l < f->nlinks; l++) {
        FabLink *k = &f->links[l];

        for (int e = 0; e < 2; e++) {
            if (k->idx[e] < 0 || k->idx[e] >= (k->kind[e] == FAB_NODE ?
                                               f->nnodes : f->nswitches)) {
                snprintf(err, errlen, "link %d: no %s %d", l,
                         k->kind[e] == FAB_NODE ? "node" : "switch", k->idx[e]);
                return -1;
            }
        }
        if (!k->lat_ns) {
            snprintf(err, errlen, "link %d has no latency", l);
            return -1;
        }
        for (int e = 0; e < 2; e++) {
            if (k->kind[e] == FAB_NODE) {
                if (f->nodes[k->idx[e]].uplink >= 0) {
                    snprintf(err, errlen, "node %s has two links",
                             f->nodes[k->idx[e]].name);
                    return -1;
                }
                f->nodes[k->idx[e]].uplink = l;
                if (k->lat_ns < f->lat_min) {
                    f->lat_min = k->lat_ns;
                }
            } else {
                FabSwitch *s = &f->switches[k->idx[e]];

                s->links = xrealloc(s->links, (s->nlinks + 1) * sizeof(int));
                s->links[s->nlinks++] = l;
            }
        }
        if (k->kind[0] == FAB_NODE && k->kind[1] == FAB_NODE) {
            snprintf(err, errlen, "link %d joins two nodes", l);
            return -1;
        }
    }
    for (int i = 0; i < f->nswitches; i++) {
        FabSwitch *s = &f->switches[i];

        for (int k = 0; k < s->nfwd; k++) {
            int ok = 0;

            for (int j = 0; j < s->nlinks; j++) {
                ok |= s->links[j] == s->fwd[k].link;
            }
            if (!ok) {
                snprintf(err, errlen, "switch %s forwards to link %d, not "
                         "one of its own", s->name, s->fwd[k].link);
                return -1;
            }
        }
    }
    for (int n = 0; n < f->nnodes; n++) {
        if (f->nodes[n].uplink < 0) {
            snprintf(err, errlen, "node %s has no link", f->nodes[n].name);
            return -1;
        }
    }
    return 0;
}

int fab_open_pcap(Fabric *f, int node, const char *path)
{
    /* nanosecond pcap, Ethernet */
    struct {
        uint32_t magic;
        uint16_t major, minor;
        int32_t zone;
        uint32_t sigfigs, snaplen, linktype;
    } hdr = { 0xa1b23c4d, 2, 4, 0, 0, 65535, 1 };
    FILE *p = fopen(path, "wb");

    if (!p || fwrite(&hdr, sizeof(hdr), 1, p) != 1) {
        return -1;
    }
    f->nodes[node].pcap = p;
    return 0;
}

/* ---- the event heap ----------------------------------------------------- */

static int ev_before(const FabEvent *a, const FabEvent *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_push(Fabric *f, FabEvent *e)
{
    int i;

    if (f->nheap == f->capheap) {
        f->capheap = f->capheap ? 2 * f->capheap : 64;
        f->heap = xrealloc(f->heap, f->capheap * sizeof(*f->heap));
    }
    i = f->nheap++;
    while (i && ev_before(e, f->heap[(i - 1) / 2])) {
        f->heap[i] = f->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    f->heap[i] = e;
}

static FabEvent *heap_pop(Fabric *f)
{
    FabEvent *top = f->heap[0], *last = f->heap[--f->nheap];
    int i = 0;

    for (;;) {
        int c = 2 * i + 1;

        if (c >= f->nheap) {
            break;
        }
        if (c + 1 < f->nheap && ev_before(f->heap[c + 1], f->heap[c])) {
            c++;
        }
        if (!ev_before(f->heap[c], last)) {
            break;
        }
        f->heap[i] = f->heap[c];
        i = c;
    }
    if (f->nheap) {
        f->heap[i] = last;
    }
    return top;
}

uint64_t fab_next(const Fabric *f)
{
    return f->nheap ? f->heap[0]->t : UINT64_MAX;
}

/* ---- captures ----------------------------------------------------------- */

static void capture(Fabric *f, FabNode *n, uint64_t t, const uint8_t *buf,
                    uint32_t len)
{
    FabRecord *r;

    if (!n->pcap) {
        return;
    }
    if (n->nrecs == n->caprecs) {
        n->caprecs = n->caprecs ? 2 * n->caprecs : 64;
        n->recs = xrealloc(n->recs, n->caprecs * sizeof(*n->recs));
    }
    r = &n->recs[n->nrecs++];
    r->t = t;
    r->seq = f->seq++;
    r->len = len;
    r->data = xrealloc(NULL, len);
    memcpy(r->data, buf, len);
}

static int rec_cmp(const void *a, const void *b)
{
    const FabRecord *x = a, *y = b;

    if (x->t != y->t) {
        return x->t < y->t ? -1 : 1;
    }
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void fab_flush(Fabric *f, uint64_t upto)
{
    for (int i = 0; i < f->nnodes; i++) {
        FabNode *n = &f->nodes[i];
        int k = 0;

        if (!n->pcap || !n->nrecs) {
            continue;
        }
        qsort(n->recs, n->nrecs, sizeof(*n->recs), rec_cmp);
        for (; k < n->nrecs && n->recs[k].t < upto; k++) {
            FabRecord *r = &n->recs[k];
            uint32_t hdr[4] = { r->t / 1000000000u, r->t % 1000000000u,
                                r->len, r->len };

            fwrite(hdr, sizeof(hdr), 1, n->pcap);
            fwrite(r->data, r->len, 1, n->pcap);
            free(r->data);
        }
        memmove(n->recs, n->recs + k, (n->nrecs - k) * sizeof(*n->recs));
        n->nrecs -= k;
        fflush(n->pcap);
    }
}

/* ---- forwarding --------------------------------------------------------- */

static uint64_t mac_of(const uint8_t *p)
{
    uint64_t m = 0;

    for (int i = 0; i < 6; i++) {
        m = m << 8 | p[i];
    }
    return m;
}

/* the link's far end from endpoint kind/idx, and the direction taken */
static int link_dir(const FabLink *k, int kind, int idx)
{
    return k->kind[0] == kind && k->idx[0] == idx ? 0 : 1;
}

/*
 * A frame leaves by link @l in direction @d, ready at @t; a switch port
 * serialises it at the link's rate (@serialise), a NIC has already.
 */
static void egress(Fabric *f, int l, int d, uint64_t t, const uint8_t *buf,
                   uint32_t len, bool serialise)
{
    FabLink *k = &f->links[l];
    FabDir *dir = &k->dir[d];
    uint64_t start = t > dir->free_at ? t : dir->free_at;
    uint64_t bps = serialise ? k->bps : 0;
    uint64_t at;
    int far = !d;

    if (bps) {
        /* what waits ahead of it, in bytes, against the buffer */
        if (k->buf_bytes &&
            (start - t) * (bps / 8) > k->buf_bytes * 1000000000ull) {
            dir->drops++;
            return;
        }
        dir->free_at = start + (uint64_t)len * 8 * 1000000000ull / bps;
        if (start - t > dir->qdelay_max) {
            dir->qdelay_max = start - t;
        }
    } else {
        dir->free_at = start;
    }
    dir->frames++;
    dir->bytes += len;
    at = dir->free_at + k->lat_ns;
    if (k->kind[far] == FAB_NODE) {
        FabNode *n = &f->nodes[k->idx[far]];

        if (n->gone) {
            n->lost_gone++;
            return;
        }
        n->received++;
        capture(f, n, at, buf, len);
        f->deliver(f->opaque, k->idx[far], at, buf, len);
    } else {
        FabEvent *e = xrealloc(NULL, sizeof(*e) + len);

        e->t = at;
        e->seq = f->seq++;
        e->sw = k->idx[far];
        e->via = l;
        e->len = len;
        memcpy(e->data, buf, len);
        heap_push(f, e);
    }
}

void fab_send(Fabric *f, int node, uint64_t t, const uint8_t *buf,
              uint32_t len)
{
    FabNode *n = &f->nodes[node];
    FabLink *k = &f->links[n->uplink];
    int d = link_dir(k, FAB_NODE, node);

    n->sent++;
    capture(f, n, t, buf, len);
    if (len < 14) {
        k->dir[d].drops++;      /* a runt: no Ethernet header to forward on */
        return;
    }
    egress(f, n->uplink, d, t, buf, len, false);
}

static void at_switch(Fabric *f, FabEvent *e)
{
    FabSwitch *s = &f->switches[e->sw];
    uint64_t dst = mac_of(e->data);
    uint64_t ready = e->t + s->delay_ns;
    int out = -1;

    if (!(e->data[0] & 1)) {
        for (int i = 0; i < s->nfwd; i++) {
            if (s->fwd[i].mac == dst) {
                out = s->fwd[i].link;
                break;
            }
        }
    }
    if (out == e->via) {
        s->filtered++;
        return;
    }
    if (out >= 0) {
        egress(f, out, link_dir(&f->links[out], FAB_SWITCH, e->sw), ready,
               e->data, e->len, true);
        return;
    }
    for (int i = 0; i < s->nlinks; i++) {
        int l = s->links[i];

        if (l != e->via) {
            egress(f, l, link_dir(&f->links[l], FAB_SWITCH, e->sw), ready,
                   e->data, e->len, true);
        }
    }
}

void fab_advance(Fabric *f, uint64_t horizon)
{
    while (f->nheap && f->heap[0]->t < horizon) {
        FabEvent *e = heap_pop(f);

        at_switch(f, e);
        free(e);
    }
}

void fab_write_stats(Fabric *f, FILE *out)
{
    fprintf(out, "  \"nodes\": {");
    for (int i = 0; i < f->nnodes; i++) {
        FabNode *n = &f->nodes[i];

        fprintf(out, "%s\n    \"%s\": {\"sent\": %" PRIu64 ", \"received\": %"
                PRIu64 ", \"lost_departed\": %" PRIu64 "}", i ? "," : "",
                n->name, n->sent, n->received, n->lost_gone);
    }
    fprintf(out, "\n  },\n  \"switches\": {");
    for (int i = 0; i < f->nswitches; i++) {
        fprintf(out, "%s\n    \"%s\": {\"filtered\": %" PRIu64 "}",
                i ? "," : "", f->switches[i].name, f->switches[i].filtered);
    }
    fprintf(out, "\n  },\n  \"links\": [");
    for (int l = 0; l < f->nlinks; l++) {
        FabLink *k = &f->links[l];

        for (int d = 0; d < 2; d++) {
            const char *from = k->kind[d] == FAB_NODE ?
                f->nodes[k->idx[d]].name : f->switches[k->idx[d]].name;
            const char *to = k->kind[!d] == FAB_NODE ?
                f->nodes[k->idx[!d]].name : f->switches[k->idx[!d]].name;

            fprintf(out, "%s\n    {\"from\": \"%s\", \"to\": \"%s\", "
                    "\"frames\": %" PRIu64 ", \"bytes\": %" PRIu64
                    ", \"drops\": %" PRIu64 ", \"queue_max_ns\": %" PRIu64 "}",
                    l || d ? "," : "", from, to, k->dir[d].frames,
                    k->dir[d].bytes, k->dir[d].drops, k->dir[d].qdelay_max);
        }
    }
    fprintf(out, "\n  ]");
}

void fab_free(Fabric *f)
{
    for (int i = 0; i < f->nnodes; i++) {
        for (int k = 0; k < f->nodes[i].nrecs; k++) {
            free(f->nodes[i].recs[k].data);
        }
        free(f->nodes[i].recs);
        if (f->nodes[i].pcap) {
            fclose(f->nodes[i].pcap);
        }
    }
    for (int i = 0; i < f->nswitches; i++) {
        free(f->switches[i].links);
        free(f->switches[i].fwd);
    }
    while (f->nheap) {
        free(heap_pop(f));
    }
    free(f->heap);
    free(f->nodes);
    free(f->switches);
    free(f->links);
}
