/*
 * The cluster's network between the SoCs' NICs: switches, links with a
 * latency, a rate and an egress buffer, forwarding by destination MAC.
 * Driven in virtual time by the hub (hub.c): frames go in with the time
 * they left a NIC, and come out with the time they reach another.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ACCIO_FABRIC_H
#define ACCIO_FABRIC_H

#include <stdint.h>
#include <stdio.h>

#define FAB_NAME 64

enum { FAB_NODE = 0, FAB_SWITCH = 1 };

typedef struct {
    uint64_t frames, bytes, drops;
    uint64_t free_at;       /* when this direction's egress is next idle */
    uint64_t qdelay_max;    /* the longest wait in its egress queue (ns) */
} FabDir;

typedef struct {
    int kind[2], idx[2];    /* endpoint 0 and endpoint 1 */
    uint64_t lat_ns;
    uint64_t bps;           /* 0: no serialisation */
    uint64_t buf_bytes;     /* egress buffer of each direction (0: none) */
    FabDir dir[2];          /* dir[k]: from endpoint k to the other */
} FabLink;

typedef struct {
    char name[FAB_NAME];
    uint64_t delay_ns;      /* ingress to egress */
    int nlinks, *links;
    int nfwd;
    struct { uint64_t mac; int link; } *fwd;
    uint64_t filtered;      /* unicast back out of its ingress: dropped */
} FabSwitch;

typedef struct FabRecord FabRecord;

typedef struct {
    char name[FAB_NAME];
    uint64_t mac;
    int uplink;             /* its one link */
    FILE *pcap;             /* the frames its NIC sent and received */
    FabRecord *recs;        /* captured, not yet written (time < barrier) */
    int nrecs, caprecs;
    uint64_t sent, received, lost_gone;
    int gone;
} FabNode;

typedef struct FabEvent FabEvent;

/* a frame reaches node @node at virtual time @t */
typedef void FabDeliver(void *opaque, int node, uint64_t t,
                        const uint8_t *buf, uint32_t len);

typedef struct {
    int nnodes, nswitches, nlinks;
    FabNode *nodes;
    FabSwitch *switches;
    FabLink *links;
    FabEvent **heap;        /* frames at switches, by (time, seq) */
    int nheap, capheap;
    uint64_t seq;
    uint64_t lat_min;       /* the shortest node link */
    FabDeliver *deliver;
    void *opaque;
} Fabric;

/* endpoints are resolved and checked by the caller (hub.c reads the plan) */
void fab_init(Fabric *f, FabDeliver *deliver, void *opaque);
int fab_finish_setup(Fabric *f, char *err, size_t errlen);
int fab_open_pcap(Fabric *f, int node, const char *path);

/* node @node's NIC put a frame on its wire at @t */
void fab_send(Fabric *f, int node, uint64_t t, const uint8_t *buf,
              uint32_t len);
/* move every frame whose next step is before @horizon */
void fab_advance(Fabric *f, uint64_t horizon);
/* the earliest time a frame inside the network moves next (UINT64_MAX) */
uint64_t fab_next(const Fabric *f);
/* write each node's captured frames with a time before @upto */
void fab_flush(Fabric *f, uint64_t upto);
void fab_write_stats(Fabric *f, FILE *out);
void fab_free(Fabric *f);

#endif
