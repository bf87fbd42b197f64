// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * rocket_timing: a QEMU TCG plugin that gives each hart of the virt machine
 * the time a Rocket core would take, under -icount: every instruction
 * still costs one cycle (the icount shift's time), and the plugin makes the
 * hart wait (qemu_plugin_icount_stall, QEMU patch 0013) for what a Rocket
 * core waits on:
 *   - L1 instruction and data caches with Rocket's geometry (16 KiB each,
 *     4 ways, 64-byte lines, random replacement, physically tagged; the
 *     data cache write-back, write-allocate): a miss waits miss + dram
 *     cycles (miss: the refill with a memory that answers at once, from
 *     the RTL SoC; dram: the memory's latency), a dirty victim's write-back
 *     wb cycles more;
 *   - a device's DMA into memory (the NIC's and the uncore's writes,
 *     qemu_plugin_dma_write) invalidates the lines it covers in every
 *     hart's data cache, as the SoC's coherent hub does: the core then
 *     reads the record from memory;
 *   - a conditional branch that a 2-bit counter per branch (512 of them,
 *     Rocket's BHT) mispredicts: mispredict cycles;
 *   - multiply and divide: mul and div cycles more than one; a load's
 *     result used by the next instruction: load_use;
 *   - a trap or an interrupt (the hart goes somewhere its last block could
 *     not lead) and mret/sret: trap and xret cycles (the pipeline's flush),
 *     irq more when it was not the block's own ecall or ebreak;
 *   - uncached device accesses cost what the device charges (the uncore's
 *     load-cycles and store-cycles), and one waits while the last uncached
 *     store is still in flight (io_store cycles after it issued): Rocket
 *     has one uncached access in flight.
 *
 * Arguments (all optional, cycles; the defaults are the RTL SoC's, fitted
 * by eval/bench_timing.py): dram=30 miss=14 wb=8 mispredict=3 mul=8 div=64
 * trap=6 irq=4 xret=5 io_store=13 load_use=1 (an instruction that reads
 * the register the load just before it wrote), l1i=SETS:WAYS and
 * l1d=SETS:WAYS (64:4 each),
 * out=FILE (per hart at exit: blocks, instructions, stall cycles,
 * I-cache and D-cache accesses and misses, write-backs, DMA
 * invalidations, traps, branches, mispredicted branches; one line
 * "H <hart> <name>=<value> ..."; and "S <spans> <stall cycles hart 0> ..."
 * while spans were open: eval/prof's marks "slti x0, x0, 5" and "6", nested,
 * so that a CPU busy share counts the stalls of its measurement);
 * attrib=window|span adds "A <vaddr> <stall cycles hart 0> ..." per
 * instruction address, while eval/prof's windows (or spans) are open
 * (eval/breakdown.py --timing: a round trip's cycles per stage).
 *
 * Blocks end at every branch and jump, so the plugin learns a branch's
 * outcome and a trap from where the next block starts. A block cut short
 * by a device access under -icount restarts inside itself: that is not a
 * trap. The instruction cache is looked up once per line a block covers,
 * when the block runs.
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

#include "prof_marks.h"	/* eval/prof's marks (-I eval/prof) */

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_HARTS	16
#define LINE_SHIFT	6
#define MAX_LINES	32
#define BHT_ENTRIES	512

enum { END_NONE, END_COND, END_JAL, END_INDIRECT, END_XRET, END_ECALL };

struct cache {
	unsigned int sets, ways;
	uint64_t *tag;		/* line number + 1; 0: invalid */
	uint8_t *dirty;
	uint32_t lfsr;
	uint64_t accesses, misses, writebacks, invalidated;
};

struct block {
	uint64_t pc, next;	/* first instruction; the one after the last */
	uint64_t branch, target;	/* the last instruction; where it jumps */
	int end;
	uint32_t insns, fixed;	/* fixed: mul/div and load-use cycles, every run */
	uint32_t nlines;
	uint64_t lines[MAX_LINES];
	uint64_t *pcs;		/* each instruction's address */
};

/* how many of block b's instructions come before pc */
static uint32_t insns_before(const struct block *b, uint64_t pc)
{
	uint32_t k = 0;

	while (k < b->insns && b->pcs[k] < pc)
		k++;
	return k;
}

struct hart {
	struct cache i, d;
	const struct block *last;
	uint64_t debt;		/* stall not yet charged (the turn ran out) */
	uint64_t blocks, insns, stalled, traps, branches, mispredicts;
	uint64_t span_stalled;	/* stalled while a span was open */
	uint64_t clock;		/* cycles to the current block's start, and stalls */
	uint32_t block_insns;	/* the current block's instructions */
	uint64_t io_busy;	/* the clock until which the last uncached store
				 * holds the core's one path to devices */
	uint64_t io_waited;
	uint8_t bht[BHT_ENTRIES];
};

static struct {
	uint64_t dram, miss, wb, mispredict, mul, div, trap, xret, load_use, io_store, irq;
	unsigned int isets, iways, dsets, dways;
	char *out;
} cfg = { 30, 14, 8, 3, 8, 64, 6, 5, 1, 13, 4, 64, 4, 64, 4, NULL };

/* a load or store instruction: where it is, and its place in its block */
struct site {
	uint64_t pc;
	uint32_t index;
};

static struct hart harts[MAX_HARTS];
static GMutex dma_lock;
/* spans (eval/prof's marks "slti x0, x0, 5" and "6"): nested, for all harts */
static int span_depth;
static uint64_t spans;
/*
 * attrib=window|span: the stall cycles per instruction address while
 * eval/prof's windows (marks 1 open, 2 close, 3 pause, 4 resume) or spans
 * are open, the same windows accio_prof counts instructions in, so that
 * eval/breakdown.py adds them up to cycles per stage
 */
enum { ATTRIB_NONE, ATTRIB_WINDOW, ATTRIB_SPAN };
static int attrib, in_window, counting;
static GHashTable *by_addr;	/* vaddr -> uint64_t[MAX_HARTS] */
static unsigned int nharts;

static void attribute(unsigned int vcpu, uint64_t vaddr, uint64_t cycles)
{
	uint64_t *c;

	if (!counting || !cycles)
		return;
	c = g_hash_table_lookup(by_addr, &vaddr);
	if (!c) {
		uint64_t *key = g_new(uint64_t, 1);

		*key = vaddr;
		c = g_new0(uint64_t, MAX_HARTS);
		g_hash_table_insert(by_addr, key, c);
	}
	c[vcpu % MAX_HARTS] += cycles;
}

static void cache_init(struct cache *c, unsigned int sets, unsigned int ways, uint32_t seed)
{
	c->sets = sets;
	c->ways = ways;
	c->tag = g_new0(uint64_t, (size_t)sets * ways);
	c->dirty = g_new0(uint8_t, (size_t)sets * ways);
	c->lfsr = seed;
}

/*
 * Random replacement as Rocket's L1s do it: the way is the low bits of a
 * 16-bit LFSR (x^16 + x^14 + x^13 + x^11 + 1, from 1), which steps once per
 * miss; an invalid way is not preferred.
 */
static unsigned int victim(struct cache *c)
{
	uint32_t l = c->lfsr, way = l & (c->ways - 1);

	c->lfsr = (l >> 1) | ((l ^ l >> 2 ^ l >> 3 ^ l >> 5) & 1u) << 15;
	return way;
}

/* cycles this access waits */
static uint64_t cache_access(struct cache *c, uint64_t line, int store)
{
	unsigned int set = line & (c->sets - 1), w, v;
	uint64_t *t = &c->tag[(size_t)set * c->ways];
	uint8_t *dirty = &c->dirty[(size_t)set * c->ways];
	uint64_t cost;

	c->accesses++;
	for (w = 0; w < c->ways; w++)
		if (t[w] == line + 1) {
			dirty[w] |= store;
			return 0;
		}
	c->misses++;
	v = victim(c);
	cost = cfg.miss + cfg.dram;
	if (t[v] && dirty[v]) {
		c->writebacks++;
		cost += cfg.wb;
	}
	t[v] = line + 1;
	dirty[v] = store;
	return cost;
}

static void cache_invalidate(struct cache *c, uint64_t line)
{
	unsigned int set = line & (c->sets - 1), w;
	uint64_t *t = &c->tag[(size_t)set * c->ways];

	for (w = 0; w < c->ways; w++)
		if (t[w] == line + 1) {
			t[w] = 0;
			c->dirty[(size_t)set * c->ways + w] = 0;
			c->invalidated++;
		}
}

static void stall(struct hart *h, uint64_t cycles)
{
	uint64_t want = cycles + h->debt, got;

	if (!want)
		return;
	got = qemu_plugin_icount_stall(want);
	h->debt = want - got;
	h->stalled += got;
	h->clock += cycles;
	if (span_depth > 0)
		h->span_stalled += got;
}

/* what the end of the last block cost, now that the next one starts at pc */
static uint64_t block_end(struct hart *h, const struct block *b, uint64_t pc)
{
	int inside = pc >= b->pc && pc < b->next;
	uint8_t *ctr;
	int taken;

	switch (b->end) {
	case END_INDIRECT:
		return 0;	/* jalr: anywhere (returns: Rocket's RAS) */
	case END_XRET:
		return cfg.xret;
	case END_COND:
		if (pc != b->target && pc != b->next)
			break;
		taken = pc == b->target;
		ctr = &h->bht[(b->branch >> 1) % BHT_ENTRIES];
		h->branches++;
		if ((*ctr >= 2) != taken) {
			h->mispredicts++;
			*ctr = taken ? *ctr + 1 : *ctr - 1;
			return cfg.mispredict;
		}
		if (taken && *ctr < 3)
			(*ctr)++;
		else if (!taken && *ctr > 0)
			(*ctr)--;
		return 0;
	case END_JAL:
		if (pc == b->target)
			return 0;
		break;
	default:
		if (pc == b->next)
			return 0;
		break;
	}
	if (inside)
		return 0;	/* the block restarts after a device access */
	h->traps++;	/* somewhere the block could not lead: a trap */
	/* not the block's ecall: an interrupt (or a fault), which the core
	 * takes a few cycles after its cause */
	return cfg.trap + (b->end == END_ECALL ? 0 : cfg.irq);
}

static void block_exec(unsigned int vcpu, void *udata)
{
	struct hart *h = &harts[vcpu % MAX_HARTS];
	const struct block *b = udata;
	uint64_t cost = b->fixed, end = 0;
	uint32_t k;

	if (h->last) {
		uint64_t traps = h->traps;

		end = block_end(h, h->last, b->pc);
		/* a trap's entry counts at the handler, a branch's at the branch */
		attribute(vcpu, h->traps != traps ? b->pc : h->last->branch, end);
	}
	for (k = 0; k < b->nlines; k++)
		cost += cache_access(&h->i, b->lines[k], 0);
	attribute(vcpu, b->pc, cost);
	cost += end;
	/*
	 * The last block's instructions are on the clock now, all of them but
	 * when it stopped at a device access under -icount and this block
	 * restarts it there (not a jump back into it).
	 */
	if (h->last && b->pc > h->last->pc && b->pc < h->last->next &&
	    !((h->last->end == END_COND || h->last->end == END_JAL) && b->pc == h->last->target))
		h->clock += insns_before(h->last, b->pc);
	else
		h->clock += h->block_insns;
	h->block_insns = b->insns;
	h->last = b;
	h->blocks++;
	h->insns += b->insns;
	stall(h, cost);
}

static void mem_access(unsigned int vcpu, qemu_plugin_meminfo_t info,
		       uint64_t vaddr, void *udata)
{
	struct hart *h = &harts[vcpu % MAX_HARTS];
	struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
	int store = qemu_plugin_mem_is_store(info);
	const struct site *at = udata;
	uint64_t pa, size, cost, now;

	if (!hw)
		return;
	if (qemu_plugin_hwaddr_is_io(hw)) {
		/*
		 * A device charges its own access. Rocket has one uncached
		 * access in flight: a store lets the core go on, but the next
		 * device access waits until the store is done (io_store cycles
		 * after it issued).
		 */
		now = h->clock + at->index;
		if (h->io_busy > now) {
			attribute(vcpu, at->pc, h->io_busy - now);
			h->io_waited += h->io_busy - now;
			stall(h, h->io_busy - now);
			now = h->io_busy;
		}
		if (store)
			h->io_busy = now + cfg.io_store;
		return;
	}
	pa = qemu_plugin_hwaddr_phys_addr(hw);
	size = 1ull << qemu_plugin_mem_size_shift(info);
	cost = cache_access(&h->d, pa >> LINE_SHIFT, store);
	if ((pa + size - 1) >> LINE_SHIFT != pa >> LINE_SHIFT)
		cost += cache_access(&h->d, (pa + size - 1) >> LINE_SHIFT, store);
	attribute(vcpu, at->pc, cost);
	stall(h, cost);
}

static void dma_write(qemu_plugin_id_t id, uint64_t addr, uint64_t len)
{
	uint64_t l;
	int i;

	if (!len)
		return;
	g_mutex_lock(&dma_lock);
	for (i = 0; i < MAX_HARTS; i++)
		for (l = addr >> LINE_SHIFT; l <= (addr + len - 1) >> LINE_SHIFT; l++)
			if (harts[i].d.tag)
				cache_invalidate(&harts[i].d, l);
	g_mutex_unlock(&dma_lock);
}

/* ---- decoding (RV64GC): what a block's last instruction does ---------- */

static int64_t sext(uint64_t v, int bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

static void decode(struct block *b, uint64_t pc, const uint8_t *p, size_t len)
{
	uint32_t w = p[0] | p[1] << 8;
	uint32_t op, f3;

	b->end = END_NONE;
	if (len == 2) {
		op = w & 3;
		f3 = w >> 13;
		if (op == 1 && f3 == 5) {		/* c.j */
			uint64_t imm = (w >> 12 & 1) << 11 | (w >> 11 & 1) << 4 |
				       (w >> 9 & 3) << 8 | (w >> 8 & 1) << 10 |
				       (w >> 7 & 1) << 6 | (w >> 6 & 1) << 7 |
				       (w >> 3 & 7) << 1 | (w >> 2 & 1) << 5;
			b->end = END_JAL;
			b->target = pc + sext(imm, 12);
		} else if (op == 1 && (f3 == 6 || f3 == 7)) {	/* c.beqz, c.bnez */
			uint64_t imm = (w >> 12 & 1) << 8 | (w >> 10 & 3) << 3 |
				       (w >> 5 & 3) << 6 | (w >> 3 & 3) << 1 |
				       (w >> 2 & 1) << 5;
			b->end = END_COND;
			b->target = pc + sext(imm, 9);
		} else if (op == 2 && f3 == 4 && (w >> 7 & 31) && !(w >> 2 & 31)) {
			b->end = END_INDIRECT;			/* c.jr, c.jalr */
		} else if (w == 0x9002) {
			b->end = END_ECALL;			/* c.ebreak */
		}
		return;
	}
	w |= (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	switch (w & 0x7f) {
	case 0x63: {					/* branches */
		uint64_t imm = (w >> 31 & 1) << 12 | (w >> 25 & 0x3f) << 5 |
			       (w >> 8 & 0xf) << 1 | (w >> 7 & 1) << 11;
		b->end = END_COND;
		b->target = pc + sext(imm, 13);
		break;
	}
	case 0x6f: {					/* jal */
		uint64_t imm = (w >> 31 & 1) << 20 | (w >> 21 & 0x3ff) << 1 |
			       (w >> 20 & 1) << 11 | (w >> 12 & 0xff) << 12;
		b->end = END_JAL;
		b->target = pc + sext(imm, 21);
		break;
	}
	case 0x67:					/* jalr */
		b->end = END_INDIRECT;
		break;
	case 0x73:
		if (w == 0x30200073 || w == 0x10200073)	/* mret, sret */
			b->end = END_XRET;
		else if (w == 0x00000073 || w == 0x00100073)	/* ecall, ebreak */
			b->end = END_ECALL;
		break;
	}
}

/* multiply and divide: cycles beyond the instruction's one */
static uint32_t fixed_cost(const uint8_t *p, size_t len)
{
	uint32_t w;

	if (len != 4)
		return 0;
	w = p[0] | p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	if (((w & 0x7f) == 0x33 || (w & 0x7f) == 0x3b) && (w >> 25) == 1)
		return (w >> 12 & 7) < 4 ? cfg.mul : cfg.div;
	return 0;
}

/* the register a load writes (0: not an integer load) */
static unsigned int load_rd(const uint8_t *p, size_t len)
{
	uint32_t w = p[0] | p[1] << 8, f3 = w >> 13 & 7;

	if (len == 2) {
		if ((w & 3) == 0 && (f3 == 2 || f3 == 3))	/* c.lw, c.ld */
			return 8 + (w >> 2 & 7);
		if ((w & 3) == 2 && (f3 == 2 || f3 == 3))	/* c.lwsp, c.ldsp */
			return w >> 7 & 31;
		return 0;
	}
	w |= (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	return (w & 0x7f) == 0x03 ? (w >> 7 & 31) : 0;
}

/* whether an instruction reads integer register r (r != 0; a superset for
 * a few compressed forms) */
static int reads(const uint8_t *p, size_t len, unsigned int r)
{
	uint32_t w = p[0] | p[1] << 8, f3 = w >> 13 & 7, op;
	unsigned int r1 = w >> 7 & 31, r2 = w >> 2 & 31;
	unsigned int p1 = 8 + (w >> 7 & 7), p2 = 8 + (w >> 2 & 7);

	if (len == 2) {
		switch ((w & 3) << 3 | f3) {
		case 0 << 3 | 0:		/* c.addi4spn */
			return r == 2;
		case 0 << 3 | 2: case 0 << 3 | 3:	/* c.lw, c.ld */
			return r == p1;
		case 0 << 3 | 6: case 0 << 3 | 7:	/* c.sw, c.sd */
			return r == p1 || r == p2;
		case 1 << 3 | 0: case 1 << 3 | 1:	/* c.addi, c.addiw */
			return r == r1;
		case 1 << 3 | 3:			/* c.addi16sp */
			return r1 == 2 && r == 2;
		case 1 << 3 | 4:			/* c.srli ... c.and */
			return r == p1 || ((w >> 10 & 3) == 3 && r == p2);
		case 1 << 3 | 6: case 1 << 3 | 7:	/* c.beqz, c.bnez */
			return r == p1;
		case 2 << 3 | 0:			/* c.slli */
			return r == r1;
		case 2 << 3 | 2: case 2 << 3 | 3:	/* c.lwsp, c.ldsp */
			return r == 2;
		case 2 << 3 | 4:			/* c.jr, c.mv, c.jalr, c.add */
			return r == r1 || r == r2;
		case 2 << 3 | 6: case 2 << 3 | 7:	/* c.swsp, c.sdsp */
			return r == 2 || r == r2;
		}
		return 0;
	}
	w |= (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	op = w & 0x7f;
	if (op == 0x37 || op == 0x17 || op == 0x6f)	/* lui, auipc, jal */
		return 0;
	if (r == (w >> 15 & 31))
		return 1;
	return (op == 0x33 || op == 0x3b || op == 0x23 || op == 0x63 || op == 0x2f) &&
	       r == (w >> 20 & 31);
}

static void mark(unsigned int vcpu, void *udata)
{
	switch ((uintptr_t)udata) {
	case ACCIO_MARK_OPEN:
		in_window = 1;
		counting |= attrib == ATTRIB_WINDOW;
		break;
	case ACCIO_MARK_CLOSE:
		in_window = 0;
		if (attrib == ATTRIB_WINDOW)
			counting = 0;
		break;
	case ACCIO_MARK_PAUSE:
		if (attrib == ATTRIB_WINDOW)
			counting = 0;
		break;
	case ACCIO_MARK_RESUME:
		if (attrib == ATTRIB_WINDOW)
			counting = in_window;
		break;
	case ACCIO_MARK_SPAN:
		if (!span_depth++)
			spans++;
		counting |= attrib == ATTRIB_SPAN;
		break;
	case ACCIO_MARK_UNSPAN:
		if (span_depth > 0)
			span_depth--;
		if (attrib == ATTRIB_SPAN)
			counting = span_depth > 0;
		break;
	}
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	struct block *b = g_new0(struct block, 1);
	uint8_t buf[4];
	unsigned int loaded = 0;	/* the last instruction's load target */

	b->pc = qemu_plugin_tb_vaddr(tb);
	b->insns = n;
	b->pcs = g_new(uint64_t, n);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		size_t len = qemu_plugin_insn_size(insn);
		uint64_t pc = qemu_plugin_insn_vaddr(insn);
		/* the host address of guest RAM: unique per physical line */
		uintptr_t host = (uintptr_t)qemu_plugin_insn_haddr(insn);
		uint64_t l0 = host >> LINE_SHIFT, l1 = (host + len - 1) >> LINE_SHIFT, l;

		b->pcs[i] = pc;

		memset(buf, 0, sizeof(buf));
		qemu_plugin_insn_data(insn, buf, len < 4 ? len : 4);
		b->fixed += fixed_cost(buf, len);
		if (len == 4) {
			uint32_t w = buf[0] | buf[1] << 8 | buf[2] << 16 | (uint32_t)buf[3] << 24;

			/* eval/prof's marks */
			if (accio_mark_of(w))
				qemu_plugin_register_vcpu_insn_exec_cb(insn, mark,
					QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)accio_mark_of(w));
		}
		if (loaded && reads(buf, len, loaded))
			b->fixed += cfg.load_use;	/* waits for the load's data */
		loaded = load_rd(buf, len);
		for (l = l0; host && l <= l1; l++)
			if (b->nlines < MAX_LINES && (!b->nlines || b->lines[b->nlines - 1] != l))
				b->lines[b->nlines++] = l;
		if (i == n - 1) {
			b->branch = pc;
			b->next = pc + len;
			decode(b, pc, buf, len);
		}
		struct site *site = g_new(struct site, 1);

		site->pc = pc;
		site->index = i;
		qemu_plugin_register_vcpu_mem_cb(insn, mem_access, QEMU_PLUGIN_CB_NO_REGS,
						 QEMU_PLUGIN_MEM_RW, site);
	}
	qemu_plugin_register_vcpu_tb_exec_cb(tb, block_exec, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void vcpu_init(qemu_plugin_id_t id, unsigned int vcpu)
{
	struct hart *h = &harts[vcpu % MAX_HARTS];

	if (vcpu + 1 > nharts)
		nharts = vcpu + 1;
	cache_init(&h->i, cfg.isets, cfg.iways, 1);
	cache_init(&h->d, cfg.dsets, cfg.dways, 1);
	memset(h->bht, 1, sizeof(h->bht));	/* weakly not taken */
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	FILE *f;
	int i;

	if (!cfg.out)
		return;
	f = fopen(cfg.out, "w");
	if (!f)
		return;
	fprintf(f, "C dram=%" PRIu64 " miss=%" PRIu64 " wb=%" PRIu64 " mispredict=%" PRIu64
		" mul=%" PRIu64 " div=%" PRIu64 " trap=%" PRIu64 " xret=%" PRIu64
		" load_use=%" PRIu64 " io_store=%" PRIu64 " irq=%" PRIu64
		" l1i=%u:%u l1d=%u:%u\n", cfg.dram, cfg.miss, cfg.wb, cfg.mispredict, cfg.mul,
		cfg.div, cfg.trap, cfg.xret, cfg.load_use, cfg.io_store, cfg.irq,
		cfg.isets, cfg.iways, cfg.dsets, cfg.dways);
	fprintf(f, "S %" PRIu64, spans);
	for (i = 0; i < MAX_HARTS; i++)
		if (harts[i].i.tag)
			fprintf(f, " %" PRIu64, harts[i].span_stalled);
	fprintf(f, "\n");
	for (i = 0; i < MAX_HARTS; i++) {
		struct hart *h = &harts[i];

		if (!h->i.tag)
			continue;
		fprintf(f, "H %d blocks=%" PRIu64 " insns=%" PRIu64 " stalled=%" PRIu64
			" icache=%" PRIu64 " imiss=%" PRIu64 " dcache=%" PRIu64
			" dmiss=%" PRIu64 " writebacks=%" PRIu64 " dma_invalidated=%" PRIu64
			" traps=%" PRIu64 " branches=%" PRIu64 " mispredicts=%" PRIu64
			" io_waited=%" PRIu64 "\n",
			i, h->blocks, h->insns, h->stalled, h->i.accesses, h->i.misses,
			h->d.accesses, h->d.misses, h->d.writebacks, h->d.invalidated,
			h->traps, h->branches, h->mispredicts, h->io_waited);
	}
	if (attrib != ATTRIB_NONE) {
		GHashTableIter it;
		gpointer key, val;

		g_hash_table_iter_init(&it, by_addr);
		while (g_hash_table_iter_next(&it, &key, &val)) {
			uint64_t *c = val;
			unsigned int k;

			fprintf(f, "A %" PRIx64, *(uint64_t *)key);
			for (k = 0; k < nharts; k++)
				fprintf(f, " %" PRIu64, c[k]);
			fprintf(f, "\n");
		}
	}
	fclose(f);
}

static int geometry(const char *v, unsigned int *sets, unsigned int *ways)
{
	char *end;
	unsigned long s = strtoul(v, &end, 10), w;

	if (*end != ':')
		return -1;
	w = strtoul(end + 1, &end, 10);
	if (*end || !s || (s & (s - 1)) || !w || (w & (w - 1)) || w > 64)
		return -1;
	*sets = s;
	*ways = w;
	return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	static const struct { const char *name; uint64_t *val; } num[] = {
		{ "dram", &cfg.dram }, { "miss", &cfg.miss }, { "wb", &cfg.wb },
		{ "mispredict", &cfg.mispredict }, { "mul", &cfg.mul },
		{ "div", &cfg.div }, { "trap", &cfg.trap }, { "xret", &cfg.xret },
		{ "load_use", &cfg.load_use }, { "io_store", &cfg.io_store },
		{ "irq", &cfg.irq },
	};
	int i;
	size_t k;

	if (!info->system_emulation) {
		fprintf(stderr, "rocket_timing: system emulation only\n");
		return -1;
	}
	for (i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '='), *end;
		int done = 0;

		if (!eq) {
			fprintf(stderr, "rocket_timing: %s: NAME=VALUE expected\n", argv[i]);
			return -1;
		}
		*eq = 0;
		for (k = 0; k < G_N_ELEMENTS(num); k++)
			if (!strcmp(argv[i], num[k].name)) {
				*num[k].val = strtoull(eq + 1, &end, 10);
				done = *end || end == eq + 1 ? -1 : 1;
			}
		if (!strcmp(argv[i], "l1i"))
			done = geometry(eq + 1, &cfg.isets, &cfg.iways) ? -1 : 1;
		else if (!strcmp(argv[i], "l1d"))
			done = geometry(eq + 1, &cfg.dsets, &cfg.dways) ? -1 : 1;
		else if (!strcmp(argv[i], "attrib")) {
			attrib = !strcmp(eq + 1, "window") ? ATTRIB_WINDOW :
				 !strcmp(eq + 1, "span") ? ATTRIB_SPAN : -1;
			done = attrib < 0 ? -1 : 1;
		} else if (!strcmp(argv[i], "out")) {
			cfg.out = g_strdup(eq + 1);
			done = 1;
		}
		if (done <= 0) {
			fprintf(stderr, "rocket_timing: %s=%s: %s\n", argv[i], eq + 1,
				done ? "bad value" : "unknown argument");
			return -1;
		}
	}
	if (info->system.max_vcpus > MAX_HARTS) {
		fprintf(stderr, "rocket_timing: at most %d harts\n", MAX_HARTS);
		return -1;
	}
	g_mutex_init(&dma_lock);
	by_addr = g_hash_table_new(g_int64_hash, g_int64_equal);
	qemu_plugin_register_vcpu_init_cb(id, vcpu_init);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_dma_write_cb(id, dma_write);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
