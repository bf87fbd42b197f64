// SPDX-License-Identifier: GPL-2.0-only
/*
 * Accio uncore: I/O Connection Table driver.
 *
 * The uncore keeps one row per accelerated UDP connection: its 5-tuple,
 * the owner's address space (satp ASID), the RX and TX rings and their
 * pointers. The UDP offload engine behind the Accio NIC delivers matching
 * datagrams straight into the RX ring and transmits what software queues
 * in the TX ring, so the data path needs no system call.
 *
 * This driver owns the rows. SIOCACCIO on a bound UDP socket allocates a
 * row, pins its rings, programs it and returns a row fd; the process maps
 * the row's register page and the rings from it. The row lives as long as
 * that fd (close, exit and kill -9 all free it). A thread that finds its
 * ring empty (or full) sleeps in ACCIO_IOC_WAIT; the hardware queues the
 * row on the hart's ready queue when data (or room) arrives and raises the
 * prioritized wake-up interrupt, whose handler pops the queue and wakes the
 * thread ahead of ordinary CFS tasks (see kernel/sched/fair.c).
 *
 * Rows are a cache of connections, like a TLB of page table entries: a
 * process may accelerate more sockets than the table has rows. A
 * connection's registers live in its struct accio_row while it has no
 * hardware row; the engine then passes its datagrams to the normal path,
 * so they reach the socket. The row is installed when its owner touches
 * the register page (a page fault), waits on it or polls it, evicting the
 * least recently active connection (clock over the rows' packet counters)
 * if none is free: its register page is unmapped, its pointers and
 * counters saved, and its rings, which stay in memory, keep what they hold.
 *
 * A user-mode access to a row's page passes the uncore's owner check if it
 * comes from the row's owner. On a SoC whose bus tells the uncore the
 * accessing hart's satp ASID (QEMU's), the owner is that ASID. On a SoC
 * whose bus carries no ASID (the Rocket SoC: "user", "ctx" in reg-names),
 * processes see the uncore through its user alias, checked against the
 * hart's context register CTX[hart], which switch_mm() writes; the owner is
 * then an identity this driver gives each address space that accelerates
 * a socket (Rocket has no ASID bits, and the identity needs no care at an
 * ASID rollover).
 */

#include <linux/anon_inodes.h>
#include <linux/accio.h>
#include <linux/cpuhotplug.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/file.h>
#include <linux/hashtable.h>
#include <linux/inetdevice.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/irq_work.h>
#include <linux/irqdomain.h>
#include <linux/of_irq.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/of.h>
#include <linux/platform_device.h>
#include <linux/poll.h>
#include <linux/moduleparam.h>
#include <linux/sched/mm.h>
#include <linux/sched/stat.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/syscalls.h>
#include <linux/udp.h>
#include <net/arp.h>
#include <net/inet_sock.h>
#include <net/fib_notifier.h>
#include <net/netevent.h>
#include <net/netns/generic.h>
#include <net/route.h>
#include <net/sock.h>
#include <net/udp.h>
#include <linux/smp.h>
#include <asm/csr.h>
#include <asm/timex.h>
#include <asm/unaligned.h>

#include "accio_regs.h"

#define DRV_NAME		"accio-uncore"
#define ACCIO_UNCORE_MAGIC	0x41435455
#define ACCIO_RX_OFFSET		0x100000
#define ACCIO_TX_OFFSET		0x200000
#define ACCIO_STATUS_OFFSET	0x300000
#define ACCIO_DEFAULT_PRIO	1
#define ACCIO_NEIGH_WAIT_MS	1000
#define ACCIO_NEVENTS		(ACCIO_EV_MMIO_TX_ERROR + 1)
#define ACCIO_DRAIN_IDLE_US	10000	/* engine made no progress: give up */
#define ACCIO_DRAIN_MAX_US	1000000

struct accio_ict;

struct accio_hart {
	struct accio_ict *ict;
	unsigned int hart;
	int irq;
};

/* a connection's registers, saved while it has no hardware row */
#define ACCIO_ROW_NREGS		(ACCIO_UNCORE_ROW_ROCE_QPN / 8 + 1)

struct accio_row {
	struct accio_ict *ict;
	struct list_head node;		/* ict->conns */
	struct file *file;		/* the row fd */
	spinlock_t slot_lock;		/* slot, regs and reg[] */
	struct mutex inst_lock;		/* install, evict, map: one at a time */
	int slot;			/* hardware row, -1: none */
	void __iomem *regs;		/* its registers, NULL: none */
	u64 reg[ACCIO_ROW_NREGS];	/* registers while not installed */
	u64 seen;			/* packet count at the last clock sweep */
	u64 used_at;			/* ict->sweeps when last seen in use */
	u64 kept;			/* the sweep that found its TX unfinished */
	bool spared;			/* the clock passed it over as remote */
	u64 installs, evictions;
	bool tx_stopped;		/* the engine stopped at a bad TX record */
	bool roce;			/* ACCIO_ACCEL_ROCE: port 4791 */
	bool group;			/* STATE.GROUP: in a SO_REUSEPORT group */
	void (*notify)(void *ctx, unsigned int how); /* the verbs driver's */
	void *notify_ctx;
	struct file *sock_file;
	struct sock *sk;
	struct mm_struct *mm;
	wait_queue_head_t wq;
	struct task_struct *waiter;	/* a thread in ACCIO_IOC_WAIT */
	struct mutex lock;		/* next hop */
	bool have_nexthop;
	__be32 nexthop;
	u32 nh_gen;			/* the paths_gen it was chosen at */
	struct accio_row_status *status;	/* the owner's status page */
	void *rx_cpu, *tx_cpu;
	dma_addr_t rx_dma, tx_dma;
	u32 rx_bytes, tx_bytes;
	u8 prio;
	unsigned int halt_skip;		/* waits left to sleep before halting again */
	unsigned int halt_backoff;	/* halt_skip after the next halt that runs out */
	u64 halts, halts_expired;
	unsigned int yield_skip;	/* waits left to sleep before yielding again */
	u64 yields, yields_missed;
	struct rcu_head rcu;
};

struct accio_ict {
	struct device *dev;
	void __iomem *base;
	phys_addr_t phys;
	phys_addr_t user_phys;		/* what processes map: the user alias */
	void __iomem *ctx;		/* CTX[hart], or NULL: the satp ASID */
	unsigned int nrows, nharts;
	spinlock_t alloc_lock;		/* rows[], used, hand, installs, evictions */
	raw_spinlock_t owner_lock;	/* OWNER_ASID of live rows */
	spinlock_t lock;		/* conns */
	struct list_head conns;		/* every accelerated socket */
	unsigned int nconns;
	unsigned long *used;
	unsigned int nused, hand;
	u64 sweeps;			/* victim searches so far: lru's clock */
	u64 installs, evictions;
	bool link_down;			/* the engine holds TX meanwhile */
	struct accio_row __rcu **rows;
	struct accio_hart *harts;
	int wake_cause;			/* local interrupt of the wake-ups, or -1 */
	u64 events[ACCIO_NEVENTS];
	atomic_t paths_gen;		/* moved under lock, see accio_paths_bump() */
};

static struct accio_ict *accio_ict;
static DEFINE_PER_CPU(struct irq_work, accio_drain_work);

static void __iomem *hart_reg(struct accio_ict *ict, unsigned int h,
			      unsigned int off)
{
	return ict->base + ACCIO_UNCORE_HART_BASE +
	       h * ACCIO_UNCORE_HART_STRIDE + off;
}

/* A connection's register, in its hardware row or saved. slot_lock held. */
static u64 row_rd(struct accio_row *row, unsigned int off)
{
	return row->regs ? readq(row->regs + off) : row->reg[off / 8];
}

static void row_wr(struct accio_row *row, unsigned int off, u64 v)
{
	if (row->regs)
		writeq(v, row->regs + off);
	else if (off / 8 < ACCIO_ROW_NREGS)
		row->reg[off / 8] = v;
}

static u64 row_get(struct accio_row *row, unsigned int off)
{
	unsigned long flags;
	u64 v;

	spin_lock_irqsave(&row->slot_lock, flags);
	v = row_rd(row, off);
	spin_unlock_irqrestore(&row->slot_lock, flags);
	return v;
}

static void row_set(struct accio_row *row, unsigned int off, u64 v)
{
	unsigned long flags;

	spin_lock_irqsave(&row->slot_lock, flags);
	row_wr(row, off, v);
	spin_unlock_irqrestore(&row->slot_lock, flags);
}

static int this_hart(struct accio_ict *ict)
{
	unsigned long hart = cpuid_to_hartid_map(raw_smp_processor_id());

	return hart < ict->nharts ? hart : -1;
}

/* ---- the ready queue ---------------------------------------------------- */

static void accio_row_wake(struct accio_ict *ict, unsigned int idx, bool tx)
{
	void (*notify)(void *ctx, unsigned int how);
	struct accio_row *row;
	struct task_struct *t;

	if (idx >= ict->nrows)
		return;
	rcu_read_lock();
	row = rcu_dereference(ict->rows[idx]);
	if (row) {
		WRITE_ONCE(row->used_at, READ_ONCE(ict->sweeps));
		t = READ_ONCE(row->waiter);
		if (t)
			WRITE_ONCE(t->accio_woken, 1);
		/* nobody asleep on the row: its waiter halted in place, or polls */
		if (wq_has_sleeper(&row->wq))
			wake_up_interruptible_poll(&row->wq, EPOLLIN | EPOLLOUT);
		notify = READ_ONCE(row->notify);
		if (notify)
			notify(READ_ONCE(row->notify_ctx),
			       tx ? ACCIO_ROW_NOTIFY_TX : 0);
	}
	rcu_read_unlock();
}

/* Pop a hart's ready queue and wake the thread of every row in it; was
 * row @slot among them?
 */
static bool accio_drain_hart(struct accio_ict *ict, unsigned int h, int slot)
{
	bool seen = false;
	unsigned int idx;
	u64 v;

	writeq(ACCIO_UNCORE_HART_WAKE_PENDING_MASK,
	       hart_reg(ict, h, ACCIO_UNCORE_HART_WAKE));
	for (;;) {
		v = readq(hart_reg(ict, h, ACCIO_UNCORE_HART_RQ_POP));
		if (!(v & ACCIO_UNCORE_HART_RQ_POP_VALID_MASK))
			break;
		idx = v & ACCIO_UNCORE_HART_RQ_POP_ROW_MASK;
		seen |= (int)idx == slot;
		accio_row_wake(ict, idx, v & ACCIO_UNCORE_HART_RQ_POP_TX_MASK);
	}
	return seen;
}

static irqreturn_t accio_wake_irq(int irq, void *data)
{
	struct accio_hart *hp = data;

	accio_drain_hart(hp->ict, hp->hart, -1);
	return IRQ_HANDLED;
}

/* A hart's wake-up taken as its local interrupt: no controller to claim. */
static DEFINE_PER_CPU(struct accio_ict *, accio_wake_dev);
static int accio_wake_virq;

static irqreturn_t accio_wake_local_irq(int irq, void *data)
{
	struct accio_ict *ict = *(struct accio_ict **)data;
	int h = this_hart(ict);

	if (h >= 0)
		accio_drain_hart(ict, h, -1);
	return IRQ_HANDLED;
}

static int accio_wake_cpu_online(unsigned int cpu)
{
	enable_percpu_irq(accio_wake_virq, IRQ_TYPE_NONE);
	return 0;
}

static int accio_wake_cpu_offline(unsigned int cpu)
{
	disable_percpu_irq(accio_wake_virq);
	return 0;
}

static void accio_drain_fn(struct irq_work *work)
{
	struct accio_ict *ict = READ_ONCE(accio_ict);
	int h;

	if (!ict)
		return;
	h = this_hart(ict);
	if (h >= 0)
		accio_drain_hart(ict, h, -1);
}

/* Called with the runqueue locked on every switch from or to an accelerated
 * I/O thread. While such a thread runs, the uncore holds back wake-ups of
 * rows of equal or lower priority; when the hart leaves it, the rows still
 * queued are woken once the runqueue lock is released. That holds whoever
 * runs next, another accelerated thread included: two accelerated threads
 * taking turns on a hart must not keep a third one's wake-up held forever.
 * A thread that comes back from sleeping in the row's wait drains the queue
 * itself (accio_drain_here()); for any other, an irq_work does, which on
 * RISC-V costs an IPI to the hart itself through the SBI firmware. With
 * more accelerated threads than harts, the common switch is from one waiter
 * to another.
 */
static u64 accio_accel(const struct task_struct *t)
{
	if (!t->accio_prio)
		return 0;
	return ACCIO_UNCORE_HART_ACCEL_RUNNING_MASK |
	       ((u64)t->accio_prio << ACCIO_UNCORE_HART_ACCEL_PRIO_SHIFT);
}

void __accio_sched_switch(struct task_struct *prev, struct task_struct *next)
{
	struct accio_ict *ict = READ_ONCE(accio_ict);
	int h;

	if (!ict)
		return;
	h = this_hart(ict);
	if (h < 0)
		return;
	writeq(accio_accel(next), hart_reg(ict, h, ACCIO_UNCORE_HART_ACCEL));
	if (!READ_ONCE(next->accio_waiting) &&
	    readq(hart_reg(ict, h, ACCIO_UNCORE_HART_RQ_COUNT)))
		irq_work_queue(this_cpu_ptr(&accio_drain_work));
}

/* Back from sleeping in a row's wait: wake what this hart's queue holds. */
static void accio_drain_here(struct accio_ict *ict)
{
	unsigned long flags;
	int h;

	local_irq_save(flags);
	h = this_hart(ict);
	if (h >= 0 && readq(hart_reg(ict, h, ACCIO_UNCORE_HART_RQ_COUNT)))
		accio_drain_hart(ict, h, -1);
	local_irq_restore(flags);
}

/* ---- control events ----------------------------------------------------- */

/* The engine stopped at a record of the row's TX ring it cannot send (a
 * length beyond the ring or the maximum, no destination, a ring it cannot
 * read): the record stays, and so does everything after it, for the owner
 * to see. Nothing will make room again, so a thread waiting for room would
 * wait forever: its wait fails with EIO from now on.
 */
static void accio_tx_stopped(struct accio_ict *ict, unsigned int idx, u32 at)
{
	struct accio_row *row;

	if (idx >= ict->nrows)
		return;
	rcu_read_lock();
	row = rcu_dereference(ict->rows[idx]);
	if (row) {
		WRITE_ONCE(row->tx_stopped, true);
		dev_warn_ratelimited(ict->dev,
				     "row %u: bad TX record at %#x, transmit stopped\n",
				     idx, at);
		wake_up_interruptible_poll(&row->wq, EPOLLOUT);
	}
	rcu_read_unlock();
}

static irqreturn_t accio_event_irq(int irq, void *data)
{
	struct accio_ict *ict = data;
	unsigned int type, row, info;
	u64 v;

	for (;;) {
		v = readq(ict->base + ACCIO_UNCORE_EVQ_POP);
		if (!(v & ACCIO_UNCORE_EVQ_POP_VALID_MASK))
			break;
		type = v & ACCIO_UNCORE_EVQ_POP_TYPE_MASK;
		row = (v & ACCIO_UNCORE_EVQ_POP_ROW_MASK) >>
		      ACCIO_UNCORE_EVQ_POP_ROW_SHIFT;
		info = (v & ACCIO_UNCORE_EVQ_POP_INFO_MASK) >>
		       ACCIO_UNCORE_EVQ_POP_INFO_SHIFT;
		if (type < ACCIO_NEVENTS)
			ict->events[type]++;
		switch (type) {
		case ACCIO_EV_LINK_UP:
		case ACCIO_EV_LINK_DOWN:
			dev_info(ict->dev, "link %s\n",
				 type == ACCIO_EV_LINK_UP ? "up" : "down");
			/* the engine holds TX meanwhile and resumes by itself */
			WRITE_ONCE(ict->link_down, type == ACCIO_EV_LINK_DOWN);
			break;
		case ACCIO_EV_PROTECTION:
			dev_warn_ratelimited(ict->dev,
					     "row %u: refused user access (0x%x)\n",
					     row, info);
			break;
		case ACCIO_EV_TX_RING_ERROR:
			accio_tx_stopped(ict, row, info);
			break;
		default:
			dev_dbg(ict->dev, "event %u row %u info 0x%x\n",
				type, row, info);
		}
	}
	return IRQ_HANDLED;
}

/* ---- route and neighbour ------------------------------------------------ */

static bool accio_is_nic(struct net_device *dev)
{
	return dev && dev->dev.parent && dev->dev.parent->of_node &&
	       of_device_is_compatible(dev->dev.parent->of_node, "accio,nic");
}

/* Next hop of @daddr and its MAC address, which the engine writes as the
 * destination of every frame of the row. Waits for ARP up to a second.
 */
static int accio_resolve(struct net *net, __be32 daddr, __be32 *nexthop,
			 u8 *mac)
{
	struct neighbour *n;
	struct rtable *rt;
	struct flowi4 fl4;
	int i, err = -EHOSTUNREACH;

	memset(&fl4, 0, sizeof(fl4));
	fl4.daddr = daddr;
	fl4.flowi4_proto = IPPROTO_UDP;
	rt = ip_route_output_key(net, &fl4);
	if (IS_ERR(rt))
		return PTR_ERR(rt);
	if (!accio_is_nic(rt->dst.dev)) {
		ip_rt_put(rt);
		return -EXDEV;
	}
	*nexthop = rt_nexthop(rt, daddr);
	n = neigh_lookup(&arp_tbl, nexthop, rt->dst.dev);
	if (!n)
		n = neigh_create(&arp_tbl, nexthop, rt->dst.dev);
	ip_rt_put(rt);
	if (IS_ERR(n))
		return PTR_ERR(n);
	for (i = 0; i < ACCIO_NEIGH_WAIT_MS / 10; i++) {
		if (n->nud_state & NUD_VALID) {
			neigh_ha_snapshot(mac, n, n->dev);
			err = 0;
			break;
		}
		neigh_event_send(n, NULL);
		if (msleep_interruptible(10)) {
			err = -EINTR;
			break;
		}
	}
	neigh_release(n);
	return err;
}

static u64 mac_to_reg(const u8 *mac)
{
	u64 v = 0;
	int i;

	for (i = 0; i < ETH_ALEN; i++)
		v |= (u64)mac[i] << (8 * i);
	return v;
}

static DEFINE_MUTEX(accio_neigh_mutex);

/* The paths' gen, read before the routes it stands for are looked at. */
static u32 accio_paths_gen(struct accio_ict *ict)
{
	/* pairs with the full barrier after accio_paths_bump()'s increment */
	return atomic_read_acquire(&ict->paths_gen);
}

/* Admit @daddr to the engine: the row takes the next hop of the first
 * destination asked since the paths' gen moved; at the same gen, only
 * destinations with the same next hop are admitted.
 */
static int accio_row_route(struct accio_row *row, __be32 daddr)
{
	u32 gen = accio_paths_gen(row->ict);
	u8 mac[ETH_ALEN];
	__be32 nh;
	int err;

	if (!daddr || ipv4_is_multicast(daddr) || ipv4_is_lbcast(daddr))
		return -EXDEV;
	/* resolved after gen was read: at least as new as the paths of gen */
	err = accio_resolve(sock_net(row->sk), daddr, &nh, mac);
	if (err)
		return err;
	/* a neighbour update walking the rows sees the old or the new hop */
	mutex_lock(&accio_neigh_mutex);
	mutex_lock(&row->lock);
	if (!row->have_nexthop || (s32)(gen - row->nh_gen) > 0) {
		row_set(row, ACCIO_UNCORE_ROW_DST_MAC, mac_to_reg(mac));
		WRITE_ONCE(row->nexthop, nh);
		row->nh_gen = gen;
		/* accio_neigh_work_fn() reads the next hop without row->lock */
		smp_store_release(&row->have_nexthop, true);
	} else if (row->nexthop != nh) {
		err = -EXDEV;
	}
	mutex_unlock(&row->lock);
	mutex_unlock(&accio_neigh_mutex);
	return err;
}

/* The engine writes a row's DST_MAC into every frame it sends for the row,
 * so the rows follow the neighbour table as Linux's own output does: when
 * the MAC of a next hop on the Accio NIC changes (a gratuitous ARP, an ARP
 * reply, ip neigh replace), every row whose next hop it is takes the new
 * one. Neighbour events come in atomic context; the rows are walked from a
 * work item, one at a time, each reading the neighbour as it is then.
 */
struct accio_neigh_work {
	struct work_struct work;
	struct neighbour *n;
};

static void accio_neigh_work_fn(struct work_struct *work)
{
	struct accio_neigh_work *w = container_of(work, struct accio_neigh_work,
						  work);
	/* the table as probe published it */
	struct accio_ict *ict = smp_load_acquire(&accio_ict);
	struct neighbour *n = w->n;
	__be32 ip = *(__be32 *)n->primary_key;
	struct accio_row *row;
	u8 mac[ETH_ALEN];
	u64 reg;

	mutex_lock(&accio_neigh_mutex);
	if (ict && (READ_ONCE(n->nud_state) & NUD_VALID)) {
		neigh_ha_snapshot(mac, n, n->dev);
		reg = mac_to_reg(mac);
		spin_lock(&ict->lock);
		list_for_each_entry(row, &ict->conns, node)
			/* the next hop as accio_row_route() released it */
			if (smp_load_acquire(&row->have_nexthop) &&
			    READ_ONCE(row->nexthop) == ip &&
			    row->sk && net_eq(sock_net(row->sk), dev_net(n->dev)))
				row_set(row, ACCIO_UNCORE_ROW_DST_MAC, reg);
		spin_unlock(&ict->lock);
	}
	mutex_unlock(&accio_neigh_mutex);
	neigh_release(n);
	kfree(w);
}

static int accio_netevent(struct notifier_block *nb, unsigned long event,
			  void *ptr)
{
	struct neighbour *n = ptr;
	struct accio_neigh_work *w;

	if (event != NETEVENT_NEIGH_UPDATE || n->tbl != &arp_tbl ||
	    !accio_is_nic(n->dev))
		return NOTIFY_DONE;
	w = kmalloc(sizeof(*w), GFP_ATOMIC);
	if (!w) {
		pr_warn_ratelimited(DRV_NAME ": a neighbour update was lost\n");
		return NOTIFY_DONE;
	}
	neigh_hold(n);
	w->n = n;
	INIT_WORK(&w->work, accio_neigh_work_fn);
	schedule_work(&w->work);
	return NOTIFY_DONE;
}

static struct notifier_block accio_netevent_nb = {
	.notifier_call = accio_netevent,
};

/* A route or an MTU changed: paths_gen moves in every owner's status page,
 * so that owners ask again. A new or replaced route and a new MTU are in
 * place when their notifiers run, a deleted route not yet; the gen moves
 * at once and again from a work item that runs once the change is
 * complete (all of them happen under RTNL, which the change that queued it
 * still holds), so an owner that asked in between asks again. The gen
 * moves and the pages are written under the table's lock, which a new
 * connection takes to join the list and read the gen.
 */
static void accio_paths_bump(void)
{
	/* the table as probe published it */
	struct accio_ict *ict = smp_load_acquire(&accio_ict);
	struct accio_row *row;
	u32 gen;

	if (!ict)
		return;
	spin_lock(&ict->lock);
	gen = atomic_inc_return(&ict->paths_gen);
	list_for_each_entry(row, &ict->conns, node)
		WRITE_ONCE(row->status->paths_gen, gen);
	spin_unlock(&ict->lock);
}

static void accio_paths_work_fn(struct work_struct *work)
{
	rtnl_lock();
	rtnl_unlock();
	accio_paths_bump();
}

static DECLARE_WORK(accio_paths_work, accio_paths_work_fn);

/* Every IPv4 route, rule and next hop change, in any network namespace. */
static int accio_fib_event(struct notifier_block *nb, unsigned long event,
			   void *ptr)
{
	struct fib_notifier_info *info = ptr;

	if (info->family == AF_INET) {
		accio_paths_bump();
		schedule_work(&accio_paths_work);
	}
	return NOTIFY_DONE;
}

struct accio_net {
	struct notifier_block fib_nb;
};

static unsigned int accio_net_id;

static int __net_init accio_net_init(struct net *net)
{
	struct accio_net *an = net_generic(net, accio_net_id);

	an->fib_nb.notifier_call = accio_fib_event;
	return register_fib_notifier(net, &an->fib_nb, NULL, NULL);
}

static void __net_exit accio_net_exit(struct net *net)
{
	struct accio_net *an = net_generic(net, accio_net_id);

	unregister_fib_notifier(net, &an->fib_nb);
}

static struct pernet_operations accio_net_ops = {
	.init = accio_net_init,
	.exit = accio_net_exit,
	.id = &accio_net_id,
	.size = sizeof(struct accio_net),
};

/* The MTU of an Accio NIC bounds the datagrams a row's frame carries. */
static int accio_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);

	/* dev->mtu is the new one by now */
	if (event == NETDEV_CHANGEMTU && accio_is_nic(dev))
		accio_paths_bump();
	return NOTIFY_DONE;
}

static struct notifier_block accio_netdev_nb = {
	.notifier_call = accio_netdev_event,
};

/* ---- rows: a cache of connections -------------------------------------- */

static u64 accio_row_activity(struct accio_row *row)
{
	return readq(row->regs + ACCIO_UNCORE_ROW_RX_PKTS) +
	       readq(row->regs + ACCIO_UNCORE_ROW_TX_PKTS);
}

static bool accio_row_tx_pending(struct accio_row *row)
{
	return readq(row->regs + ACCIO_UNCORE_ROW_TX_WPTR) !=
	       readq(row->regs + ACCIO_UNCORE_ROW_TX_RPTR);
}

/* Registers a row is restored with: not the doorbell, not the owner. */
static bool accio_row_restored(unsigned int i)
{
	return i && 8 * i != ACCIO_UNCORE_ROW_DOORBELL &&
	       8 * i != ACCIO_UNCORE_ROW_DOORBELL + 8 &&
	       8 * i != ACCIO_UNCORE_ROW_OWNER_ASID;
}

/* Take a connection's hardware row away: its inst_lock held, alloc_lock
 * not. Its register page is unmapped first, so that its owner cannot store
 * to the row once it serves another connection (the owner's page fault
 * waits for inst_lock meanwhile); then, under alloc_lock, the engine stops
 * serving it and its registers are saved. The hardware row passes to the
 * caller (its slot is returned), who installs another connection in it
 * (@reclaim: counted as an eviction) or frees it (accio_slot_free()). Its
 * waiters wake up: one with work for the row installs it again, a receiver
 * with nothing in its rings waits on the socket (accio_row_parked()).
 */
static unsigned int accio_row_evict(struct accio_row *row, bool reclaim)
{
	struct accio_ict *ict = row->ict;
	struct file *file = READ_ONCE(row->file);
	unsigned int slot = row->slot, i;
	void __iomem *regs = row->regs;
	unsigned long flags;
	u64 st;

	if (file)
		unmap_mapping_range(file->f_mapping, 0, PAGE_SIZE, 1);
	/* The engine stops serving it and its registers are saved under its
	 * own lock: from here on its register accesses go to the copies.
	 */
	spin_lock_irqsave(&row->slot_lock, flags);
	st = readq(regs + ACCIO_UNCORE_ROW_STATE);
	writeq(0, regs + ACCIO_UNCORE_ROW_STATE);
	for (i = 1; i < ACCIO_ROW_NREGS; i++)
		row->reg[i] = readq(regs + 8 * i);
	row->reg[0] = st & (ACCIO_UNCORE_ROW_STATE_ENABLED_MASK |
			    ACCIO_UNCORE_ROW_STATE_ACCEL_MASK |
			    ACCIO_UNCORE_ROW_STATE_ROCE_MASK |
			    ACCIO_UNCORE_ROW_STATE_NO_DF_MASK |
			    ACCIO_UNCORE_ROW_STATE_GROUP_MASK |
			    ACCIO_UNCORE_ROW_STATE_PRIO_MASK |
			    ACCIO_UNCORE_ROW_STATE_TOS_MASK |
			    ACCIO_UNCORE_ROW_STATE_TTL_MASK);
	WRITE_ONCE(row->regs, NULL);
	/* the owner reads the ring's end from its status page meanwhile */
	WRITE_ONCE(row->status->rx_wptr,
		   row->reg[ACCIO_UNCORE_ROW_RX_WPTR / 8]);
	/* rx_wptr before installed: pairs with the owner's acquire load */
	smp_store_release(&row->status->installed, 0);
	spin_unlock_irqrestore(&row->slot_lock, flags);
	/* then the hardware row is nobody's */
	spin_lock(&ict->alloc_lock);
	raw_spin_lock_irqsave(&ict->owner_lock, flags);
	writeq(0, regs + ACCIO_UNCORE_ROW_OWNER_ASID);
	writeq(0, regs + ACCIO_UNCORE_ROW_OWNER_COOKIE);
	row->slot = -1;
	RCU_INIT_POINTER(ict->rows[slot], NULL);
	raw_spin_unlock_irqrestore(&ict->owner_lock, flags);
	if (reclaim) {
		row->evictions++;
		ict->evictions++;
	}
	spin_unlock(&ict->alloc_lock);
	wake_up_interruptible_poll(&row->wq, EPOLLIN | EPOLLOUT);
	return slot;
}

static void accio_slot_free(struct accio_ict *ict, unsigned int slot)
{
	spin_lock(&ict->alloc_lock);
	clear_bit(slot, ict->used);
	ict->nused--;
	spin_unlock(&ict->alloc_lock);
}

/* The victim when every row is taken (alloc_lock held), by the policy of
 * the victim parameter:
 *
 * clock: a clock over the rows. A connection that sent or received since
 *	the hand last passed it gets a second chance; the first one found
 *	idle goes.
 * lru: the connection used longest ago: its last wake-up by a datagram,
 *	its last install or wait.
 * runnable: rows for the runnable. A receiver asleep in its wait goes
 *	first (its datagram will reach the socket, which wakes it), the
 *	least recently used of them; then as lru.
 * waiting: rows for the waiting. A connection whose thread is not in its
 *	wait goes first (it runs, or will once its hart is free, and installs
 *	its row again then), the least recently used of them; then as lru.
 *
 * The three decide from memory: a search reads no row's registers (each
 * a stall of the hart on the uncore's bus, under alloc_lock) but the
 * chosen one's. For every policy, a connection whose TX ring the engine
 * has not finished stays (its doorbell is rung again) while there is
 * another choice. So
 * does one that sends through the MMIO window: the reorder unit's bytes of
 * a message cut in two by the eviction cannot be saved. So does a RoCEv2
 * connection: while it has no row, its queue pair's datagrams go to the
 * socket layer's port 4791, not to it. So does a member of a SO_REUSEPORT
 * group: the engine picks a group's member for a flow by its place among
 * the members that have rows, so one member's eviction (and its install
 * in another row) would move flows between members that keep their rows,
 * and the flows of the evicted one would reach the socket layer, which
 * picks by its own hash: a server that keeps a flow's state in one thread
 * would lose it. Next, a connection whose address
 * space has run on another hart goes last: unmapping its register page
 * there takes a remote fence through the SBI firmware, which waits for
 * every such hart, and the other harts' installs wait for the victim
 * meanwhile. Evicting from an address space that ran only here
 * flushes this hart's TLB and nothing else.
 */
enum {
	ACCIO_VICTIM_CLOCK,
	ACCIO_VICTIM_LRU,
	ACCIO_VICTIM_RUNNABLE,
	ACCIO_VICTIM_WAITING,
};

static const char * const accio_victims[] = {
	[ACCIO_VICTIM_CLOCK] = "clock",
	[ACCIO_VICTIM_LRU] = "lru",
	[ACCIO_VICTIM_RUNNABLE] = "runnable",
	[ACCIO_VICTIM_WAITING] = "waiting",
};

static unsigned int accio_victim;

static int accio_victim_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(accio_victims, val);

	if (i < 0)
		return -EINVAL;
	WRITE_ONCE(accio_victim, i);
	return 0;
}

static int accio_victim_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", accio_victims[READ_ONCE(accio_victim)]);
}

static const struct kernel_param_ops accio_victim_ops = {
	.set = accio_victim_set,
	.get = accio_victim_get,
};
module_param_cb(victim, &accio_victim_ops, NULL, 0644);
MODULE_PARM_DESC(victim, "row eviction policy: clock, lru, runnable or waiting");

/* A row that stays while there is another choice (RoCEv2 rows and group
 * members are the policies' last class already).
 */
static bool accio_row_sticky(struct accio_row *row)
{
	if (readq(row->regs + ACCIO_UNCORE_ROW_MMIO_TX_NEXT))
		return true;
	if (accio_row_tx_pending(row)) {
		writeq(1, row->regs + ACCIO_UNCORE_ROW_DOORBELL);
		return true;
	}
	return false;
}

/* Unmapping the row's page would need other harts' TLBs flushed. */
static bool accio_row_remote(struct accio_row *row)
{
	const struct cpumask *m = mm_cpumask(row->mm);
	unsigned int cpu = raw_smp_processor_id();

	/* one word of bits: no search (the clock asks for each row it passes) */
	if (nr_cpu_ids <= BITS_PER_LONG)
		return cpumask_bits(m)[0] & ~BIT(cpu);
	return cpumask_any_but(m, cpu) < nr_cpu_ids;
}

/* A remote row is passed over once per install, not for ever: a connection
 * whose process ever ran on two harts (mm_cpumask never shrinks) would
 * otherwise keep its row while every local one misses, and would make its
 * round trips at half their cost, twice as often as the others.
 */
static bool accio_row_spare_remote(struct accio_row *row)
{
	if (row->spared || !accio_row_remote(row))
		return false;
	row->spared = true;
	return true;
}

static struct accio_row *accio_row_clock(struct accio_ict *ict)
{
	struct accio_row *row, *any = NULL, *last = NULL;
	unsigned int n, slot;
	u64 act;

	for (n = 0; n < 2 * ict->nrows; n++) {
		slot = ict->hand;
		ict->hand = (slot + 1) % ict->nrows;
		row = rcu_dereference_protected(ict->rows[slot],
						lockdep_is_held(&ict->alloc_lock));
		if (!row || mutex_is_locked(&row->inst_lock))
			continue;
		/* RoCEv2 rows and a group's members go only if nothing else can */
		if (row->roce || row->group) {
			if (!last)
				last = row;
			continue;
		}
		if (!any)
			any = row;
		/* memory before registers: each device load stalls the hart */
		if (n < ict->nrows &&
		    (accio_row_spare_remote(row) ||
		     readq(row->regs + ACCIO_UNCORE_ROW_MMIO_TX_NEXT)))
			continue;
		act = accio_row_activity(row);
		if (accio_row_tx_pending(row)) {
			writeq(1, row->regs + ACCIO_UNCORE_ROW_DOORBELL);
			row->seen = act;
			continue;
		}
		if (act != row->seen) {
			row->seen = act;
			continue;
		}
		return row;
	}
	return any ? any : last;
}

static struct accio_row *accio_row_victim(struct accio_ict *ict)
{
	unsigned int policy = READ_ONCE(accio_victim), n, slot, cls, tries;
	struct accio_row *row, *best = NULL;
	struct task_struct *t;
	u64 key, best_key, sweep;

	if (policy == ACCIO_VICTIM_CLOCK)
		return accio_row_clock(ict);
	sweep = ict->sweeps + 1;
	WRITE_ONCE(ict->sweeps, sweep);
	for (tries = 0; tries < 4; tries++) {
		best = NULL;
		best_key = U64_MAX;
		for (n = 0; n < ict->nrows; n++) {
			slot = (ict->hand + n) % ict->nrows;
			row = rcu_dereference_protected(ict->rows[slot],
							lockdep_is_held(&ict->alloc_lock));
			if (!row || row->kept == sweep ||
			    mutex_is_locked(&row->inst_lock))
				continue;
			/* from memory: RoCEv2 or group, remote, the policy's */
			cls = (row->roce || row->group) << 2 |
			      accio_row_remote(row) << 1;
			t = READ_ONCE(row->waiter);
			if (policy == ACCIO_VICTIM_RUNNABLE)
				cls |= !t || task_is_running(t);
			else if (policy == ACCIO_VICTIM_WAITING)
				cls |= !!t;
			key = ((u64)cls << 60) |
			      min(READ_ONCE(row->used_at), ((u64)1 << 60) - 1);
			if (key < best_key) {
				best_key = key;
				best = row;
			}
		}
		/* the registers of the choice only: is its TX unfinished? */
		if (!best || tries == 3 || !accio_row_sticky(best))
			break;
		best->kept = sweep;
	}
	if (best)
		ict->hand = (best->slot + 1) % ict->nrows;
	return best;
}

/* Give a connection a hardware row (its inst_lock held), evicting another
 * if none is free. alloc_lock is held only to pick a row and to publish
 * the connection in it: the victim, whose inst_lock the choice takes, is
 * unmapped without it, so that other harts install rows meanwhile. A row
 * some other thread is installing, evicting or mapping is not a victim.
 * The owner ASID stays 0 (nobody's): only a page fault of the owner on its
 * register page, which maps the row, sets it.
 */
static void accio_row_install(struct accio_row *row)
{
	struct accio_ict *ict = row->ict;
	struct accio_row *victim;
	void __iomem *regs;
	unsigned long flags;
	unsigned int i, slot;

	lockdep_assert_held(&row->inst_lock);
	if (row->regs)
		return;
	for (;;) {
		spin_lock(&ict->alloc_lock);
		slot = find_first_zero_bit(ict->used, ict->nrows);
		if (slot < ict->nrows) {
			set_bit(slot, ict->used);
			ict->nused++;
			spin_unlock(&ict->alloc_lock);
			break;
		}
		victim = accio_row_victim(ict);
		if (victim && mutex_trylock(&victim->inst_lock)) {
			spin_unlock(&ict->alloc_lock);
			slot = accio_row_evict(victim, true);
			mutex_unlock(&victim->inst_lock);
			break;
		}
		/* every row is busy changing hands: let them finish */
		spin_unlock(&ict->alloc_lock);
		cond_resched();
	}
	regs = ict->base + ACCIO_UNCORE_ROW_BASE +
	       slot * ACCIO_UNCORE_ROW_STRIDE;
	/* Published first, so that a wake-up of the row is never dropped:
	 * until its registers are restored it has no regs, which keeps the
	 * ASID hook off it, and its inst_lock keeps it from being a victim.
	 */
	spin_lock(&ict->alloc_lock);
	raw_spin_lock_irqsave(&ict->owner_lock, flags);
	row->slot = slot;
	rcu_assign_pointer(ict->rows[slot], row);
	raw_spin_unlock_irqrestore(&ict->owner_lock, flags);
	WRITE_ONCE(row->used_at, ict->sweeps);
	row->installs++;
	ict->installs++;
	spin_unlock(&ict->alloc_lock);
	/* The registers are restored under the connection's own lock, whose
	 * accesses go to the row from then on.
	 */
	spin_lock_irqsave(&row->slot_lock, flags);
	writeq(0, regs + ACCIO_UNCORE_ROW_STATE);
	writeq(0, regs + ACCIO_UNCORE_ROW_OWNER_ASID);
	for (i = 1; i < ACCIO_ROW_NREGS; i++)
		if (accio_row_restored(i))
			writeq(row->reg[i], regs + 8 * i);
	writeq(row->reg[0], regs + ACCIO_UNCORE_ROW_STATE);
	WRITE_ONCE(row->regs, regs);
	WRITE_ONCE(row->status->installed, 1);
	spin_unlock_irqrestore(&row->slot_lock, flags);
	row->seen = accio_row_activity(row);
	row->spared = false;
	if (accio_row_tx_pending(row))
		writeq(1, regs + ACCIO_UNCORE_ROW_DOORBELL);
	/* A receiver parked on the socket arms the row now, and so does an
	 * epoll set or a poll that waits on the row fd, woken to look again:
	 * the eviction dropped the arm, and a datagram into the ring would
	 * raise no wake-up. The row is installed by a fault of its owner more
	 * often than by its wait (a look at its ring from user space, as
	 * libaccio's epoll_wait makes), and the epoll set then slept through
	 * the ring's datagrams until another socket's woke it.
	 */
	if (READ_ONCE(row->waiter) || wq_has_sleeper(&row->wq))
		wake_up_interruptible_poll(&row->wq, EPOLLIN | EPOLLOUT);
}

/* The owner is about to use its row: install it if it has none. */
static void accio_row_need(struct accio_row *row)
{
	if (READ_ONCE(row->regs))
		return;
	mutex_lock(&row->inst_lock);
	accio_row_install(row);
	mutex_unlock(&row->inst_lock);
}

static int accio_row_set_owner(struct accio_row *row);

/* The owner touched its register page while its connection had no row:
 * install the row, admit the owner's ASID and map the row's page.
 */
static vm_fault_t accio_row_fault(struct vm_fault *vmf)
{
	struct accio_row *row = vmf->vma->vm_private_data;
	struct accio_ict *ict = row->ict;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	if (current->mm != row->mm)
		return VM_FAULT_SIGBUS;
	mutex_lock(&row->inst_lock);
	accio_row_install(row);
	if (!accio_row_set_owner(row))
		ret = vmf_insert_pfn(vmf->vma, vmf->address,
				     (ict->user_phys + ACCIO_UNCORE_ROW_BASE +
				      (u64)row->slot * ACCIO_UNCORE_ROW_STRIDE) >>
				     PAGE_SHIFT);
	mutex_unlock(&row->inst_lock);
	return ret;
}

static const struct vm_operations_struct accio_row_vm_ops = {
	.fault = accio_row_fault,
};

/* ---- the row fd --------------------------------------------------------- */

/* slot_lock held */
static bool accio_rx_ready(struct accio_row *row)
{
	return row_rd(row, ACCIO_UNCORE_ROW_RX_WPTR) !=
	       row_rd(row, ACCIO_UNCORE_ROW_RX_RPTR);
}

/* slot_lock held */
static bool accio_tx_room(struct accio_row *row, u32 need)
{
	u64 used = row_rd(row, ACCIO_UNCORE_ROW_TX_WPTR) -
		   row_rd(row, ACCIO_UNCORE_ROW_TX_RPTR);

	return used <= row->tx_bytes && row->tx_bytes - used >= need;
}

/* A receive on the socket would not wait: a datagram is queued, an error
 * is pending (an ICMP port unreachable for a connected socket: the
 * receive fails with ECONNREFUSED), or the receiving side is shut
 * (shutdown(SHUT_RD): it returns 0), as the socket's own poll says.
 */
static bool accio_sock_queued(struct accio_row *row)
{
	return !skb_queue_empty_lockless(&row->sk->sk_receive_queue) ||
	       !skb_queue_empty_lockless(&udp_sk(row->sk)->reader_queue);
}

static bool accio_sock_readable(struct accio_row *row)
{
	return accio_sock_queued(row) || READ_ONCE(row->sk->sk_err) ||
	       (READ_ONCE(row->sk->sk_shutdown) & RCV_SHUTDOWN);
}

/* Ask the hardware to queue the row on this hart when the side becomes
 * ready, with the wake-up interrupt. slot_lock held, row installed.
 */
static void accio_row_arm(struct accio_row *row, bool tx)
{
	struct accio_ict *ict = row->ict;
	int h = this_hart(ict);
	u64 st;

	st = readq(row->regs + ACCIO_UNCORE_ROW_STATE);
	st &= ~(ACCIO_UNCORE_ROW_STATE_HART_MASK |
		ACCIO_UNCORE_ROW_STATE_PRIO_MASK);
	st |= ACCIO_UNCORE_ROW_STATE_INTR_MASK |
	      ((u64)row->prio << ACCIO_UNCORE_ROW_STATE_PRIO_SHIFT) |
	      ((u64)(h < 0 ? 0 : h) << ACCIO_UNCORE_ROW_STATE_HART_SHIFT) |
	      (tx ? ACCIO_UNCORE_ROW_STATE_TX_SUSP_MASK :
		    ACCIO_UNCORE_ROW_STATE_RX_SUSP_MASK);
	writeq(st, row->regs + ACCIO_UNCORE_ROW_STATE);
}

/* See what is ready for the wait's side, having armed the row for it
 * (@arm): ACCIO_READY_*, or -1 when the connection has no row (evicted
 * meanwhile). Interrupts masked.
 */
static int accio_ready_irqoff(struct accio_row *row,
			      const struct accio_wait *w, bool arm)
{
	int ready = 0;

	spin_lock(&row->slot_lock);
	if (!row->regs) {
		spin_unlock(&row->slot_lock);
		return -1;
	}
	WRITE_ONCE(row->used_at, READ_ONCE(row->ict->sweeps));
	if (arm)
		accio_row_arm(row, w->dir == ACCIO_WAIT_TX);
	if (w->dir == ACCIO_WAIT_TX) {
		if (accio_tx_room(row, w->need))
			ready |= ACCIO_READY_RING;
	} else if (accio_rx_ready(row)) {
		ready |= ACCIO_READY_RING;
	}
	spin_unlock(&row->slot_lock);
	if (w->dir == ACCIO_WAIT_RX && accio_sock_readable(row))
		ready |= ACCIO_READY_SOCKET;
	return ready;
}

static int accio_arm_ready_irqoff(struct accio_row *row,
				  const struct accio_wait *w)
{
	return accio_ready_irqoff(row, w, true);
}

static int accio_arm_ready(struct accio_row *row, const struct accio_wait *w)
{
	unsigned long flags;
	int ready;

	local_irq_save(flags);
	ready = accio_arm_ready_irqoff(row, w);
	local_irq_restore(flags);
	return ready;
}

/* Halting in place. A thread that waits on a row while nothing else can run
 * on its hart need not leave the hart: ACCIO_IOC_WAIT arms the row and
 * halts the hart (wfi) with interrupts masked. The row's wake-up interrupt,
 * or any other, ends the halt and the thread goes on where it stopped:
 * no dequeue, no switch to the idle task and back, no idle entry and exit.
 * The interrupt is then taken as usual; its handler finds the row's thread
 * already running. Whatever else wants the hart ends the halt too (a task
 * woken here sets need_resched, a signal, the tick), and the thread then
 * sleeps the usual way. A halt has a budget of halt_us, looked at when
 * something wakes the hart (no timer is armed for it: arming one on every
 * halt costs more than it saves). One that runs out, or is woken past it,
 * makes the row's next waits sleep at once - eight, then twice as many
 * after each further one that runs out, up to 64, and eight again after
 * a halt that ends in time - so a connection whose peer answers slowly
 * does not hold its hart. halt_us=0 turns halting off.
 */
static unsigned int accio_halt_us = 100;
module_param_named(halt_us, accio_halt_us, uint, 0644);
MODULE_PARM_DESC(halt_us, "budget of a halt in place of a waiting thread, in us (0: always sleep)");

static bool accio_halt(struct accio_row *row, struct accio_wait *w)
{
	struct accio_ict *ict = row->ict;
	bool expired = false;
	int h, ready;
	u64 end;

	if (!accio_halt_us)
		return false;
	if (row->halt_skip) {
		row->halt_skip--;
		return false;
	}
	if (!READ_ONCE(row->regs))
		return false;
	local_irq_disable();
	h = this_hart(ict);
	if (h < 0 || !single_task_running()) {
		local_irq_enable();
		return false;
	}
	/* A halted hart runs no accelerated thread: its wake-ups must pass. */
	writeq(0, hart_reg(ict, h, ACCIO_UNCORE_HART_ACCEL));
	row->halts++;
	WRITE_ONCE(current->accio_halted, 1);
	/* the time CSR: one instruction a check, where local_clock() takes dozens */
	end = get_cycles() + (u64)accio_halt_us * (riscv_timebase / USEC_PER_SEC);
	for (;;) {
		ready = accio_arm_ready_irqoff(row, w);
		w->ready = ready < 0 ? 0 : ready;
		if (ready)	/* ready, or evicted: sleep the usual way */
			break;
		if (need_resched() || signal_pending(current))
			break;
		if (get_cycles() >= end) {
			expired = true;
			break;
		}
		wait_for_interrupt();
		/* A wake-up on the hart's local line is served here, still
		 * masked: draining the queue lowers the line, so no interrupt
		 * is taken. Anything else that woke the hart is taken now.
		 */
		if (ict->wake_cause >= 0 &&
		    (csr_read(CSR_IP) & BIT(ict->wake_cause)) &&
		    accio_drain_hart(ict, h, READ_ONCE(row->slot))) {
			/* the row's own wake-up: its side is ready (a hint,
			 * as ever: the caller looks again and may wait again)
			 */
			w->ready = ACCIO_READY_RING;
			break;
		}
		local_irq_enable();
		local_irq_disable();
	}
	writeq(accio_accel(current), hart_reg(ict, h, ACCIO_UNCORE_HART_ACCEL));
	WRITE_ONCE(current->accio_halted, 0);
	local_irq_enable();
	/* Woken past its budget (no interrupt came sooner): it ran out too.
	 * No timer bounds a single halt - arming one on every halt costs more
	 * than it saves - but the row's next waits then sleep.
	 */
	if (!expired && get_cycles() >= end)
		expired = true;
	if (expired) {
		row->halts_expired++;
		row->halt_skip = max(row->halt_backoff, 8U);
		row->halt_backoff = min(row->halt_skip * 2, 64U);
	} else {
		row->halt_backoff = 8;
	}
	return w->ready;
}

/* Yielding in place. A thread that waits on a row while other tasks can run
 * on its hart must leave the hart; when the next of them is an accelerated
 * thread too (many clients on few harts), its datagram has usually come by
 * the time it is picked again. Sleeping then costs the whole block and
 * wake-up - dequeue, the row's wake-up interrupt, the ready queue's
 * drain, try_to_wake_up()'s enqueue and preemption check, the timeout's
 * timer - for a thread that was going to run in turn anyway. So the wait
 * first yields the hart once, staying runnable, with the row not armed:
 * CFS runs the other tasks by their virtual run time, the same turn a
 * woken thread would get, and the thread looks at its rings and socket
 * when its turn comes. Beside any other task (a CPU-bound loop) it sleeps
 * as before, so that its wake-up preempts that task
 * (accio_sched_yield()). Nothing there (a peer slower than the turn)
 * makes the row's next eight waits sleep at once, as a first halt that
 * runs out does, so a thread that would find nothing does not keep its hart busy.
 * yield=0 (module parameter) turns it off.
 */
static bool accio_yield_on = true;
module_param_named(yield, accio_yield_on, bool, 0644);
MODULE_PARM_DESC(yield, "a waiting thread whose hart would run another accelerated thread next yields the hart once before it sleeps");

/* Yield once (above); true with w->ready set when the side became ready.
 * The time the yield took comes off a finite *timeout (at least a jiffy is
 * left, for one more look).
 */
static bool accio_yield(struct accio_row *row, struct accio_wait *w,
			long *timeout)
{
	unsigned long t0;
	int ready;

	if (!READ_ONCE(accio_yield_on) || !READ_ONCE(row->regs))
		return false;
	if (row->yield_skip) {
		row->yield_skip--;
		return false;
	}
	t0 = jiffies;
	if (!accio_sched_yield(current->accio_prio))
		return false;
	row->yields++;
	if (*timeout != MAX_SCHEDULE_TIMEOUT)
		*timeout = max_t(long, *timeout - (long)(jiffies - t0), 1);
	local_irq_disable();
	ready = accio_ready_irqoff(row, w, false);
	local_irq_enable();
	if (ready > 0) {
		w->ready = ready;
		return true;
	}
	/* evicted meanwhile: what the wait finds decides, not the peer */
	if (ready < 0)
		return false;
	row->yields_missed++;
	row->yield_skip = 8;
	return false;
}

/* A receiver whose connection lost its row waits on the socket rather than
 * install the row again, when the row has no work: its RX ring empty (what
 * the engine accepted was read) and its TX ring taken by the engine. The
 * connection's datagrams reach the socket meanwhile, which wakes the
 * thread; its owner installs the row again when it sends (the doorbell's
 * page fault). Rows so go to connections that send, and a sleeping
 * receiver evicted by one does not evict another in turn: with more
 * connections than rows, installing on every wake-up made each eviction
 * the cause of the next. Returns the readiness to report, 0 to sleep, or
 * -1 when the row must be installed. Interrupts enabled.
 */
static int accio_row_parked(struct accio_row *row)
{
	int ready = ACCIO_READY_NOROW;

	/* a RoCEv2 row's datagrams go to port 4791 while it has no row */
	if (row->roce)
		return -1;
	spin_lock_irq(&row->slot_lock);
	if (row->regs || accio_rx_ready(row) ||
	    row_rd(row, ACCIO_UNCORE_ROW_TX_WPTR) !=
	    row_rd(row, ACCIO_UNCORE_ROW_TX_RPTR))
		ready = -1;
	spin_unlock_irq(&row->slot_lock);
	if (ready > 0 && accio_sock_readable(row))
		return ready | ACCIO_READY_SOCKET;
	return ready < 0 ? -1 : 0;
}

/* The wait of ACCIO_IOC_WAIT and of accio_wait(2): ACCIO_READY_* or an
 * error.
 */
static long accio_row_wait(struct accio_row *row, const struct accio_wait *wp)
{
	wait_queue_entry_t row_wait, sk_wait;
	struct accio_wait w = *wp;
	long timeout;
	int err = 0, ready;

	if (w.dir > ACCIO_WAIT_TX || w.need > row->tx_bytes ||
	    (w.dir == ACCIO_WAIT_RX && w.need))
		return -EINVAL;
	timeout = w.timeout_ms < 0 ? MAX_SCHEDULE_TIMEOUT :
		  msecs_to_jiffies(w.timeout_ms);

	/* From now on this is an accelerated I/O thread. */
	current->accio_prio = row->prio;
	if (timeout && accio_halt(row, &w))
		return w.ready;
	if (timeout && accio_yield(row, &w, &timeout))
		return w.ready;
	init_waitqueue_entry(&row_wait, current);
	init_waitqueue_entry(&sk_wait, current);
	add_wait_queue(&row->wq, &row_wait);
	if (w.dir == ACCIO_WAIT_RX)
		add_wait_queue(sk_sleep(row->sk), &sk_wait);
	WRITE_ONCE(row->waiter, current);
	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		ready = w.dir == ACCIO_WAIT_RX ? accio_row_parked(row) : -1;
		if (ready < 0) {
			__set_current_state(TASK_RUNNING);
			accio_row_need(row);
			set_current_state(TASK_INTERRUPTIBLE);
			ready = accio_arm_ready(row, &w);
			if (ready < 0) {
				__set_current_state(TASK_RUNNING);
				continue;	/* evicted since: look again */
			}
		}
		w.ready = ready;
		if (w.ready)
			break;
		if (w.dir == ACCIO_WAIT_TX && READ_ONCE(row->tx_stopped)) {
			err = -EIO;
			break;
		}
		if (!timeout) {
			err = -EAGAIN;
			break;
		}
		if (signal_pending(current)) {
			/* like a socket: a wait with a timeout is not restarted */
			err = w.timeout_ms < 0 ? -ERESTARTSYS : -EINTR;
			break;
		}
		WRITE_ONCE(current->accio_waiting, 1);
		timeout = schedule_timeout(timeout);
		WRITE_ONCE(current->accio_waiting, 0);
		accio_drain_here(row->ict);
	}
	__set_current_state(TASK_RUNNING);
	WRITE_ONCE(row->waiter, NULL);
	remove_wait_queue(&row->wq, &row_wait);
	if (w.dir == ACCIO_WAIT_RX)
		remove_wait_queue(sk_sleep(row->sk), &sk_wait);
	if (err)
		return err;
	return w.ready;
}

static long accio_row_ioctl_wait(struct accio_row *row,
				 struct accio_wait __user *uw)
{
	struct accio_wait w;
	long ready;

	/* three words: cheaper than a general copy on every wait */
	if (get_user(w.dir, &uw->dir) || get_user(w.need, &uw->need) ||
	    get_user(w.timeout_ms, &uw->timeout_ms))
		return -EFAULT;
	ready = accio_row_wait(row, &w);
	if (ready < 0)
		return ready;
	return put_user((u32)ready, &uw->ready);
}

/* ACCIO_IOC_NOTIFY: the owner says a completion is there (RC verbs). */
static long accio_row_ioctl_notify(struct accio_row *row, u32 __user *uside)
{
	void (*notify)(void *ctx, unsigned int how);
	long err = -ENXIO;
	u32 side;

	if (get_user(side, uside))
		return -EFAULT;
	if (side > 1)
		return -EINVAL;
	rcu_read_lock();
	notify = READ_ONCE(row->notify);
	if (notify) {
		notify(READ_ONCE(row->notify_ctx), ACCIO_ROW_NOTIFY_USER |
		       (side ? ACCIO_ROW_NOTIFY_TX : 0));
		err = 0;
	}
	rcu_read_unlock();
	return err;
}

/* ACCIO_IOC_HDR: the header fields into the row's STATE, in place,
 * installed or saved.
 */
static long accio_row_hdr(struct accio_row *row, struct accio_hdr __user *uh)
{
	const u64 m = ACCIO_UNCORE_ROW_STATE_TOS_MASK |
		      ACCIO_UNCORE_ROW_STATE_TTL_MASK |
		      ACCIO_UNCORE_ROW_STATE_NO_DF_MASK;
	struct accio_hdr h;
	unsigned long flags;
	u64 st;

	if (copy_from_user(&h, uh, sizeof(h)))
		return -EFAULT;
	if (!h.ttl || h.df > 1 || memchr_inv(h.reserved, 0, sizeof(h.reserved)))
		return -EINVAL;
	st = (u64)h.tos << ACCIO_UNCORE_ROW_STATE_TOS_SHIFT |
	     (u64)h.ttl << ACCIO_UNCORE_ROW_STATE_TTL_SHIFT;
	if (!h.df)
		st |= ACCIO_UNCORE_ROW_STATE_NO_DF_MASK;
	spin_lock_irqsave(&row->slot_lock, flags);
	row_wr(row, ACCIO_UNCORE_ROW_STATE,
	       (row_rd(row, ACCIO_UNCORE_ROW_STATE) & ~m) | st);
	spin_unlock_irqrestore(&row->slot_lock, flags);
	return 0;
}

static long accio_row_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct accio_row *row = f->private_data;
	struct accio_route r;

	if (current->mm != row->mm)
		return -EACCES;
	switch (cmd) {
	case ACCIO_IOC_WAIT:
		return accio_row_ioctl_wait(row, (void __user *)arg);
	case ACCIO_IOC_ROUTE:
		if (copy_from_user(&r, (void __user *)arg, sizeof(r)))
			return -EFAULT;
		if (r.reserved)
			return -EINVAL;
		return accio_row_route(row, r.ip);
	case ACCIO_IOC_NOTIFY:
		return accio_row_ioctl_notify(row, (u32 __user *)arg);
	case ACCIO_IOC_HDR:
		return accio_row_hdr(row, (struct accio_hdr __user *)arg);
	}
	return -ENOTTY;
}

static __poll_t accio_row_poll(struct file *f, poll_table *pt)
{
	struct accio_row *row = f->private_data;
	__poll_t mask = 0;

	unsigned long flags;

	poll_wait(f, &row->wq, pt);
	poll_wait(f, sk_sleep(row->sk), pt);
	/* as a receiver's wait: a row without work stays with the socket */
	if (current->mm == row->mm && accio_row_parked(row) < 0)
		accio_row_need(row);
	if (accio_sock_queued(row))
		mask |= EPOLLIN | EPOLLRDNORM;
	/* its pending error and shut sides, as datagram_poll() reports them */
	if (READ_ONCE(row->sk->sk_err))
		mask |= EPOLLERR;
	if (READ_ONCE(row->sk->sk_shutdown) & RCV_SHUTDOWN)
		mask |= EPOLLRDHUP | EPOLLIN | EPOLLRDNORM;
	if (READ_ONCE(row->sk->sk_shutdown) == SHUTDOWN_MASK)
		mask |= EPOLLHUP;
	spin_lock_irqsave(&row->slot_lock, flags);
	if (accio_rx_ready(row))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (accio_tx_room(row, ACCIO_TX_HDR + ACCIO_MAX_PAYLOAD))
		mask |= EPOLLOUT | EPOLLWRNORM;
	if (pt && row->regs) {
		__poll_t want = poll_requested_events(pt) & ~mask;

		if (want & EPOLLIN)
			accio_row_arm(row, false);
		if (want & EPOLLOUT)
			accio_row_arm(row, true);
		/* a side may have become ready before it was armed */
		if (accio_rx_ready(row))
			mask |= EPOLLIN | EPOLLRDNORM;
		if (accio_tx_room(row, ACCIO_TX_HDR + ACCIO_MAX_PAYLOAD))
			mask |= EPOLLOUT | EPOLLWRNORM;
	}
	spin_unlock_irqrestore(&row->slot_lock, flags);
	return mask;
}

/* A ring: the vma keeps its file offset, so that evicting the row, which
 * unmaps offset 0 of the file (the register page), leaves the rings alone.
 */
static int accio_ring_mmap(struct accio_ict *ict, struct vm_area_struct *vma,
			   void *cpu, dma_addr_t dma, unsigned long size)
{
	unsigned long pgoff = vma->vm_pgoff;
	int err;

	vma->vm_pgoff = 0;	/* dma_mmap_coherent: offset into the buffer */
	err = dma_mmap_coherent(ict->dev, vma, cpu, dma, size);
	vma->vm_pgoff = pgoff;
	return err;
}

static int accio_row_mmap(struct file *f, struct vm_area_struct *vma)
{
	struct accio_row *row = f->private_data;
	struct accio_ict *ict = row->ict;
	unsigned long size = vma->vm_end - vma->vm_start;
	unsigned long off = vma->vm_pgoff << PAGE_SHIFT;

	if (current->mm != row->mm)
		return -EACCES;
	vma->vm_flags |= VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP;
	if (off == 0 && size == PAGE_SIZE) {
		/* mapped on first touch, unmapped when the row is evicted */
		vma->vm_flags |= VM_IO | VM_PFNMAP;
		vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
		vma->vm_private_data = row;
		vma->vm_ops = &accio_row_vm_ops;
		return 0;
	}
	if (off == ACCIO_STATUS_OFFSET && size == PAGE_SIZE) {
		/* the kernel writes it, the owner only reads */
		if (vma->vm_flags & VM_WRITE)
			return -EACCES;
		vma->vm_flags &= ~VM_MAYWRITE;
		return vm_insert_page(vma, vma->vm_start,
				      virt_to_page(row->status));
	}
	if (off == ACCIO_RX_OFFSET && size == row->rx_bytes)
		return accio_ring_mmap(ict, vma, row->rx_cpu, row->rx_dma, size);
	if (off == ACCIO_TX_OFFSET && size == row->tx_bytes)
		return accio_ring_mmap(ict, vma, row->tx_cpu, row->tx_dma, size);
	return -EINVAL;
}

static void accio_row_free_rcu(struct rcu_head *rcu)
{
	struct accio_row *row = container_of(rcu, struct accio_row, rcu);

	free_page((unsigned long)row->status);
	kfree(row);
}

/* Datagrams the owner queued are sent even when it died before ringing the
 * doorbell (kill -9): ring it and give the engine a bounded time to take the
 * TX ring. A bad record stops the engine, which ends the wait early.
 */
static void accio_row_drain_tx(struct accio_row *row)
{
	u64 wptr = row_get(row, ACCIO_UNCORE_ROW_TX_WPTR);
	u64 rptr = row_get(row, ACCIO_UNCORE_ROW_TX_RPTR);
	unsigned int idle = 0, waited = 0;
	u64 last = rptr;

	if (!(row_get(row, ACCIO_UNCORE_ROW_STATE) &
	      ACCIO_UNCORE_ROW_STATE_ENABLED_MASK) ||
	    wptr == rptr || wptr - rptr > row->tx_bytes)
		return;
	while (rptr != wptr && idle < ACCIO_DRAIN_IDLE_US / 100 &&
	       waited < ACCIO_DRAIN_MAX_US / 100) {
		/* the engine serves only rows it has: install it if evicted */
		mutex_lock(&row->inst_lock);
		accio_row_install(row);
		writeq(1, row->regs + ACCIO_UNCORE_ROW_DOORBELL);
		mutex_unlock(&row->inst_lock);
		usleep_range(100, 200);
		rptr = row_get(row, ACCIO_UNCORE_ROW_TX_RPTR);
		idle = rptr == last ? idle + 1 : 0;
		last = rptr;
		waited++;
	}
}

/* Copy from the RX ring, which the kernel sees once (not mapped twice). */
static void accio_ring_copy(struct accio_row *row, u64 ptr, void *dst,
			    size_t len)
{
	u32 off = ptr & (row->rx_bytes - 1);
	size_t first = min_t(size_t, len, row->rx_bytes - off);

	memcpy(dst, row->rx_cpu + off, first);
	memcpy(dst + first, row->rx_cpu, len - first);
}

/* Datagrams still in the RX ring when the row goes go back to its socket,
 * as if the engine had passed them to the normal path: a socket that leaves
 * the fast path (reconnected, shared with a forked process) loses nothing
 * the engine accepted. Called once the engine no longer serves the row.
 */
static void accio_row_return_rx(struct accio_row *row)
{
	u64 rptr = row_get(row, ACCIO_UNCORE_ROW_RX_RPTR);
	u64 wptr = row_get(row, ACCIO_UNCORE_ROW_RX_WPTR);
	struct sock *sk = row->sk;
	__be16 dport = inet_sk(sk)->inet_sport;
	u8 hdr[ACCIO_RX_HDR];
	struct sk_buff *skb;
	struct udphdr *uh;
	struct iphdr *iph;
	u16 len, sport;
	u32 sip, dip;
	u64 ts;

	if (wptr - rptr > row->rx_bytes)
		return;		/* pointers the owner corrupted */
	while (wptr - rptr >= ACCIO_RX_HDR) {
		accio_ring_copy(row, rptr, hdr, sizeof(hdr));
		len = get_unaligned_le16(hdr + ACCIO_RX_REC_LEN);
		sport = get_unaligned_le16(hdr + ACCIO_RX_REC_SPORT);
		sip = get_unaligned_le32(hdr + ACCIO_RX_REC_SIP);
		ts = get_unaligned_le64(hdr + ACCIO_RX_REC_TSTAMP);
		dip = get_unaligned_le32(hdr + ACCIO_RX_REC_DIP);
		if (len > ACCIO_MAX_PAYLOAD ||
		    ALIGN(ACCIO_RX_HDR + len, ACCIO_REC_ALIGN) > wptr - rptr)
			break;
		skb = alloc_skb(sizeof(*iph) + sizeof(*uh) + len, GFP_KERNEL);
		if (!skb)
			break;
		skb_reset_network_header(skb);
		iph = skb_put_zero(skb, sizeof(*iph));
		skb_set_transport_header(skb, sizeof(*iph));
		uh = skb_put(skb, sizeof(*uh));
		accio_ring_copy(row, rptr + ACCIO_RX_HDR, skb_put(skb, len), len);
		iph->version = 4;
		iph->ihl = 5;
		iph->tos = hdr[ACCIO_RX_REC_TOS];
		iph->ttl = hdr[ACCIO_RX_REC_TTL];
		iph->protocol = IPPROTO_UDP;
		iph->tot_len = htons(sizeof(*iph) + sizeof(*uh) + len);
		iph->saddr = htonl(sip);
		iph->daddr = htonl(dip);
		uh->source = htons(sport);
		uh->dest = dport;
		uh->len = htons(sizeof(*uh) + len);
		uh->check = 0;
		__skb_pull(skb, sizeof(*iph) + sizeof(*uh));
		skb->protocol = htons(ETH_P_IP);
		skb->ip_summed = CHECKSUM_UNNECESSARY;
		if (ts)
			skb_hwtstamps(skb)->hwtstamp = ns_to_ktime(ts);
		local_bh_disable();
		if (__udp_enqueue_schedule_skb(sk, skb) < 0)
			kfree_skb(skb);		/* receive buffer full: dropped */
		local_bh_enable();
		rptr += ALIGN(ACCIO_RX_HDR + len, ACCIO_REC_ALIGN);
	}
	row_set(row, ACCIO_UNCORE_ROW_RX_RPTR, rptr);
}

static void accio_row_destroy(struct accio_row *row)
{
	struct accio_ict *ict = row->ict;
	static const unsigned int clear[] = {
		ACCIO_UNCORE_ROW_DST_MAC, ACCIO_UNCORE_ROW_RX_BASE,
		ACCIO_UNCORE_ROW_RX_SIZE, ACCIO_UNCORE_ROW_TX_BASE,
		ACCIO_UNCORE_ROW_TX_SIZE, ACCIO_UNCORE_ROW_LOCAL,
		ACCIO_UNCORE_ROW_REMOTE,
	};
	void __iomem *regs;
	unsigned int i, slot;

	if (row->tx_cpu)
		accio_row_drain_tx(row);
	/* The engine stops serving the row before its rings go away. */
	mutex_lock(&row->inst_lock);
	regs = row->regs;
	if (regs) {
		slot = accio_row_evict(row, false);
		for (i = 0; i < ARRAY_SIZE(clear); i++)
			writeq(0, regs + clear[i]);
		accio_slot_free(ict, slot);
	}
	mutex_unlock(&row->inst_lock);
	spin_lock(&ict->lock);
	if (!list_empty(&row->node)) {
		list_del_init(&row->node);
		ict->nconns--;
	}
	spin_unlock(&ict->lock);
	if (row->rx_cpu && row->sock_file)
		accio_row_return_rx(row);
	if (row->rx_cpu)
		dma_free_coherent(ict->dev, row->rx_bytes, row->rx_cpu,
				  row->rx_dma);
	if (row->tx_cpu)
		dma_free_coherent(ict->dev, row->tx_bytes, row->tx_cpu,
				  row->tx_dma);
	if (row->sock_file)
		fput(row->sock_file);
	mmdrop(row->mm);
	call_rcu(&row->rcu, accio_row_free_rcu);
}

static int accio_row_release(struct inode *inode, struct file *f)
{
	accio_row_destroy(f->private_data);
	return 0;
}

/* /proc/PID/fdinfo/FD of a row fd: which row, its state bits, ring
 * pointers and the thread sleeping on it, so that a stalled program can be
 * told from a stalled ring.
 */
static void accio_row_show_fdinfo(struct seq_file *m, struct file *f)
{
	static const struct {
		const char *name;
		unsigned int off;
	} counters[] = {
		{ "rx_pkts", ACCIO_UNCORE_ROW_RX_PKTS },
		{ "rx_drops", ACCIO_UNCORE_ROW_RX_DROPS },
		{ "tx_pkts", ACCIO_UNCORE_ROW_TX_PKTS },
		{ "tx_errors", ACCIO_UNCORE_ROW_TX_ERRORS },
		{ "prot_faults", ACCIO_UNCORE_ROW_PROT_FAULTS },
	};
	struct accio_row *row = f->private_data;
	u64 r[ACCIO_ROW_NREGS];
	struct task_struct *t;
	unsigned long flags;
	unsigned int i;
	int slot;

	spin_lock_irqsave(&row->slot_lock, flags);
	slot = row->slot;
	for (i = 0; i < ACCIO_ROW_NREGS; i++)
		r[i] = 8 * i == ACCIO_UNCORE_ROW_DOORBELL ? 0 : row_rd(row, 8 * i);
	spin_unlock_irqrestore(&row->slot_lock, flags);
	/* row -1: the connection has no hardware row now (evicted) */
	seq_printf(m, "row:\t%d\n", slot);
	seq_printf(m, "state:\t%#llx\n", r[ACCIO_UNCORE_ROW_STATE / 8]);
	seq_printf(m, "owner_asid:\t%llu\n", r[ACCIO_UNCORE_ROW_OWNER_ASID / 8]);
	seq_printf(m, "rx_wptr_rptr_size:\t%llu %llu %u\n",
		   r[ACCIO_UNCORE_ROW_RX_WPTR / 8], r[ACCIO_UNCORE_ROW_RX_RPTR / 8],
		   row->rx_bytes);
	seq_printf(m, "tx_wptr_rptr_size:\t%llu %llu %u\n",
		   r[ACCIO_UNCORE_ROW_TX_WPTR / 8], r[ACCIO_UNCORE_ROW_TX_RPTR / 8],
		   row->tx_bytes);
	for (i = 0; i < ARRAY_SIZE(counters); i++)
		seq_printf(m, "%s:\t%llu\n", counters[i].name,
			   r[counters[i].off / 8]);
	seq_printf(m, "socket_readable:\t%d\n", accio_sock_readable(row));
	/* a task is freed only after a grace period: its pid can be read */
	rcu_read_lock();
	t = READ_ONCE(row->waiter);
	seq_printf(m, "waiter:\t%d\n", t ? task_pid_nr(t) : 0);
	rcu_read_unlock();
	seq_printf(m, "prio:\t%u\n", row->prio);
	seq_printf(m, "halts:\t%llu\n", row->halts);
	seq_printf(m, "halts_expired:\t%llu\n", row->halts_expired);
	seq_printf(m, "yields:\t%llu\n", row->yields);
	seq_printf(m, "yields_missed:\t%llu\n", row->yields_missed);
	seq_printf(m, "installs:\t%llu\n", READ_ONCE(row->installs));
	seq_printf(m, "evictions:\t%llu\n", READ_ONCE(row->evictions));
	seq_printf(m, "tx_stopped:\t%d\n", READ_ONCE(row->tx_stopped));
	if (row->roce)
		seq_printf(m, "roce_qpn:\t%#llx\n",
			   r[ACCIO_UNCORE_ROW_ROCE_QPN / 8]);
	seq_printf(m, "link:\t%s\n", READ_ONCE(row->ict->link_down) ?
		   "down (transmit held)" : "up");
}

static const struct file_operations accio_row_fops = {
	.owner = THIS_MODULE,
	.release = accio_row_release,
	.show_fdinfo = accio_row_show_fdinfo,
	.unlocked_ioctl = accio_row_ioctl,
	.poll = accio_row_poll,
	.mmap = accio_row_mmap,
	.llseek = noop_llseek,
};

/* accio_wait(2): ACCIO_IOC_WAIT with its arguments in registers and the
 * readiness as the return value, without the ioctl's dispatch and copies;
 * on the path of every blocking receive that finds its ring empty.
 */
SYSCALL_DEFINE4(accio_wait, unsigned int, fd, unsigned int, dir, u32, need,
		int, timeout_ms)
{
	struct accio_wait w = {
		.dir = dir, .need = need, .timeout_ms = timeout_ms,
	};
	struct fd f = fdget(fd);
	struct accio_row *row;
	long ret;

	if (!f.file)
		return -EBADF;
	row = f.file->private_data;
	if (f.file->f_op != &accio_row_fops)
		ret = -ENOTTY;
	else if (current->mm != row->mm)
		ret = -EACCES;
	else
		ret = accio_row_wait(row, &w);
	fdput(f);
	return ret;
}

/* ---- SIOCACCIO ---------------------------------------------------------- */

/**
 * accio_roce_row - check a row fd for the verbs driver
 * @f: a file
 * @slot: the row's ICT slot now (rows may move)
 *
 * Return: 0 if @f is a row fd of the calling process's address space,
 * accelerated with ACCIO_ACCEL_ROCE; -EBADF if it is no row fd, -EACCES if
 * the row belongs to another address space, -EINVAL if it is not a RoCEv2
 * row.
 */
int accio_roce_row(struct file *f, u32 *slot)
{
	struct accio_row *row;

	if (f->f_op != &accio_row_fops)
		return -EBADF;
	row = f->private_data;
	if (row->mm != current->mm)
		return -EACCES;
	if (!(row_get(row, ACCIO_UNCORE_ROW_STATE) &
	      ACCIO_UNCORE_ROW_STATE_ROCE_MASK))
		return -EINVAL;
	*slot = READ_ONCE(row->slot);
	return 0;
}

/**
 * accio_roce_row_set_qpn - name the queue pair a RoCEv2 row serves
 * @f: a row fd that accio_roce_row() accepted
 * @qpn: the QP number, 0 for none
 *
 * The engine delivers to the row the RoCEv2 datagrams whose BTH names
 * @qpn, and none while it is 0. The caller keeps QP numbers unique.
 */
void accio_roce_row_set_qpn(struct file *f, u32 qpn)
{
	row_set(f->private_data, ACCIO_UNCORE_ROW_ROCE_QPN,
		qpn & ACCIO_UNCORE_ROW_ROCE_QPN_QPN_MASK);
}

/**
 * accio_row_set_notify - call a function on the row's wake-ups
 * @f: a row fd that accio_roce_row() accepted
 * @notify: called from interrupt context on every wake-up of the row, with
 *	the side that woke (TX: the engine sent what was queued), NULL to stop;
 *	when this returns after stopping, no call is running
 * @ctx: its argument, which names the row's one user
 *
 * Return: 0, or -EBUSY if the row has a function already.
 */
int accio_row_set_notify(struct file *f,
			 void (*notify)(void *ctx, unsigned int how),
			 void *ctx)
{
	struct accio_row *row = f->private_data;

	if (notify) {
		if (cmpxchg(&row->notify_ctx, NULL, ctx))
			return -EBUSY;
		smp_wmb();	/* the context before the function */
		WRITE_ONCE(row->notify, notify);
		return 0;
	}
	WRITE_ONCE(row->notify, NULL);
	synchronize_rcu();	/* accio_row_wake() runs under the RCU lock */
	WRITE_ONCE(row->notify_ctx, NULL);
	return 0;
}

/**
 * accio_row_arm_notify - ask for a wake-up on the row's next completion
 * @f: a row fd that accio_roce_row() accepted
 * @tx: the TX side (the engine sends what is queued), else RX (a datagram)
 *
 * As the verbs ask of a completion queue: what the rings hold already
 * does not wake; the next datagram, or the next doorbell's sends, will.
 *
 * Return: 1 if the connection has no row just now (its next access
 * installs one, and the caller should look), else 0.
 */
int accio_row_arm_notify(struct file *f, bool tx)
{
	struct accio_row *row = f->private_data;
	unsigned long flags;
	int ready = 0;

	local_irq_save(flags);
	spin_lock(&row->slot_lock);
	if (row->regs)
		accio_row_arm(row, tx);
	else
		ready = 1;
	spin_unlock(&row->slot_lock);
	local_irq_restore(flags);
	return ready;
}

static struct net_device *accio_nic_dev(struct net *net)
{
	struct net_device *dev;

	for_each_netdev(net, dev)
		if (accio_is_nic(dev))
			return dev;
	return NULL;
}

/* ict->lock held */
static bool accio_sock_has_row(struct accio_ict *ict, struct sock *sk)
{
	struct accio_row *row;

	list_for_each_entry(row, &ict->conns, node)
		if (row->sk == sk)
			return true;
	return false;
}

/* RoCEv2 rows share the NIC's RoCEv2 port: the engine tells them apart by
 * the BTH's destination QP (ROCE_QPN). They stay installed while the clock
 * has another choice, so at most half of the table may be RoCEv2 rows.
 * ict->lock held.
 */
static bool accio_roce_full(struct accio_ict *ict)
{
	struct accio_row *row;
	unsigned int n = 0;

	list_for_each_entry(row, &ict->conns, node)
		n += row->roce;
	return n >= ict->nrows / 2;
}

static int accio_ring_bytes(u32 *bytes)
{
	if (!*bytes)
		*bytes = ACCIO_RING_DEFAULT;
	if (*bytes < ACCIO_RING_MIN || *bytes > ACCIO_RING_MAX ||
	    !is_power_of_2(*bytes))
		return -EINVAL;
	return 0;
}

/* What the socket asks of the frames and the receive path that the engine
 * follows: its TOS byte (IP_TOS) and TTL (IP_TTL, else the namespace's
 * default), no DF when its path MTU discovery is off (Linux sets DF only
 * for IP_PMTUDISC_DO and _WANT), and membership of a group that shares its
 * address and port (SO_REUSEPORT): the engine spreads the group's
 * datagrams over its rows by a hash of the source, as the stack spreads
 * them over the group's sockets.
 */
static u64 accio_sock_state(struct sock *sk)
{
	struct inet_sock *inet = inet_sk(sk);
	int ttl;
	u8 pmtudisc, tos;
	u64 st = 0;
	bool group;

	lock_sock(sk);
	pmtudisc = inet->pmtudisc;
	tos = inet->tos;
	ttl = inet->uc_ttl;
	group = sk->sk_reuseport;
	release_sock(sk);
	if (ttl < 0)
		ttl = READ_ONCE(sock_net(sk)->ipv4.sysctl_ip_default_ttl);
	st |= (u64)tos << ACCIO_UNCORE_ROW_STATE_TOS_SHIFT;
	st |= (u64)(ttl & 0xff) << ACCIO_UNCORE_ROW_STATE_TTL_SHIFT;
	if (pmtudisc != IP_PMTUDISC_DO && pmtudisc != IP_PMTUDISC_WANT)
		st |= ACCIO_UNCORE_ROW_STATE_NO_DF_MASK;
	if (group)
		st |= ACCIO_UNCORE_ROW_STATE_GROUP_MASK;
	return st;
}

/* A new connection's registers, saved until it gets a hardware row. */
static void accio_row_program(struct accio_row *row, __be32 lip, __be16 lport,
			      __be32 rip, __be16 rport, bool roce)
{
	memset(row->reg, 0, sizeof(row->reg));
	row_wr(row, ACCIO_UNCORE_ROW_LOCAL,
	       ntohl(lip) |
	       (u64)ntohs(lport) << ACCIO_UNCORE_ROW_LOCAL_PORT_SHIFT |
	       (u64)IPPROTO_UDP << ACCIO_UNCORE_ROW_LOCAL_PROTO_SHIFT);
	row_wr(row, ACCIO_UNCORE_ROW_REMOTE,
	       ntohl(rip) |
	       (u64)ntohs(rport) << ACCIO_UNCORE_ROW_REMOTE_PORT_SHIFT);
	row_wr(row, ACCIO_UNCORE_ROW_OWNER_COOKIE, (u64)(uintptr_t)row);
	row_wr(row, ACCIO_UNCORE_ROW_RX_BASE, row->rx_dma);
	row_wr(row, ACCIO_UNCORE_ROW_RX_SIZE, row->rx_bytes);
	row_wr(row, ACCIO_UNCORE_ROW_TX_BASE, row->tx_dma);
	row_wr(row, ACCIO_UNCORE_ROW_TX_SIZE, row->tx_bytes);
	row_wr(row, ACCIO_UNCORE_ROW_STATE,
	       ACCIO_UNCORE_ROW_STATE_ENABLED_MASK |
	       ACCIO_UNCORE_ROW_STATE_ACCEL_MASK |
	       (roce ? ACCIO_UNCORE_ROW_STATE_ROCE_MASK : 0) |
	       (u64)row->prio << ACCIO_UNCORE_ROW_STATE_PRIO_SHIFT);
}

/* ---- owners: the satp ASID, or the SoC's context registers ------------ */

#define ACCIO_CTX_STRIDE	8	/* CTX[h] at 8 * h */
#define ACCIO_CTX_NOBODY	0xffff	/* what CTX holds for no owner */

/* The identities of the address spaces that own rows, by mm. */
struct accio_mm_id {
	struct hlist_node node;
	struct mm_struct *mm;
	unsigned int id;
	struct rcu_head rcu;
};

static DEFINE_IDA(accio_mm_ids);
static DEFINE_HASHTABLE(accio_mm_tab, 6);
static DEFINE_SPINLOCK(accio_mm_tab_lock);	/* writers of accio_mm_tab */
static DEFINE_MUTEX(accio_mm_id_lock);		/* one giver of identities */
static atomic_t accio_mm_nids;

/* RCU read side or accio_mm_tab_lock */
static struct accio_mm_id *accio_mm_find(struct mm_struct *mm)
{
	struct accio_mm_id *e;

	hash_for_each_possible_rcu(accio_mm_tab, e, node, (unsigned long)mm)
		if (e->mm == mm)
			return e;
	return NULL;
}

/**
 * accio_mm_switched - this hart now runs @mm
 * @mm: the address space switch_mm() switched to
 *
 * Called by switch_mm() with interrupts off. On a SoC with context
 * registers, CTX[this hart] names @mm before the hart returns to user mode.
 */
void accio_mm_switched(struct mm_struct *mm)
{
	struct accio_ict *ict = READ_ONCE(accio_ict);
	struct accio_mm_id *e;
	unsigned int id = ACCIO_CTX_NOBODY;
	int h;

	if (!ict || !ict->ctx)
		return;
	h = this_hart(ict);
	if (h < 0)
		return;
	if (atomic_read(&accio_mm_nids)) {
		rcu_read_lock();
		e = accio_mm_find(mm);
		if (e)
			id = e->id;
		rcu_read_unlock();
	}
	writeq(id, ict->ctx + h * ACCIO_CTX_STRIDE);
}

static void accio_ctx_refresh(void *info)
{
	struct mm_struct *mm = info;

	if (current->active_mm == mm)
		accio_mm_switched(mm);
}

/* The identity of @mm in the context registers, given on its first row
 * and kept until @mm is freed. Harts that run @mm already learn it before
 * this returns.
 */
static int accio_mm_id(struct mm_struct *mm)
{
	struct accio_mm_id *e;
	int id;

	mutex_lock(&accio_mm_id_lock);
	rcu_read_lock();
	e = accio_mm_find(mm);
	id = e ? e->id : 0;
	rcu_read_unlock();
	if (id)
		goto out;
	e = kzalloc(sizeof(*e), GFP_KERNEL);
	id = e ? ida_alloc_range(&accio_mm_ids, 1, ACCIO_CTX_NOBODY - 1,
				 GFP_KERNEL) : -ENOMEM;
	if (id < 0) {
		kfree(e);
		goto out;
	}
	e->mm = mm;
	e->id = id;
	spin_lock_irq(&accio_mm_tab_lock);
	hash_add_rcu(accio_mm_tab, &e->node, (unsigned long)mm);
	atomic_inc(&accio_mm_nids);
	spin_unlock_irq(&accio_mm_tab_lock);
	on_each_cpu(accio_ctx_refresh, mm, 1);
out:
	mutex_unlock(&accio_mm_id_lock);
	return id;
}

/**
 * accio_mm_destroyed - @mm is freed
 * @mm: the address space
 *
 * Called by destroy_context(). The rows of @mm are gone (each holds a
 * reference on its owner's mm), so its identity may name another one.
 */
void accio_mm_destroyed(struct mm_struct *mm)
{
	struct accio_mm_id *e;
	unsigned long flags;

	if (!atomic_read(&accio_mm_nids))
		return;
	spin_lock_irqsave(&accio_mm_tab_lock, flags);
	e = accio_mm_find(mm);
	if (e) {
		hash_del_rcu(&e->node);
		atomic_dec(&accio_mm_nids);
	}
	spin_unlock_irqrestore(&accio_mm_tab_lock, flags);
	if (e) {
		ida_free(&accio_mm_ids, e->id);
		kfree_rcu(e, rcu);
	}
}

/* The owner is the address space running this ioctl (or faulting on the
 * row's page). inst_lock held, row installed. With context registers it is
 * the address space's identity; otherwise the ASID it runs with now, read
 * with preemption off so that it cannot change between reading satp and
 * writing the row (it changes only when the address space is switched in
 * after an ASID rollover; accio_mm_asid_changed() then follows).
 */
static int accio_row_set_owner(struct accio_row *row)
{
	struct accio_ict *ict = row->ict;
	unsigned long flags;
	int owner = 0;

	if (ict->ctx) {
		owner = accio_mm_id(row->mm);
		if (owner < 0)
			return owner;
	}
	preempt_disable();
	if (!ict->ctx)
		owner = (csr_read(CSR_SATP) >> SATP_ASID_SHIFT) & SATP_ASID_MASK;
	raw_spin_lock_irqsave(&ict->owner_lock, flags);
	writeq(owner, row->regs + ACCIO_UNCORE_ROW_OWNER_ASID);
	raw_spin_unlock_irqrestore(&ict->owner_lock, flags);
	preempt_enable();
	/* ASID 0 means the kernel runs every process without ASIDs (too few
	 * of them in this hart): the ASID check could not tell owners apart.
	 */
	return owner ? 0 : -EOPNOTSUPP;
}

/**
 * accio_mm_asid_changed - an address space got a new ASID
 * @mm: the address space
 * @asid: its new ASID
 *
 * Called by the RISC-V ASID allocator, with its lock held and interrupts
 * off, when @mm is switched in after an ASID rollover. The rows @mm owns
 * follow it, so its next user-mode access to them passes the ASID check;
 * an ASID the address space gave up no longer opens its rows.
 */
void accio_mm_asid_changed(struct mm_struct *mm, unsigned long asid)
{
	struct accio_ict *ict = READ_ONCE(accio_ict);
	struct accio_row *row;
	unsigned int i;

	/* with context registers the owner is no ASID */
	if (!ict || ict->ctx || !READ_ONCE(ict->nused))
		return;
	raw_spin_lock(&ict->owner_lock);
	rcu_read_lock();
	for (i = 0; i < ict->nrows; i++) {
		row = rcu_dereference(ict->rows[i]);
		/* a row being evicted has no regs: its owner is cleared */
		if (row && row->mm == mm && row->regs)
			writeq(asid, row->regs + ACCIO_UNCORE_ROW_OWNER_ASID);
	}
	rcu_read_unlock();
	raw_spin_unlock(&ict->owner_lock);
}

/* The addresses of a socket about to be accelerated, and its next hop. */
struct accio_tuple {
	__be32 lip, rip, nexthop;
	__be16 lport, rport;
	bool connected;
	u8 mac[ETH_ALEN];
	u32 gen;		/* the paths' gen before any of it was read */
};

/* The receive ring of a socket whose program names no size: it holds as
 * many datagrams of the largest size as the socket's receive buffer holds
 * on the kernel's path, where each costs at least the NIC's full receive
 * buffer and its skb (SKB_TRUESIZE(2048)) whatever its length. With
 * Linux's default buffer (net.core.rmem_default, 212992 bytes) that is 82
 * datagrams, 128 KiB of ring; ACCIO_RING_DEFAULT held 43 of 1472 bytes,
 * and a burst that the socket would have kept was dropped at the ring.
 */
static u32 accio_rx_default(struct sock *sk)
{
	u32 n = DIV_ROUND_UP((u32)READ_ONCE(sk->sk_rcvbuf), SKB_TRUESIZE(2048));
	u32 bytes = n * ALIGN(ACCIO_RX_HDR + ACCIO_MAX_PAYLOAD, ACCIO_REC_ALIGN);

	return clamp_t(u32, roundup_pow_of_two(bytes), ACCIO_RING_DEFAULT,
		       ACCIO_RING_MAX);
}

/* Copy in and check SIOCACCIO's argument; ring sizes default here. */
static int accio_accel_args(struct accio_accel *a, void __user *uarg,
			    struct sock *sk)
{
	if (copy_from_user(a, uarg, sizeof(*a)))
		return -EFAULT;
	if (a->version != ACCIO_UAPI_VERSION ||
	    (a->flags & ~ACCIO_ACCEL_ROCE) || a->reserved0 || a->reserved1 ||
	    memchr_inv(a->reserved, 0, sizeof(a->reserved)))
		return -EINVAL;
	if (!a->rx_bytes)
		a->rx_bytes = accio_rx_default(sk);
	if (accio_ring_bytes(&a->rx_bytes) || accio_ring_bytes(&a->tx_bytes))
		return -EINVAL;
	return 0;
}

/* The socket's addresses, its local address on the Accio NIC (a socket
 * bound to no address takes the NIC's, one bound to another interface's
 * address is refused) and a connected socket's next hop.
 */
static int accio_sock_tuple(struct sock *sk, bool roce, struct accio_tuple *t)
{
	struct net *net = sock_net(sk);
	struct net_device *dev;

	/* the table as probe published it; routes and MTUs are read after */
	t->gen = accio_paths_gen(smp_load_acquire(&accio_ict));
	lock_sock(sk);
	t->lip = inet_sk(sk)->inet_rcv_saddr;
	t->lport = inet_sk(sk)->inet_sport;
	t->connected = sk->sk_state == TCP_ESTABLISHED;
	t->rip = t->connected ? inet_sk(sk)->inet_daddr : 0;
	t->rport = t->connected ? inet_sk(sk)->inet_dport : 0;
	release_sock(sk);
	if (!t->lport)
		return -EINVAL;		/* not bound */
	/* A RoCEv2 row takes the NIC's RoCEv2 port (on the socket's address),
	 * whoever holds that port in the socket layer: the engine steers the
	 * port's datagrams to the row before the stack sees them, like the
	 * RDMA engine of a RoCE NIC. The socket anchors the row's address.
	 */
	if (roce)
		t->lport = htons(ACCIO_ROCE_PORT);

	rtnl_lock();
	dev = accio_nic_dev(net);
	if (dev && !t->lip)
		t->lip = inet_select_addr(dev, t->rip, RT_SCOPE_UNIVERSE);
	else if (dev && __ip_dev_find(net, t->lip, false) != dev)
		t->lip = 0;
	rtnl_unlock();
	if (!dev)
		return -ENODEV;
	if (!t->lip)
		return -EADDRNOTAVAIL;
	if (t->connected)
		return accio_resolve(net, t->rip, &t->nexthop, t->mac);
	return 0;
}

/* A new connection of the socket, in the table's list: one per socket, and
 * RoCEv2 rows up to half of the table.
 */
static struct accio_row *accio_conn_new(struct accio_ict *ict, struct sock *sk,
					const struct accio_accel *a)
{
	struct accio_row *row;
	int err = 0;

	row = kzalloc(sizeof(*row), GFP_KERNEL);
	if (!row)
		return ERR_PTR(-ENOMEM);
	row->status = (void *)get_zeroed_page(GFP_KERNEL);
	if (!row->status) {
		kfree(row);
		return ERR_PTR(-ENOMEM);
	}
	row->ict = ict;
	row->prio = ACCIO_DEFAULT_PRIO;
	row->rx_bytes = a->rx_bytes;
	row->tx_bytes = a->tx_bytes;
	row->sk = sk;
	row->mm = current->mm;
	mmgrab(row->mm);
	init_waitqueue_head(&row->wq);
	mutex_init(&row->lock);
	mutex_init(&row->inst_lock);
	spin_lock_init(&row->slot_lock);
	row->slot = -1;
	row->roce = a->flags & ACCIO_ACCEL_ROCE;

	spin_lock(&ict->lock);
	if (accio_sock_has_row(ict, sk))
		err = -EALREADY;
	else if (row->roce && accio_roce_full(ict))
		err = -ENOSPC;
	if (!err) {
		list_add_tail(&row->node, &ict->conns);
		ict->nconns++;
		/* from here on accio_paths_bump() writes it */
		row->status->paths_gen = atomic_read(&ict->paths_gen);
	}
	spin_unlock(&ict->lock);
	if (err) {
		mmdrop(row->mm);
		free_page((unsigned long)row->status);
		kfree(row);
		return ERR_PTR(err);
	}
	return row;
}

/* Pin the connection's rings, program its registers and give it a row at
 * once: a new connection is about to be used. *slot: the row it got.
 */
static int accio_conn_setup(struct accio_row *row, struct sock *sk,
			    const struct accio_tuple *t, int *slot)
{
	struct accio_ict *ict = row->ict;
	int err;
	u64 st;

	row->rx_cpu = dma_alloc_coherent(ict->dev, row->rx_bytes, &row->rx_dma,
					 GFP_KERNEL);
	row->tx_cpu = dma_alloc_coherent(ict->dev, row->tx_bytes, &row->tx_dma,
					 GFP_KERNEL);
	if (!row->rx_cpu || !row->tx_cpu)
		return -ENOMEM;

	accio_row_program(row, t->lip, t->lport, t->rip, t->rport, row->roce);
	st = accio_sock_state(sk);
	row->group = st & ACCIO_UNCORE_ROW_STATE_GROUP_MASK;
	row_wr(row, ACCIO_UNCORE_ROW_STATE,
	       row_rd(row, ACCIO_UNCORE_ROW_STATE) | st);
	if (t->connected) {
		row_wr(row, ACCIO_UNCORE_ROW_DST_MAC, mac_to_reg(t->mac));
		row->nexthop = t->nexthop;
		row->nh_gen = t->gen;
		row->have_nexthop = true;
	}
	/* a row installed later starts from here: the ring's end is known */
	row->status->rx_wptr = row->reg[ACCIO_UNCORE_ROW_RX_WPTR / 8];
	mutex_lock(&row->inst_lock);
	accio_row_install(row);
	err = accio_row_set_owner(row);
	*slot = row->slot;
	mutex_unlock(&row->inst_lock);
	return err;
}

/* The row fd, told to the caller with the row and the addresses. On
 * failure the row is left to the caller, or, once the file holds it, freed
 * with the file (*owned).
 */
static int accio_row_fd(struct accio_row *row, struct socket *sock,
			struct accio_accel *a, const struct accio_tuple *t,
			int slot, void __user *uarg, bool *owned)
{
	struct file *file;
	int fd;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		return fd;
	/* its own inode: evicting the row unmaps this fd's register page */
	file = anon_inode_getfile_secure("[accio-row]", &accio_row_fops, row,
					 O_RDWR, NULL);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		return PTR_ERR(file);
	}
	WRITE_ONCE(row->file, file);
	row->sock_file = get_file(sock->file);

	a->fd = fd;
	a->row = slot;
	a->local_ip = t->lip;
	a->local_port = t->lport;
	a->remote_ip = t->rip;
	a->remote_port = t->rport;
	a->rx_offset = ACCIO_RX_OFFSET;
	a->tx_offset = ACCIO_TX_OFFSET;
	a->status_offset = ACCIO_STATUS_OFFSET;
	a->paths_gen = t->gen;
	if (copy_to_user(uarg, a, sizeof(*a))) {
		put_unused_fd(fd);
		*owned = true;
		fput(file);	/* frees the row */
		return -EFAULT;
	}
	fd_install(fd, file);
	return 0;
}

/* SIOCACCIO on a bound UDP/IPv4 socket: give it a row and a row fd. */
int accio_sock_ioctl(struct socket *sock, void __user *uarg)
{
	struct accio_ict *ict = READ_ONCE(accio_ict);
	struct sock *sk = sock->sk;
	struct accio_tuple t;
	struct accio_accel a;
	struct accio_row *row;
	bool owned = false;
	int slot, err;

	if (!ict)
		return -ENODEV;
	if (sk->sk_family != AF_INET || sk->sk_type != SOCK_DGRAM ||
	    sk->sk_protocol != IPPROTO_UDP)
		return -EPROTONOSUPPORT;
	err = accio_accel_args(&a, uarg, sk);
	if (err)
		return err;
	if (!current->mm)
		return -EINVAL;
	err = accio_sock_tuple(sk, a.flags & ACCIO_ACCEL_ROCE, &t);
	if (err)
		return err;

	row = accio_conn_new(ict, sk, &a);
	if (IS_ERR(row))
		return PTR_ERR(row);
	err = accio_conn_setup(row, sk, &t, &slot);
	if (!err)
		err = accio_row_fd(row, sock, &a, &t, slot, uarg, &owned);
	if (err) {
		if (!owned)
			accio_row_destroy(row);
		return err;
	}
	current->accio_prio = row->prio;
	return 0;
}

/* ---- sysfs -------------------------------------------------------------- */

static ssize_t rows_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct accio_ict *ict = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", ict->nrows);
}
static DEVICE_ATTR_RO(rows);

static ssize_t rows_used_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct accio_ict *ict = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(ict->nused));
}
static DEVICE_ATTR_RO(rows_used);

/* accelerated sockets, with a hardware row or not */
static ssize_t connections_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct accio_ict *ict = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(ict->nconns));
}
static DEVICE_ATTR_RO(connections);

static ssize_t installs_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	struct accio_ict *ict = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%llu\n", READ_ONCE(ict->installs));
}
static DEVICE_ATTR_RO(installs);

static ssize_t evictions_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct accio_ict *ict = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%llu\n", READ_ONCE(ict->evictions));
}
static DEVICE_ATTR_RO(evictions);

static ssize_t events_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	static const char * const names[ACCIO_NEVENTS] = {
		[ACCIO_EV_LINK_UP] = "link_up",
		[ACCIO_EV_LINK_DOWN] = "link_down",
		[ACCIO_EV_PROTECTION] = "protection",
		[ACCIO_EV_RX_RING_FULL] = "rx_ring_full",
		[ACCIO_EV_TX_RING_ERROR] = "tx_ring_error",
		[ACCIO_EV_ICT_MISS] = "ict_miss",
		[ACCIO_EV_DOORBELL_DISABLED] = "doorbell_disabled",
		[ACCIO_EV_ROW_RANGE] = "row_range",
		[ACCIO_EV_MMIO_TX_ERROR] = "mmio_tx_error",
	};
	struct accio_ict *ict = dev_get_drvdata(dev);
	int i, n = 0;

	for (i = 1; i < ACCIO_NEVENTS; i++)
		n += sysfs_emit_at(buf, n, "%s %llu\n", names[i],
				   ict->events[i]);
	return n;
}
static DEVICE_ATTR_RO(events);

/* Frames the engine dropped as malformed, a wrong RoCEv2 ICRC included. */
static ssize_t rx_malformed_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	struct accio_ict *ict = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%llu\n",
			  readq(ict->base + ACCIO_UNCORE_RX_MALFORMED));
}
static DEVICE_ATTR_RO(rx_malformed);

static struct attribute *accio_ict_attrs[] = {
	&dev_attr_rows.attr,
	&dev_attr_rows_used.attr,
	&dev_attr_connections.attr,
	&dev_attr_installs.attr,
	&dev_attr_evictions.attr,
	&dev_attr_events.attr,
	&dev_attr_rx_malformed.attr,
	NULL,
};
ATTRIBUTE_GROUPS(accio_ict);

/* ---- probe -------------------------------------------------------------- */

/* Are the wake-ups wired to the harts as a local interrupt? Then every
 * hart's entry names its own riscv,cpu-intc node with the same cause, and
 * one per-CPU interrupt serves them all. Otherwise they come through the
 * platform's interrupt controller, one line per hart.
 */
static int accio_wake_local_probe(struct accio_ict *ict, struct device_node *np)
{
	struct irq_domain *domain = NULL;
	struct of_phandle_args args;
	unsigned long hartid;
	unsigned int h;
	int cause = -1, cpu, err;

	ict->wake_cause = -1;
	for (h = 0; h < ict->nharts; h++) {
		if (of_irq_parse_one(np, h, &args))
			return -EINVAL;
		if (!of_device_is_compatible(args.np, "riscv,cpu-intc")) {
			of_node_put(args.np);
			if (!h)
				return 0;	/* through the PLIC */
			return dev_err_probe(ict->dev, -EINVAL,
					     "wake-up %u is not local\n", h);
		}
		err = riscv_of_parent_hartid(args.np, &hartid);
		if (!err && (hartid != h || args.args_count != 1 ||
			     args.args[0] < 16 || args.args[0] >= BITS_PER_LONG ||
			     (cause >= 0 && args.args[0] != cause)))
			err = -EINVAL;
		if (!domain)
			domain = irq_find_host(args.np);
		of_node_put(args.np);
		if (err)
			return dev_err_probe(ict->dev, err,
					     "bad local wake-up of hart %u\n", h);
		cause = args.args[0];
	}
	if (!domain)
		return dev_err_probe(ict->dev, -ENODEV, "no hart interrupt domain\n");
	accio_wake_virq = irq_create_mapping(domain, cause);
	if (!accio_wake_virq)
		return -EINVAL;
	for_each_possible_cpu(cpu)
		per_cpu(accio_wake_dev, cpu) = ict;
	err = request_percpu_irq(accio_wake_virq, accio_wake_local_irq,
				 "accio-wake", &accio_wake_dev);
	if (err)
		return err;
	err = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "net/accio:wake",
				accio_wake_cpu_online, accio_wake_cpu_offline);
	if (err < 0) {
		free_percpu_irq(accio_wake_virq, &accio_wake_dev);
		return err;
	}
	ict->wake_cause = cause;
	dev_info(ict->dev, "wake-ups on local interrupt %d of each hart\n",
		 cause);
	return 0;
}

/* A SoC that checks user accesses against CTX[hart] names its user alias
 * and its context registers ("user", "ctx"); processes map the user alias.
 */
static int accio_ctx_probe(struct accio_ict *ict, struct platform_device *pdev,
			   resource_size_t size)
{
	struct resource *user, *ctx;

	user = platform_get_resource_byname(pdev, IORESOURCE_MEM, "user");
	ctx = platform_get_resource_byname(pdev, IORESOURCE_MEM, "ctx");
	if (!user && !ctx)
		return 0;
	if (!user || !ctx || resource_size(user) < size)
		return dev_err_probe(ict->dev, -EINVAL,
				     "a user alias needs context registers, and the reverse\n");
	ict->ctx = devm_ioremap_resource(ict->dev, ctx);
	if (IS_ERR(ict->ctx))
		return PTR_ERR(ict->ctx);
	ict->user_phys = user->start;
	return 0;
}

static int accio_ict_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct accio_ict *ict;
	struct resource *res;
	unsigned int h;
	u64 id, cfg;
	int irq, cpu, err;

	if (accio_ict)
		return -EBUSY;
	ict = devm_kzalloc(dev, sizeof(*ict), GFP_KERNEL);
	if (!ict)
		return -ENOMEM;
	ict->dev = dev;
	spin_lock_init(&ict->lock);
	spin_lock_init(&ict->alloc_lock);
	INIT_LIST_HEAD(&ict->conns);
	raw_spin_lock_init(&ict->owner_lock);
	ict->base = devm_platform_get_and_ioremap_resource(pdev, 0, &res);
	if (IS_ERR(ict->base))
		return PTR_ERR(ict->base);
	ict->phys = res->start;
	ict->user_phys = ict->phys;
	err = accio_ctx_probe(ict, pdev, resource_size(res));
	if (err)
		return err;

	id = readq(ict->base + ACCIO_UNCORE_ID);
	if ((id & ACCIO_UNCORE_ID_MAGIC_MASK) != ACCIO_UNCORE_MAGIC)
		return dev_err_probe(dev, -ENODEV, "bad magic 0x%llx\n", id);
	cfg = readq(ict->base + ACCIO_UNCORE_CONFIG);
	ict->nrows = cfg & ACCIO_UNCORE_CONFIG_ROWS_MASK;
	ict->nharts = (cfg & ACCIO_UNCORE_CONFIG_HARTS_MASK) >>
		      ACCIO_UNCORE_CONFIG_HARTS_SHIFT;
	if (!ict->nrows || !ict->nharts ||
	    resource_size(res) < ACCIO_UNCORE_ROW_BASE +
				 (u64)ict->nrows * ACCIO_UNCORE_ROW_STRIDE)
		return dev_err_probe(dev, -EINVAL, "bad configuration 0x%llx\n",
				     cfg);

	err = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(48));
	if (err)
		return err;
	ict->used = devm_bitmap_zalloc(dev, ict->nrows, GFP_KERNEL);
	ict->rows = devm_kcalloc(dev, ict->nrows, sizeof(*ict->rows),
				 GFP_KERNEL);
	ict->harts = devm_kcalloc(dev, ict->nharts, sizeof(*ict->harts),
				  GFP_KERNEL);
	if (!ict->used || !ict->rows || !ict->harts)
		return -ENOMEM;

	err = accio_wake_local_probe(ict, dev->of_node);
	if (err)
		return err;
	for (h = 0; h < ict->nharts; h++) {
		struct accio_hart *hp = &ict->harts[h];

		hp->ict = ict;
		hp->hart = h;
		writeq(0, hart_reg(ict, h, ACCIO_UNCORE_HART_ACCEL));
		if (ict->wake_cause >= 0)
			continue;
		irq = platform_get_irq(pdev, h);
		if (irq < 0)
			return irq;
		hp->irq = irq;
		err = devm_request_irq(dev, irq, accio_wake_irq, 0,
				       "accio-wake", hp);
		if (err)
			return err;
		cpu = riscv_hartid_to_cpuid(h);
		if (cpu >= 0 && cpu_online(cpu))
			irq_set_affinity(irq, cpumask_of(cpu));
	}
	irq = platform_get_irq(pdev, ict->nharts);
	if (irq < 0)
		return irq;
	err = devm_request_irq(dev, irq, accio_event_irq, 0, "accio-event",
			       ict);
	if (err)
		return err;

	for_each_possible_cpu(cpu)
		init_irq_work(per_cpu_ptr(&accio_drain_work, cpu),
			      accio_drain_fn);
	platform_set_drvdata(pdev, ict);
	writeq(ACCIO_UNCORE_EVQ_INTR_MASK_ENABLE_MASK,
	       ict->base + ACCIO_UNCORE_EVQ_INTR_MASK);
	writeq(ACCIO_UNCORE_CTRL_ENABLE_MASK, ict->base + ACCIO_UNCORE_CTRL);
	/* the hooks see a fully set up table, or none */
	smp_store_release(&accio_ict, ict);
	err = register_netevent_notifier(&accio_netevent_nb);
	if (err)
		dev_warn(dev, "no neighbour updates for rows: %d\n", err);
	err = register_pernet_subsys(&accio_net_ops);
	if (!err)
		err = register_netdevice_notifier(&accio_netdev_nb);
	if (err)
		dev_warn(dev, "no route or MTU updates for rows: %d\n", err);
	dev_info(dev, "%u rows, %u harts, owners by %s\n", ict->nrows,
		 ict->nharts, ict->ctx ? "context registers" : "satp ASID");
	return 0;
}

static const struct of_device_id accio_ict_of_match[] = {
	{ .compatible = "accio,uncore" },
	{ }
};

static struct platform_driver accio_ict_driver = {
	.probe = accio_ict_probe,
	.driver = {
		.name = DRV_NAME,
		.of_match_table = accio_ict_of_match,
		.dev_groups = accio_ict_groups,
		.suppress_bind_attrs = true,
	},
};
builtin_platform_driver(accio_ict_driver);
