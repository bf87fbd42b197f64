/*
 * Accio NIC: the normal traffic path of the Accio SoC, IceNIC-style.
 *
 * Software posts send requests (address, length) and receive buffers
 * (address) in request queues. The NIC moves whole Ethernet frames between
 * guest memory and the wire and reports every finished transfer in a
 * completion queue, with a hardware timestamp. Unlike IceNIC, many receive
 * buffers can be posted at once.
 *
 * Timing runs on QEMU's virtual clock: a DMA transfer costs
 * ceil(bytes / bus width) bus cycles, every frame passes a fixed pipeline
 * latency, and the wire serialises frames at the link rate (with preamble,
 * FCS and inter-frame gap). The register layout is generated from
 * hardware/regmap/accio_nic.rdl.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "qemu/module.h"
#include "qemu/plugin.h"
#include "qapi/error.h"
#include "hw/irq.h"
#include "hw/sysbus.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "system/dma.h"
#include "hw/accio/accio_contract.h"
#include "hw/accio/accio_port.h"
#include "hw/accio/accio_nic.h"

#define ETH_MIN_FRAME 60        /* without FCS */
#define ETH_MAX_FRAME 1518      /* with one VLAN tag, without FCS */
#define WIRE_OVERHEAD 24        /* preamble + SFD 8, FCS 4, gap 12 */

static void accio_nic_reset_queues(AccioNICState *s);

static uint64_t accio_now(void)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

/* the bus's clock: its own when set, else the SoC's */
static uint64_t accio_bus_hz(AccioNICState *s)
{
    return s->bus_freq_hz ? s->bus_freq_hz :
           NANOSECONDS_PER_SECOND / accio_soc_cycle_ns();
}

static uint64_t accio_pipeline_ns(AccioNICState *s)
{
    return accio_soc_cycles_ns(s->pipeline_cycles);
}

static uint64_t accio_bus_ns(AccioNICState *s, uint32_t bytes)
{
    uint64_t beats = DIV_ROUND_UP((uint64_t)bytes * 8, s->bus_width_bits);

    return muldiv64(beats, NANOSECONDS_PER_SECOND, accio_bus_hz(s));
}

static uint64_t accio_wire_ns(AccioNICState *s, uint32_t bytes)
{
    bytes = MAX(bytes, ETH_MIN_FRAME);      /* short frames leave padded */
    return muldiv64((uint64_t)(bytes + WIRE_OVERHEAD) * 8, 1000, s->link_mbps);
}

/* Reserve the DMA engine for @bytes starting no earlier than @t. */
static uint64_t accio_dma(AccioNICState *s, uint64_t t, uint32_t bytes)
{
    uint64_t start = MAX(t, s->bus_free_at);

    s->bus_free_at = start + accio_bus_ns(s, bytes);
    return s->bus_free_at;
}

static uint32_t accio_tx_used(AccioNICState *s)
{
    return s->tx_inflight.count + s->tx_comp.count;
}

static uint32_t accio_rx_used(AccioNICState *s)
{
    return s->rx_posted.count + s->rx_comp.count;
}

/* Fixed-size rings of 64-bit words. */
static void ring_push(AccioRing *r, uint64_t a, uint64_t b)
{
    uint32_t i = (r->head + r->count) % ACCIO_NIC_MAX_DEPTH;

    r->a[i] = a;
    r->b[i] = b;
    r->count++;
}

static void ring_pop(AccioRing *r, uint64_t *a, uint64_t *b)
{
    *a = r->a[r->head];
    if (b) {
        *b = r->b[r->head];
    }
    r->head = (r->head + 1) % ACCIO_NIC_MAX_DEPTH;
    r->count--;
}

static void accio_nic_update_irq(AccioNICState *s)
{
    uint64_t st = s->intr_status & ACCIO_NIC_INTR_STATUS_LINK_MASK;

    if (s->tx_comp.count) {
        st |= ACCIO_NIC_INTR_STATUS_TX_MASK;
    }
    if (s->rx_comp.count) {
        st |= ACCIO_NIC_INTR_STATUS_RX_MASK;
    }
    s->intr_status = st;
    qemu_set_irq(s->irq, !!(st & s->intr_mask));
}

static bool accio_nic_link_up(AccioNICState *s)
{
    return !qemu_get_queue(s->nic)->link_down;
}

/* ---- checksum offload --------------------------------------------------- */

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
    size_t i;

    for (i = 0; i + 1 < n; i += 2) {
        sum += (p[i] << 8) | p[i + 1];
    }
    if (n & 1) {
        sum += p[n - 1] << 8;
    }
    return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum;
}

/*
 * The TCP or UDP segment of an IPv4 frame, as the offload sees it: returns
 * the IPv4 header's offset in @f and sets *l4 (the segment's offset) and
 * *l4len, or returns 0 when the frame is not one the offload handles (not
 * IPv4, lengths that do not add up, another protocol). A fragment returns
 * its header with *l4len 0: its header checksum can be checked, its
 * segment cannot.
 */
static size_t accio_csum_segment(const uint8_t *f, size_t len, size_t *l4,
                                 size_t *l4len)
{
    const uint8_t *ip = f + 14;
    size_t ihl, tot;

    *l4 = *l4len = 0;
    if (len < 34 || ((f[12] << 8) | f[13]) != 0x0800 || (ip[0] >> 4) != 4) {
        return 0;
    }
    ihl = (ip[0] & 15) * 4;
    tot = (ip[2] << 8) | ip[3];
    if (ihl < 20 || tot < ihl || 14 + tot > len ||
        (ip[9] != 6 && ip[9] != 17)) {
        return 0;
    }
    if (((ip[6] << 8) | ip[7]) & 0x3fff) {
        return 14;                      /* a fragment: more or an offset */
    }
    if (ip[9] == 17) {
        if (tot - ihl < 8) {
            return 0;
        }
        *l4len = (ip[ihl + 4] << 8) | ip[ihl + 5];
        if (*l4len < 8 || *l4len > tot - ihl) {
            *l4len = 0;
            return 0;
        }
    } else {
        if (tot - ihl < 20) {
            return 0;
        }
        *l4len = tot - ihl;
    }
    *l4 = 14 + ihl;
    return 14;
}

/* The sum of the IPv4 pseudo-header of the segment at @f + @l4. */
static uint32_t csum_pseudo(const uint8_t *f, size_t l4len)
{
    const uint8_t *ip = f + 14;

    return csum_add(0, ip + 12, 8) + ip[9] + l4len;
}

/*
 * Receive checksum offload (CTRL.RXCSUM): -1 the frame fails (a bad IPv4
 * header or TCP/UDP checksum), 1 it passes with its segment checked, 0 it
 * is not one the offload checks.
 */
static int accio_nic_rx_csum(const uint8_t *f, size_t len)
{
    size_t ip, l4, l4len;
    const uint8_t *seg;

    ip = accio_csum_segment(f, len, &l4, &l4len);
    if (!ip) {
        return 0;
    }
    if (csum_fold(csum_add(0, f + ip, (f[ip] & 15) * 4)) != 0) {
        return -1;
    }
    if (!l4len) {
        return 0;                       /* a fragment: the header only */
    }
    seg = f + l4;
    if (f[ip + 9] == 17 && seg[6] == 0 && seg[7] == 0) {
        return 1;                       /* UDP without a checksum */
    }
    return csum_fold(csum_pseudo(f, l4len) + csum_add(0, seg, l4len)) == 0 ?
           1 : -1;
}

/*
 * Transmit checksum offload (SEND_REQ.CSUM): the IPv4 header checksum and
 * the TCP/UDP checksum; true if it filled them in.
 */
static bool accio_nic_tx_csum(uint8_t *f, size_t len)
{
    size_t ip, l4, l4len, at;
    uint16_t cs;

    ip = accio_csum_segment(f, len, &l4, &l4len);
    if (!ip) {
        return false;
    }
    f[ip + 10] = f[ip + 11] = 0;
    cs = csum_fold(csum_add(0, f + ip, (f[ip] & 15) * 4));
    f[ip + 10] = cs >> 8;
    f[ip + 11] = cs;
    if (!l4len) {
        return true;                    /* a fragment: the header only */
    }
    at = l4 + (f[14 + 9] == 17 ? 6 : 16);
    f[at] = f[at + 1] = 0;
    cs = csum_fold(csum_pseudo(f, l4len) + csum_add(0, f + l4, l4len));
    if (cs == 0 && f[14 + 9] == 17) {
        cs = 0xffff;                    /* 0 would mean "no checksum" */
    }
    f[at] = cs >> 8;
    f[at + 1] = cs;
    return true;
}

/* ---- receive ----------------------------------------------------------- */

static bool accio_nic_accept(AccioNICState *s, const uint8_t *buf)
{
    uint8_t mac[6];
    int i;

    if (s->ctrl & ACCIO_NIC_CTRL_PROMISC_MASK || (buf[0] & 1)) {
        return true; /* promiscuous, broadcast or multicast */
    }
    for (i = 0; i < 6; i++) {
        mac[i] = s->macaddr >> (8 * i);
    }
    return memcmp(buf, mac, 6) == 0;
}

/*
 * Receive. A frame that passes the MAC's filters waits in the receive FIFO
 * while it crosses the pipeline and the bus (DMA, the one bus of the
 * NIC's two directions); when its DMA is done, the offload engine takes it
 * (its ring record is visible from then on) or the NIC's own queue does (a
 * posted buffer, then a completion). A full FIFO back-pressures the wire
 * (the netdev queues, the peer's generator pauses) or, for a sender that
 * cannot wait, drops the frame (rx_drop_nobuf).
 */
static bool accio_nic_rx_fifo_full(AccioNICState *s)
{
    return s->rxf_count >= ACCIO_NIC_RX_FIFO;
}

static void accio_nic_rx_frame(AccioNICState *s, const uint8_t *buf,
                               size_t size, uint64_t arrival)
{
    AccioTxFrame *f;
    uint32_t i;

    if (!(s->ctrl & ACCIO_NIC_CTRL_LOOPBACK_MASK)) {
        accio_pcap_frame(s->pcap, buf, size, arrival);
    }
    if (!(s->ctrl & ACCIO_NIC_CTRL_ENABLE_MASK)) {
        s->stats[ACCIO_STAT_RX_DROP_DISABLED]++;
        return;
    }
    if (size < ETH_MIN_FRAME) {
        s->stats[ACCIO_STAT_RX_DROP_RUNT]++;
        return;
    }
    if (size > ETH_MAX_FRAME || size > s->rx_buf_len) {
        s->stats[ACCIO_STAT_RX_DROP_OVERSIZE]++;
        return;
    }
    if (!accio_nic_accept(s, buf)) {
        s->stats[ACCIO_STAT_RX_DROP_FILTER]++;
        return;
    }
    if (accio_nic_rx_fifo_full(s)) {
        s->stats[ACCIO_STAT_RX_DROP_NOBUF]++;
        return;
    }
    i = (s->rxf_head + s->rxf_count) % ACCIO_NIC_RX_FIFO;
    f = &s->rxf_frames[i];
    memcpy(f->data, buf, size);
    f->len = size;
    s->rxf_arrival[i] = arrival;
    s->rxf_done[i] = accio_dma(s, arrival + accio_pipeline_ns(s), size);
    s->rxf_count++;
    if (!timer_pending(s->rx_timer)) {
        timer_mod(s->rx_timer, s->rxf_done[i]);
    }
}

/* A frame's DMA is done: to the engine, or to the NIC's own queue. */
static void accio_nic_rx_deliver(AccioNICState *s, const uint8_t *buf,
                                 size_t size, uint64_t arrival)
{
    AccioPortFrame f = { .buf = buf, .len = size };
    uint64_t addr, comp = size;
    int csum;

    if (s->engine && accio_port_push(s->engine, &f)) {
        return;     /* the UDP offload engine took it */
    }
    if (s->ctrl & ACCIO_NIC_CTRL_RXCSUM_MASK) {
        csum = accio_nic_rx_csum(buf, size);
        if (csum < 0) {
            s->stats[ACCIO_STAT_RX_DROP_CSUM]++;
            return;
        }
        if (csum > 0) {
            comp |= ACCIO_NIC_RECV_COMP_CSUM_OK_MASK;
        }
    }
    if (s->rx_posted.count == 0) {
        s->stats[ACCIO_STAT_RX_DROP_NOBUF]++;
        return;
    }
    ring_pop(&s->rx_posted, &addr, NULL);
    if (dma_memory_write(&address_space_memory, addr, buf, size,
                         MEMTXATTRS_UNSPECIFIED) != MEMTX_OK) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "accio-nic: RX DMA to bad address 0x%" PRIx64 "\n",
                      addr);
        s->stats[ACCIO_STAT_RX_DROP_NOBUF]++;
        return;
    }
    qemu_plugin_dma_write(addr, size);      /* a timing model's caches */
    /* completion: the length and flags, and the arrival time beside it */
    ring_push(&s->rx_comp, comp, arrival);
    if (comp & ACCIO_NIC_RECV_COMP_CSUM_OK_MASK) {
        s->stats[ACCIO_STAT_RX_CSUM_OK]++;
    }
    s->stats[ACCIO_STAT_RX_FRAMES]++;
    s->stats[ACCIO_STAT_RX_BYTES] += size;
}

static void accio_nic_rx_timer(void *opaque)
{
    AccioNICState *s = opaque;
    uint64_t now = accio_now();
    bool freed = false;
    AccioTxFrame *f;

    while (s->rxf_count && s->rxf_done[s->rxf_head] <= now) {
        f = &s->rxf_frames[s->rxf_head];
        accio_nic_rx_deliver(s, f->data, f->len, s->rxf_arrival[s->rxf_head]);
        s->rxf_head = (s->rxf_head + 1) % ACCIO_NIC_RX_FIFO;
        s->rxf_count--;
        freed = true;
    }
    if (s->rxf_count) {
        timer_mod(s->rx_timer, s->rxf_done[s->rxf_head]);
    }
    accio_nic_update_irq(s);
    if (freed && s->nic) {
        qemu_flush_queued_packets(qemu_get_queue(s->nic));
    }
}

static bool accio_nic_can_receive(NetClientState *nc)
{
    AccioNICState *s = qemu_get_nic_opaque(nc);

    return !accio_nic_rx_fifo_full(s);
}

static ssize_t accio_nic_receive(NetClientState *nc, const uint8_t *buf,
                                 size_t size)
{
    AccioNICState *s = qemu_get_nic_opaque(nc);

    /*
     * can_receive is asked once per send, not per frame of a flush: when
     * the FIFO fills in the middle of one, the netdev keeps the frame
     * (0: its queue holds it and the rest) until the receive timer has
     * freed a slot and flushes the queue again.
     */
    if ((s->ctrl & ACCIO_NIC_CTRL_ENABLE_MASK) && accio_nic_rx_fifo_full(s)) {
        return 0;
    }
    accio_nic_rx_frame(s, buf, size, accio_now());
    return size;
}

/* A frame from the far end of a lockstep wire, at virtual time @t (now). */
static void accio_nic_lockstep_deliver(void *opaque, const uint8_t *buf,
                                       size_t len, uint64_t t)
{
    AccioNICState *s = opaque;

    if (accio_nic_link_up(s)) {
        accio_nic_rx_frame(s, buf, len, t);
    }
}

static void accio_nic_eng_notify(AccioNICState *s);

static void accio_nic_set_link(NetClientState *nc)
{
    AccioNICState *s = qemu_get_nic_opaque(nc);

    if (s->engine) {
        accio_port_set_link(s->engine, !nc->link_down);
    }
    s->intr_status |= ACCIO_NIC_INTR_STATUS_LINK_MASK;
    accio_nic_update_irq(s);
    if (!nc->link_down) {
        /* what the engine and the peer held goes out now */
        if (s->eng_count) {
            timer_mod(s->eng_timer, accio_now());
        }
        if (s->peer_count) {
            timer_mod(s->peer_timer, accio_now());
        }
        accio_nic_eng_notify(s);
    }
}

/* ---- transmit ---------------------------------------------------------- */

static void accio_nic_send_req(AccioNICState *s, uint64_t val)
{
    uint64_t addr = val & ACCIO_NIC_SEND_REQ_ADDR_MASK;
    uint32_t len = (val & ACCIO_NIC_SEND_REQ_LEN_MASK) >>
                   ACCIO_NIC_SEND_REQ_LEN_SHIFT;
    uint64_t now = accio_now(), dma_done, wire_start, wire_end;
    AccioTxFrame *f;

    if (accio_tx_used(s) >= s->depth) {
        s->stats[ACCIO_STAT_SEND_REQ_OVERFLOW]++;
        return;
    }
    f = &s->tx_frames[(s->tx_inflight.head + s->tx_inflight.count) %
                      ACCIO_NIC_MAX_DEPTH];
    f->len = len;
    f->error = len < 14 || len > ETH_MAX_FRAME ||
               dma_memory_read(&address_space_memory, addr, f->data, len,
                               MEMTXATTRS_UNSPECIFIED) != MEMTX_OK;
    if (f->error) {
        s->stats[ACCIO_STAT_TX_ERRORS]++;
        qemu_log_mask(LOG_GUEST_ERROR,
                      "accio-nic: bad send request addr 0x%" PRIx64
                      " len %u\n", addr, len);
        wire_start = wire_end = now;
    } else {
        /* the checksum is filled in as the frame streams out: no time */
        f->csum = val & ACCIO_NIC_SEND_REQ_CSUM_MASK;
        if (f->csum && accio_nic_tx_csum(f->data, len)) {
            s->stats[ACCIO_STAT_TX_CSUM]++;
        }
        dma_done = accio_dma(s, now, len);
        wire_start = MAX(dma_done + accio_pipeline_ns(s), s->wire_free_at);
        wire_end = wire_start + accio_wire_ns(s, len);
        s->wire_free_at = wire_end;
    }
    ring_push(&s->tx_inflight, wire_start, wire_end);
    if (!timer_pending(s->tx_timer)) {
        timer_mod(s->tx_timer, wire_end);
    }
}

/* ---- the wire peer ------------------------------------------------------ */

/*
 * With wire-peer=echo the wire ends in a host that lives on the virtual
 * clock instead of the netdev: it answers ARP requests for any IPv4
 * address, ICMP echo requests, and UDP datagrams (back to their source,
 * addresses and ports swapped, payload unchanged), each after
 * peer-delay-ns of service time, one frame after the other, and sends the
 * answer back over the wire at the link rate. No real-time party is on the
 * wire, so a run in deterministic time (-icount) repeats exactly, and a
 * slow server is a number of nanoseconds, not a sleeping host program.
 */
static const uint8_t accio_peer_mac[6] = { 0x02, 0xac, 0xc1, 0x0e, 0xc4, 0x00 };

static uint16_t be16(const uint8_t *p)
{
    return p[0] << 8 | p[1];
}

static void swap_bytes(uint8_t *a, uint8_t *b, size_t n)
{
    uint8_t t[6];

    memcpy(t, a, n);
    memcpy(a, b, n);
    memcpy(b, t, n);
}

static uint16_t inet_csum(const uint8_t *p, size_t n)
{
    return csum_fold(csum_add(0, p, n));
}

/* Turns @f into the peer's answer in place; false: the peer ignores it. */
static bool accio_peer_answer(AccioTxFrame *f)
{
    uint8_t *e = f->data, *ip = e + 14, *l4, tpa[4];
    uint32_t len = f->len, ihl, tot;
    uint16_t cs;

    if (len < 14 || ((e[0] & 1) == 0 && memcmp(e, accio_peer_mac, 6))) {
        return false;   /* not for the peer's station */
    }
    if (be16(e + 12) == 0x0806) {                       /* ARP */
        if (len < 42 || be16(ip) != 1 || be16(ip + 2) != 0x0800 ||
            ip[4] != 6 || ip[5] != 4 || be16(ip + 6) != 1) {
            return false;
        }
        if (!memcmp(ip + 14, ip + 24, 4)) {
            return false;   /* an announcement, not a question */
        }
        ip[7] = 2;                                      /* reply */
        memcpy(tpa, ip + 24, 4);                        /* address asked for */
        memcpy(ip + 18, ip + 8, 10);                    /* to the asker */
        memcpy(ip + 8, accio_peer_mac, 6);              /* from the peer */
        memcpy(ip + 14, tpa, 4);
        memcpy(e, ip + 18, 6);
        memcpy(e + 6, accio_peer_mac, 6);
        return true;
    }
    if (be16(e + 12) != 0x0800 || len < 34 || (ip[0] >> 4) != 4) {
        return false;
    }
    ihl = (ip[0] & 15) * 4;
    tot = be16(ip + 2);
    if (ihl < 20 || tot < ihl || 14 + tot > len || (e[0] & 1)) {
        return false;
    }
    l4 = ip + ihl;
    if (ip[9] == 17) {                                  /* UDP */
        /* a later fragment carries no ports */
        if ((be16(ip + 6) & 0x1fff) == 0) {
            if (tot < ihl + 8) {
                return false;
            }
            swap_bytes(l4, l4 + 2, 2);
        }
    } else if (ip[9] == 1) {                            /* ICMP */
        if (tot < ihl + 8 || l4[0] != 8 || (be16(ip + 6) & 0x3fff)) {
            return false;
        }
        l4[0] = 0;                                      /* echo reply */
        l4[2] = l4[3] = 0;
        cs = inet_csum(l4, tot - ihl);
        l4[2] = cs >> 8;
        l4[3] = cs;
    } else {
        return false;
    }
    /* swapping addresses or ports leaves every checksum as it was */
    swap_bytes(ip + 12, ip + 16, 4);
    memcpy(e, e + 6, 6);
    memcpy(e + 6, accio_peer_mac, 6);
    return true;
}

/*
 * The peer's traffic generator: a UDP datagram to the peer's port
 * peer-gen-port whose payload reads "gen COUNT SIZE GAP_NS" makes the peer
 * send COUNT datagrams of SIZE payload bytes (1..ACCIO_MAX_PAYLOAD) back to
 * the asking socket, each starting GAP_NS after the one before or as soon as
 * the wire is free (GAP_NS 0: back to back at the link rate), the first one
 * peer-delay-ns after the request. The payload starts with the datagram's
 * sequence number (64 bits, little endian). A new request replaces a
 * running stream. Load on the virtual clock, which no host program could
 * keep up with.
 */
static void accio_gen_schedule(AccioNICState *s, uint64_t earliest)
{
    uint64_t start = MAX(earliest, s->peer_wire_free_at);

    s->gen_end = start + accio_wire_ns(s, 42 + s->gen_size);
    s->peer_wire_free_at = s->gen_end;
    timer_mod(s->gen_timer, s->gen_end);
}

static void accio_gen_timer(void *opaque)
{
    AccioNICState *s = opaque;
    uint8_t f[ACCIO_NIC_FRAME_MAX];
    uint32_t len = 42 + s->gen_size;
    uint64_t start, seq;

    if (!s->gen_left) {
        return;
    }
    memcpy(f, s->gen_hdr, 42);
    memset(f + 42, 0xa5, s->gen_size);
    memset(f + len, 0, MAX(len, ETH_MIN_FRAME) - len);  /* padding */
    seq = cpu_to_le64(s->gen_seq);
    memcpy(f + 42, &seq, MIN(8, s->gen_size));
    if (accio_nic_link_up(s) && accio_nic_rx_fifo_full(s)) {
        /*
         * The NIC's FIFO is full: it pauses the link (flow control) and
         * the frame arrives once a frame ahead of it has crossed the bus.
         */
        s->gen_end = MAX(s->gen_end, s->rxf_done[s->rxf_head]);
        s->peer_wire_free_at = MAX(s->peer_wire_free_at, s->gen_end);
        s->gen_paused++;
        timer_mod(s->gen_timer, s->gen_end);
        return;
    }
    if (accio_nic_link_up(s)) {
        accio_nic_rx_frame(s, f, MAX(len, ETH_MIN_FRAME), s->gen_end);
    }
    s->gen_seq++;
    s->gen_sent++;
    if (--s->gen_left) {
        start = s->gen_end - accio_wire_ns(s, len);
        accio_gen_schedule(s, start + s->gen_gap_ns);
    }
}

/* @f: a request to the generator's port, as it came from the NIC. */
static bool accio_gen_request(AccioNICState *s, const uint8_t *f, uint32_t len,
                              uint64_t t)
{
    const uint8_t *ip = f + 14, *udp = ip + (ip[0] & 15) * 4;
    uint32_t plen = be16(udp + 4) - 8;
    char text[64];
    unsigned long long count, size, gap;
    uint8_t *h = s->gen_hdr;
    uint16_t cs;

    if (plen >= sizeof(text) || udp + 8 + plen > f + len) {
        return false;
    }
    memcpy(text, udp + 8, plen);
    text[plen] = 0;
    if (sscanf(text, "gen %llu %llu %llu", &count, &size, &gap) != 3 ||
        size < 1 || size > ACCIO_MAX_PAYLOAD) {
        qemu_log_mask(LOG_GUEST_ERROR, "accio-nic: the wire peer's generator "
                      "wants \"gen COUNT SIZE(1..%d) GAP_NS\"\n", ACCIO_MAX_PAYLOAD);
        return false;
    }
    memcpy(h, f + 6, 6);                        /* to the asker's MAC */
    memcpy(h + 6, accio_peer_mac, 6);
    h[12] = 0x08;
    h[13] = 0x00;
    memset(h + 14, 0, 20);
    h[14] = 0x45;
    h[16] = (20 + 8 + size) >> 8;
    h[17] = 20 + 8 + size;
    h[22] = 64;                                 /* TTL */
    h[23] = 17;
    memcpy(h + 26, ip + 16, 4);                 /* from the address asked */
    memcpy(h + 30, ip + 12, 4);                 /* to the asker */
    cs = inet_csum(h + 14, 20);                 /* checksum field still 0 */
    h[24] = cs >> 8;
    h[25] = cs;
    memcpy(h + 34, udp + 2, 2);                 /* from the generator's port */
    memcpy(h + 36, udp, 2);                     /* to the asking socket */
    h[38] = (8 + size) >> 8;
    h[39] = 8 + size;
    h[40] = h[41] = 0;                          /* no UDP checksum */
    s->gen_size = size;
    s->gen_gap_ns = gap;
    s->gen_left = count;
    s->gen_seq = 0;
    if (count) {
        accio_gen_schedule(s, t + s->peer_delay_ns);
    } else {
        timer_del(s->gen_timer);
    }
    return true;
}

static bool accio_is_gen_request(AccioNICState *s, const uint8_t *f,
                                 uint32_t len)
{
    const uint8_t *ip = f + 14;

    return s->peer_gen_port && len >= 42 && !memcmp(f, accio_peer_mac, 6) &&
           be16(f + 12) == 0x0800 && (ip[0] >> 4) == 4 && ip[9] == 17 &&
           !(be16(ip + 6) & 0x3fff) && len >= 14 + (ip[0] & 15) * 4 + 8 &&
           be16(ip + (ip[0] & 15) * 4 + 2) == s->peer_gen_port;
}

/* A frame reaches the peer at @t (its last bit). */
static void accio_peer_receive(AccioNICState *s, const uint8_t *data,
                               size_t len, uint64_t t)
{
    AccioTxFrame *f;
    uint64_t start, end;
    uint32_t i;

    if (accio_is_gen_request(s, data, len)) {
        if (accio_gen_request(s, data, len, t)) {
            s->peer_answered++;
        } else {
            s->peer_ignored++;
        }
        return;
    }
    if (s->peer_count >= ACCIO_NIC_PEER_DEPTH) {
        s->peer_overflow++;
        return;
    }
    i = (s->peer_head + s->peer_count) % ACCIO_NIC_PEER_DEPTH;
    f = &s->peer_frames[i];
    memcpy(f->data, data, len);
    f->len = len;
    if (!accio_peer_answer(f)) {
        s->peer_ignored++;
        return;
    }
    s->peer_free_at = MAX(t, s->peer_free_at) + s->peer_delay_ns;
    start = MAX(s->peer_free_at, s->peer_wire_free_at);
    end = start + accio_wire_ns(s, len);
    s->peer_wire_free_at = end;
    s->peer_end[i] = end;
    s->peer_count++;
    s->peer_answered++;
    if (!timer_pending(s->peer_timer)) {
        timer_mod(s->peer_timer, end);
    }
}

static void accio_peer_timer(void *opaque)
{
    AccioNICState *s = opaque;
    uint64_t now = accio_now();

    /*
     * The peer keeps its answers while the link is down and sends them
     * when it returns, as a peer retransmitting after a timeout would.
     */
    if (!accio_nic_link_up(s)) {
        return;
    }
    while (s->peer_count && s->peer_end[s->peer_head] <= now) {
        AccioTxFrame *f = &s->peer_frames[s->peer_head];

        accio_nic_rx_frame(s, f->data, f->len, s->peer_end[s->peer_head]);
        s->peer_head = (s->peer_head + 1) % ACCIO_NIC_PEER_DEPTH;
        s->peer_count--;
    }
    if (s->peer_count) {
        timer_mod(s->peer_timer, s->peer_end[s->peer_head]);
    }
}

/* A frame leaves the MAC at time @t: looped back, dropped or on the wire. */
static void accio_nic_wire_out(AccioNICState *s, const uint8_t *data,
                               size_t len, uint64_t t)
{
    uint8_t padded[ETH_MIN_FRAME];

    if (len < ETH_MIN_FRAME) {
        /* the MAC pads a short frame with zeros, as Ethernet requires */
        memcpy(padded, data, len);
        memset(padded + len, 0, ETH_MIN_FRAME - len);
        data = padded;
        len = ETH_MIN_FRAME;
    }
    if (s->ctrl & ACCIO_NIC_CTRL_LOOPBACK_MASK) {
        accio_nic_rx_frame(s, data, len, t);
    } else if (!accio_nic_link_up(s)) {
        s->stats[ACCIO_STAT_TX_DROP_LINKDOWN]++;
        return;
    } else if (s->peer_echo) {
        accio_pcap_frame(s->pcap, data, len, t);
        accio_peer_receive(s, data, len, t);
    } else if (s->lockstep) {
        accio_pcap_frame(s->pcap, data, len, t);
        accio_lockstep_send(s->lockstep, data, len, t);
    } else {
        accio_pcap_frame(s->pcap, data, len, t);
        qemu_send_packet(qemu_get_queue(s->nic), data, len);
    }
    s->stats[ACCIO_STAT_TX_FRAMES]++;
    s->stats[ACCIO_STAT_TX_BYTES] += len;
}

static void accio_nic_tx_timer(void *opaque)
{
    AccioNICState *s = opaque;
    uint64_t now = accio_now(), start, end, comp;
    AccioTxFrame *f;

    while (s->tx_inflight.count) {
        end = s->tx_inflight.b[s->tx_inflight.head];
        if (end > now) {
            timer_mod(s->tx_timer, end);
            break;
        }
        f = &s->tx_frames[s->tx_inflight.head];
        ring_pop(&s->tx_inflight, &start, &end);
        comp = f->len;
        if (f->error) {
            comp |= ACCIO_NIC_SEND_COMP_ERROR_MASK;
        } else {
            accio_nic_wire_out(s, f->data, f->len, end);
        }
        ring_push(&s->tx_comp, comp, start);
    }
    accio_nic_update_irq(s);
}

/* ---- the offload engine's side of the wire ------------------------------ */

static void accio_nic_station_changed(AccioNICState *s)
{
    uint8_t mac[6];
    int i;

    for (i = 0; i < 6; i++) {
        mac[i] = s->macaddr >> (8 * i);
    }
    if (s->engine) {
        accio_port_set_station(s->engine, mac);
    }
}

/*
 * The NIC's port: a frame built by the offload engine, fetched over the
 * bus, through the pipeline, then serialized on the wire after the frames
 * ahead of it. The engine asks can_push first, so there is always room.
 * f->delay_ns: the latency of reading the frame's record from memory
 * before its bytes cross the bus (the engine's TX ring path; 0 for the
 * window). f->wire_ns: when the frame's first bit goes on the wire
 * (virtual clock, ns: the clock of the RX timestamps).
 */
static size_t accio_nic_port_push(AccioPort *port, AccioPortFrame *f)
{
    AccioNICState *s = ACCIO_NIC(port);
    uint64_t start, end;
    uint32_t i;

    if (s->eng_count >= ACCIO_NIC_ENG_DEPTH || f->len > ACCIO_NIC_FRAME_MAX) {
        s->stats[ACCIO_STAT_TX_ERRORS]++;
        return 0;
    }
    start = MAX(accio_dma(s, accio_now() + f->delay_ns, f->len) +
                accio_pipeline_ns(s), s->wire_free_at);
    end = start + accio_wire_ns(s, f->len);
    s->wire_free_at = end;
    i = (s->eng_head + s->eng_count) % ACCIO_NIC_ENG_DEPTH;
    memcpy(s->eng_frames[i].data, f->buf, f->len);
    s->eng_frames[i].len = f->len;
    s->eng_end[i] = end;
    s->eng_count++;
    if (!timer_pending(s->eng_timer)) {
        timer_mod(s->eng_timer, end);
    }
    f->wire_ns = start;
    return f->len;
}

/*
 * The engine holds its TX rings while the link is down: a doorbell then
 * waits (back-pressure), and accio_nic_set_link() resumes the rows when
 * the link returns, so that no datagram queued by the engine is lost.
 */
static bool accio_nic_eng_may_send(AccioNICState *s)
{
    return accio_nic_link_up(s) || (s->ctrl & ACCIO_NIC_CTRL_LOOPBACK_MASK);
}

static bool accio_nic_port_can_push(AccioPort *port, AccioPortNotifyFn notify,
                                    void *notify_opaque)
{
    AccioNICState *s = ACCIO_NIC(port);

    if (s->eng_count < ACCIO_NIC_ENG_DEPTH && accio_nic_eng_may_send(s)) {
        return true;
    }
    s->eng_notify = notify;
    s->eng_notify_opaque = notify_opaque;
    return false;
}

/* Room for the engine's frames again: tell an engine that waits for it. */
static void accio_nic_eng_notify(AccioNICState *s)
{
    AccioPortNotifyFn notify = s->eng_notify;

    if (notify) {
        s->eng_notify = NULL;
        notify(s->eng_notify_opaque);
    }
}

static void accio_nic_eng_timer(void *opaque)
{
    AccioNICState *s = opaque;
    uint64_t now = accio_now();
    bool sent = false;

    if (!accio_nic_eng_may_send(s)) {
        return;     /* held until the link returns */
    }
    while (s->eng_count && s->eng_end[s->eng_head] <= now) {
        AccioTxFrame *f = &s->eng_frames[s->eng_head];

        accio_nic_wire_out(s, f->data, f->len, s->eng_end[s->eng_head]);
        s->eng_head = (s->eng_head + 1) % ACCIO_NIC_ENG_DEPTH;
        s->eng_count--;
        sent = true;
    }
    if (s->eng_count) {
        timer_mod(s->eng_timer, s->eng_end[s->eng_head]);
    }
    if (sent) {
        accio_nic_eng_notify(s);
    }
}

/* ---- registers --------------------------------------------------------- */

static uint64_t accio_nic_read(void *opaque, hwaddr addr, unsigned size)
{
    AccioNICState *s = opaque;
    uint64_t v = 0, ts;

    if (addr >= ACCIO_NIC_RX_FRAMES &&
        addr < ACCIO_NIC_RX_FRAMES + 8 * ACCIO_STAT_COUNT) {
        return s->stats[(addr - ACCIO_NIC_RX_FRAMES) / 8];
    }
    switch (addr) {
    case ACCIO_NIC_ID:
        return ACCIO_NIC_ID_VALUE;
    case ACCIO_NIC_CTRL:
        return s->ctrl;
    case ACCIO_NIC_MACADDR:
        return s->macaddr;
    case ACCIO_NIC_STATUS:
        return accio_nic_link_up(s) ? ACCIO_NIC_STATUS_LINK_UP_MASK : 0;
    case ACCIO_NIC_SEND_COMP:
        if (s->tx_comp.count) {
            ring_pop(&s->tx_comp, &v, &ts);
            s->send_tstamp = ts;
            v |= ACCIO_NIC_SEND_COMP_VALID_MASK;
            accio_nic_update_irq(s);
        }
        return v;
    case ACCIO_NIC_RECV_COMP:
        if (s->rx_comp.count) {
            ring_pop(&s->rx_comp, &v, &ts);
            s->recv_tstamp = ts;
            v |= ACCIO_NIC_RECV_COMP_VALID_MASK;
            accio_nic_update_irq(s);
        }
        return v;
    case ACCIO_NIC_SEND_TSTAMP:
        return s->send_tstamp;
    case ACCIO_NIC_RECV_TSTAMP:
        return s->recv_tstamp;
    case ACCIO_NIC_COUNTS:
        return (uint64_t)(s->depth - accio_tx_used(s)) <<
                   ACCIO_NIC_COUNTS_SEND_REQ_FREE_SHIFT |
               (uint64_t)(s->depth - accio_rx_used(s)) <<
                   ACCIO_NIC_COUNTS_RECV_REQ_FREE_SHIFT |
               (uint64_t)s->tx_comp.count <<
                   ACCIO_NIC_COUNTS_SEND_COMP_CNT_SHIFT |
               (uint64_t)s->rx_comp.count <<
                   ACCIO_NIC_COUNTS_RECV_COMP_CNT_SHIFT;
    case ACCIO_NIC_INTR_MASK:
        return s->intr_mask;
    case ACCIO_NIC_INTR_STATUS:
        return s->intr_status;
    case ACCIO_NIC_TIME:
        return accio_now();
    case ACCIO_NIC_RX_BUF_LEN:
        return s->rx_buf_len;
    case ACCIO_NIC_QUEUE_DEPTH:
        return s->depth;
    case ACCIO_NIC_BUS_WIDTH_BITS:
        return s->bus_width_bits;
    case ACCIO_NIC_BUS_FREQ_HZ:
        return accio_bus_hz(s);
    case ACCIO_NIC_PIPELINE_NS:
        return accio_pipeline_ns(s);
    case ACCIO_NIC_LINK_MBPS:
        return s->link_mbps;
    default:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "accio-nic: read of unknown register 0x%" HWADDR_PRIx
                      "\n", addr);
        return 0;
    }
}

static void accio_nic_write(void *opaque, hwaddr addr, uint64_t val,
                            unsigned size)
{
    AccioNICState *s = opaque;

    switch (addr) {
    case ACCIO_NIC_CTRL:
        if (val & ACCIO_NIC_CTRL_QRESET_MASK) {
            accio_nic_reset_queues(s);
        }
        s->ctrl = val & (ACCIO_NIC_CTRL_ENABLE_MASK |
                         ACCIO_NIC_CTRL_LOOPBACK_MASK |
                         ACCIO_NIC_CTRL_PROMISC_MASK |
                         ACCIO_NIC_CTRL_RXCSUM_MASK);
        if (s->ctrl & ACCIO_NIC_CTRL_ENABLE_MASK) {
            if (s->lockstep) {
                accio_lockstep_start(s->lockstep);
            }
            qemu_flush_queued_packets(qemu_get_queue(s->nic));
        }
        break;
    case ACCIO_NIC_MACADDR:
        s->macaddr = val & ACCIO_NIC_MACADDR_ADDR_MASK;
        accio_nic_station_changed(s);
        break;
    case ACCIO_NIC_SEND_REQ:
        accio_nic_send_req(s, val);
        break;
    case ACCIO_NIC_RECV_REQ:
        if (accio_rx_used(s) >= s->depth) {
            s->stats[ACCIO_STAT_RECV_REQ_OVERFLOW]++;
        } else {
            ring_push(&s->rx_posted, val & ACCIO_NIC_RECV_REQ_ADDR_MASK, 0);
        }
        break;
    case ACCIO_NIC_INTR_MASK:
        s->intr_mask = val & (ACCIO_NIC_INTR_MASK_TX_MASK |
                              ACCIO_NIC_INTR_MASK_RX_MASK |
                              ACCIO_NIC_INTR_MASK_LINK_MASK);
        break;
    case ACCIO_NIC_INTR_STATUS:
        s->intr_status &= ~(val & ACCIO_NIC_INTR_STATUS_LINK_MASK);
        break;
    case ACCIO_NIC_RX_BUF_LEN:
        if (val < 64 || val > 16384) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "accio-nic: RX_BUF_LEN %" PRIu64 " out of range\n",
                          val);
            break;
        }
        s->rx_buf_len = val;
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "accio-nic: write to read-only or unknown register 0x%"
                      HWADDR_PRIx "\n", addr);
        return;
    }
    accio_nic_update_irq(s);
}

static const MemoryRegionOps accio_nic_ops = {
    .read = accio_nic_read,
    .write = accio_nic_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 8,
        .max_access_size = 8,
    },
    .impl = {
        .min_access_size = 8,
        .max_access_size = 8,
    },
};

/* ---- device ------------------------------------------------------------ */

static NetClientInfo accio_nic_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .can_receive = accio_nic_can_receive,
    .receive = accio_nic_receive,
    .link_status_changed = accio_nic_set_link,
};

static void accio_nic_reset_queues(AccioNICState *s)
{
    timer_del(s->tx_timer);
    timer_del(s->rx_timer);
    timer_del(s->eng_timer);
    s->eng_head = s->eng_count = 0;
    memset(&s->tx_inflight, 0, sizeof(s->tx_inflight));
    memset(&s->tx_comp, 0, sizeof(s->tx_comp));
    memset(&s->rx_posted, 0, sizeof(s->rx_posted));
    s->rxf_head = s->rxf_count = 0;
    memset(&s->rx_comp, 0, sizeof(s->rx_comp));
}

static void accio_nic_reset(DeviceState *dev)
{
    AccioNICState *s = ACCIO_NIC(dev);
    int i;

    accio_nic_reset_queues(s);
    memset(s->stats, 0, sizeof(s->stats));
    s->ctrl = 0;
    s->intr_mask = 0;
    s->intr_status = 0;
    s->send_tstamp = 0;
    s->recv_tstamp = 0;
    s->bus_free_at = 0;
    s->wire_free_at = 0;
    timer_del(s->peer_timer);
    timer_del(s->gen_timer);
    s->gen_left = 0;
    s->peer_head = s->peer_count = 0;
    s->peer_free_at = s->peer_wire_free_at = 0;
    s->rx_buf_len = 2048;
    s->macaddr = 0;
    for (i = 0; i < 6; i++) {
        s->macaddr |= (uint64_t)s->conf.macaddr.a[i] << (8 * i);
    }
    accio_nic_station_changed(s);
    accio_nic_update_irq(s);
}

static void accio_nic_realize(DeviceState *dev, Error **errp)
{
    AccioNICState *s = ACCIO_NIC(dev);

    if (s->depth < 2 || s->depth > ACCIO_NIC_MAX_DEPTH) {
        error_setg(errp, "accio-nic: queue-depth must be 2..%d",
                   ACCIO_NIC_MAX_DEPTH);
        return;
    }
    if (!s->bus_width_bits || !s->link_mbps) {
        error_setg(errp, "accio-nic: bus width and link rate must be "
                   "non-zero");
        return;
    }
    if (s->wire_peer && *s->wire_peer && strcmp(s->wire_peer, "echo")) {
        error_setg(errp, "accio-nic: wire-peer must be \"echo\" or empty, "
                   "not \"%s\"", s->wire_peer);
        return;
    }
    s->peer_echo = s->wire_peer && !strcmp(s->wire_peer, "echo");
    if (s->peer_echo && s->lockstep_spec && *s->lockstep_spec) {
        error_setg(errp, "accio-nic: wire-peer=echo and a lockstep wire "
                   "exclude each other");
        return;
    }
    if (s->pcap_path && *s->pcap_path) {
        s->pcap = accio_pcap_open(s->pcap_path, s->pcap_snaplen, errp);
        if (!s->pcap) {
            return;
        }
    }
    if (s->lockstep_spec && *s->lockstep_spec) {
        s->lockstep = accio_lockstep_new(s->lockstep_spec, s->lockstep_shm,
                                         s->lockstep_ns, s->lockstep_spin_ns,
                                         accio_nic_lockstep_deliver, s, errp);
        if (!s->lockstep) {
            return;
        }
        if (s->lockstep_trace && *s->lockstep_trace &&
            !accio_lockstep_trace(s->lockstep, s->lockstep_trace, errp)) {
            return;
        }
    }
    object_property_add_uint64_ptr(OBJECT(s), "peer-answered",
                                   &s->peer_answered, OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(OBJECT(s), "peer-ignored",
                                   &s->peer_ignored, OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(OBJECT(s), "peer-overflow",
                                   &s->peer_overflow, OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(OBJECT(s), "peer-generated",
                                   &s->gen_sent, OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(OBJECT(s), "peer-paused",
                                   &s->gen_paused, OBJ_PROP_FLAG_READ);
    memory_region_init_io(&s->mmio, OBJECT(s), &accio_nic_ops, s,
                          "accio-nic", ACCIO_NIC_MMIO_SIZE);
    sysbus_init_mmio(SYS_BUS_DEVICE(dev), &s->mmio);
    sysbus_init_irq(SYS_BUS_DEVICE(dev), &s->irq);
    s->tx_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, accio_nic_tx_timer, s);
    s->rx_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, accio_nic_rx_timer, s);
    s->eng_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, accio_nic_eng_timer, s);
    s->peer_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, accio_peer_timer, s);
    s->gen_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, accio_gen_timer, s);
    qemu_macaddr_default_if_unset(&s->conf.macaddr);
    s->nic = qemu_new_nic(&accio_nic_info, &s->conf,
                          object_get_typename(OBJECT(dev)), dev->id,
                          &dev->mem_reentrancy_guard, s);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);
}

static void accio_nic_unrealize(DeviceState *dev)
{
    AccioNICState *s = ACCIO_NIC(dev);

    timer_free(s->tx_timer);
    timer_free(s->rx_timer);
    timer_free(s->eng_timer);
    timer_free(s->peer_timer);
    timer_free(s->gen_timer);
    accio_lockstep_free(s->lockstep);
    accio_pcap_close(s->pcap);
    qemu_del_nic(s->nic);
}

static const VMStateDescription vmstate_accio_ring = {
    .name = "accio-nic-ring",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64_ARRAY(a, AccioRing, ACCIO_NIC_MAX_DEPTH),
        VMSTATE_UINT64_ARRAY(b, AccioRing, ACCIO_NIC_MAX_DEPTH),
        VMSTATE_UINT32(head, AccioRing),
        VMSTATE_UINT32(count, AccioRing),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_accio_tx_frame = {
    .name = "accio-nic-tx-frame",
    .version_id = 2,
    .minimum_version_id = 2,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8_ARRAY(data, AccioTxFrame, ACCIO_NIC_FRAME_MAX),
        VMSTATE_UINT32(len, AccioTxFrame),
        VMSTATE_BOOL(error, AccioTxFrame),
        VMSTATE_BOOL(csum, AccioTxFrame),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_accio_nic = {
    .name = "accio-nic",
    .version_id = 4,
    .minimum_version_id = 4,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(ctrl, AccioNICState),
        VMSTATE_UINT64(macaddr, AccioNICState),
        VMSTATE_UINT64(intr_mask, AccioNICState),
        VMSTATE_UINT64(intr_status, AccioNICState),
        VMSTATE_UINT64(send_tstamp, AccioNICState),
        VMSTATE_UINT64(recv_tstamp, AccioNICState),
        VMSTATE_UINT64(bus_free_at, AccioNICState),
        VMSTATE_UINT64(wire_free_at, AccioNICState),
        VMSTATE_UINT32(rx_buf_len, AccioNICState),
        VMSTATE_UINT64_ARRAY(stats, AccioNICState, ACCIO_STAT_COUNT),
        VMSTATE_STRUCT(tx_inflight, AccioNICState, 1, vmstate_accio_ring,
                       AccioRing),
        VMSTATE_STRUCT(tx_comp, AccioNICState, 1, vmstate_accio_ring,
                       AccioRing),
        VMSTATE_STRUCT(rx_posted, AccioNICState, 1, vmstate_accio_ring,
                       AccioRing),
        VMSTATE_STRUCT(rx_comp, AccioNICState, 1, vmstate_accio_ring,
                       AccioRing),
        VMSTATE_STRUCT_ARRAY(tx_frames, AccioNICState, ACCIO_NIC_MAX_DEPTH, 1,
                             vmstate_accio_tx_frame, AccioTxFrame),
        VMSTATE_TIMER_PTR(tx_timer, AccioNICState),
        VMSTATE_TIMER_PTR(rx_timer, AccioNICState),
        VMSTATE_STRUCT_ARRAY(peer_frames, AccioNICState,
                               ACCIO_NIC_PEER_DEPTH, 2,
                               vmstate_accio_tx_frame, AccioTxFrame),
        VMSTATE_UINT64_ARRAY_V(peer_end, AccioNICState,
                               ACCIO_NIC_PEER_DEPTH, 2),
        VMSTATE_UINT32_V(peer_head, AccioNICState, 2),
        VMSTATE_UINT32_V(peer_count, AccioNICState, 2),
        VMSTATE_UINT64_V(peer_free_at, AccioNICState, 2),
        VMSTATE_UINT64_V(peer_wire_free_at, AccioNICState, 2),
        VMSTATE_TIMER_PTR_V(peer_timer, AccioNICState, 2),
        VMSTATE_UINT8_ARRAY_V(gen_hdr, AccioNICState, 42, 2),
        VMSTATE_UINT32_V(gen_size, AccioNICState, 2),
        VMSTATE_UINT64_V(gen_gap_ns, AccioNICState, 2),
        VMSTATE_UINT64_V(gen_left, AccioNICState, 2),
        VMSTATE_UINT64_V(gen_seq, AccioNICState, 2),
        VMSTATE_UINT64_V(gen_end, AccioNICState, 2),
        VMSTATE_TIMER_PTR_V(gen_timer, AccioNICState, 2),
        VMSTATE_STRUCT_ARRAY(rxf_frames, AccioNICState, ACCIO_NIC_RX_FIFO, 3,
                             vmstate_accio_tx_frame, AccioTxFrame),
        VMSTATE_UINT64_ARRAY(rxf_arrival, AccioNICState, ACCIO_NIC_RX_FIFO),
        VMSTATE_UINT64_ARRAY(rxf_done, AccioNICState, ACCIO_NIC_RX_FIFO),
        VMSTATE_UINT32(rxf_head, AccioNICState),
        VMSTATE_UINT32(rxf_count, AccioNICState),
        VMSTATE_END_OF_LIST()
    },
};

static const Property accio_nic_properties[] = {
    DEFINE_NIC_PROPERTIES(AccioNICState, conf),
    DEFINE_PROP_UINT32("queue-depth", AccioNICState, depth, 64),
    /*
     * timing in cycles of the SoC's one clock, as calibrated against the
     * RTL SoC (eval/bench_soc.py): the DMA path moves bus-width-bits a
     * cycle, each frame spends pipeline-cycles in the NIC each way;
     * bus-freq-hz: a bus on a clock of its own (0: the SoC's)
     */
    DEFINE_PROP_UINT32("bus-width-bits", AccioNICState, bus_width_bits,
                       ACCIO_NIC_BUS_WIDTH_BITS_CAL),
    DEFINE_PROP_UINT64("bus-freq-hz", AccioNICState, bus_freq_hz, 0),
    DEFINE_PROP_UINT32("pipeline-cycles", AccioNICState, pipeline_cycles,
                       ACCIO_NIC_PIPELINE_CYCLES_CAL),
    DEFINE_PROP_UINT32("link-mbps", AccioNICState, link_mbps, 100000),
    DEFINE_PROP_STRING("wire-peer", AccioNICState, wire_peer),
    DEFINE_PROP_UINT64("peer-delay-ns", AccioNICState, peer_delay_ns, 0),
    DEFINE_PROP_UINT32("peer-gen-port", AccioNICState, peer_gen_port, 5001),
    DEFINE_PROP_STRING("pcap", AccioNICState, pcap_path),
    DEFINE_PROP_UINT32("pcap-snaplen", AccioNICState, pcap_snaplen, 128),
    DEFINE_PROP_STRING("lockstep", AccioNICState, lockstep_spec),
    DEFINE_PROP_STRING("lockstep-shm", AccioNICState, lockstep_shm),
    DEFINE_PROP_UINT64("lockstep-ns", AccioNICState, lockstep_ns, 5000),
    DEFINE_PROP_UINT64("lockstep-spin-ns", AccioNICState, lockstep_spin_ns, 0),
    DEFINE_PROP_STRING("lockstep-trace", AccioNICState, lockstep_trace),
    DEFINE_PROP_LINK("engine", AccioNICState, engine, TYPE_ACCIO_PORT,
                     AccioPort *),
};

static void accio_nic_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    AccioPortClass *pc = ACCIO_PORT_CLASS(klass);

    dc->realize = accio_nic_realize;
    dc->unrealize = accio_nic_unrealize;
    dc->vmsd = &vmstate_accio_nic;
    dc->desc = "Accio NIC (IceNIC-style, system bus)";
    device_class_set_legacy_reset(dc, accio_nic_reset);
    device_class_set_props(dc, accio_nic_properties);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
    pc->push = accio_nic_port_push;
    pc->can_push = accio_nic_port_can_push;
}

static const TypeInfo accio_nic_type_info = {
    .name = TYPE_ACCIO_NIC,
    .parent = TYPE_SYS_BUS_DEVICE,
    .instance_size = sizeof(AccioNICState),
    .class_init = accio_nic_class_init,
    .interfaces = (InterfaceInfo[]) {
        { TYPE_ACCIO_PORT },
        { }
    },
};

static void accio_nic_register_types(void)
{
    type_register_static(&accio_nic_type_info);
}

type_init(accio_nic_register_types)
