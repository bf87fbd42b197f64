// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * accio_prof: a QEMU TCG plugin that counts the instructions every hart
 * executes inside marked windows, per instruction address, and the
 * uncached (I/O) loads and stores among them. eval/breakdown.py turns the
 * counts into stages of a round trip.
 *
 * Windows: the guest marks them with RISC-V HINT instructions that every
 * RISC-V core executes as no-ops ("slti x0, x0, imm" is designated for
 * custom use; prof_marks.h defines them, for the guest's programs too):
 *	slti x0, x0, 1	window opens (for all harts: their work in the
 *			window counts too, as it does in virtual time)
 *	slti x0, x0, 2	window closes
 *	slti x0, x0, 3	pause: nothing counts until ...
 *	slti x0, x0, 4	... resume (inside an open window)
 *	slti x0, x0, 5	span starts: from here every instruction of every
 *			hart counts in the span totals, windows or not
 *	slti x0, x0, 6	span stops
 * (a span is a whole measurement: its instructions per hart, times the
 * time per instruction, over the span's duration is the hart's busy share)
 * A program marks one window around each measured operation; a library
 * pauses around a busy-wait, which is waiting, not work.
 *
 * Arguments: out=FILE (required), mmio=on|off (default on), by=window|span
 * (default window; span: the per-address counts follow the span marks, not
 * the windows, and spans nest: from the first start to the end that closes
 * them all, for a measurement of many programs whose own windows and spans
 * overlap inside a launcher's span, such as udp_multi -W).
 * Output (text, written at exit):
 *	W <windows opened> <windows closed> <vcpus> <pauses>
 *	S <spans> <instructions hart 0> <hart 1> ...	in spans
 *	U <uncore loads hart 0> <stores hart 0> <hart 1's> ...	in spans (mmio=on)
 *	I <vaddr> <count hart 0> <count hart 1> ...	one line per address
 *	M <vaddr> <phys> <loads> <stores>		one line per I/O access site
 *	F <vaddr> <entries> <insns>	entries into M-mode firmware by the
 *				last instruction of the block that ran before
 *				(an ecall, a trapping access, a WFI woken by a
 *				machine interrupt) and the firmware's
 *				instructions until it returned
 * A block is counted whole when it starts inside a window (blocks end at
 * branches, calls and traps, so the error is a part of one block per
 * window edge or exception). One case is corrected (with mmio=on), because
 * it repeats on every device access: under -icount a block whose load or
 * store reaches a device before its last instruction stops there; QEMU
 * runs the access alone, uninstrumented but for its memory callback, and
 * goes on with a new block after it. So when a hart's device access is at
 * an address inside the block it ran before, and its next block starts at
 * the instruction after the access, that block's instructions after the
 * access did not run then: they are taken back from its count.
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

#include "prof_marks.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAXV 16

struct block {
	size_t n;
	uint64_t *vaddr;
	bool *mem;		/* the instruction loads or stores */
	uint64_t count[MAXV];	/* executions per hart */
	uint64_t *cut[MAXV];	/* per instruction: executions that stopped before it */
};

#define FW_LO 0x80000000ull	/* OpenSBI, run at its physical address */
#define FW_HI 0x80200000ull

struct site {
	uint64_t vaddr, phys;
	uint64_t loads, stores;
};

static GMutex lock;
static GPtrArray *blocks, *sites;
static GHashTable *fw_entries;		/* vaddr -> count */
static struct block *last[MAXV];	/* the block each hart ran last */
static bool last_counted[MAXV], last_spanned[MAXV];	/* and how it counted */
static uint64_t io_at[MAXV];		/* its device access since, if any */
static uint64_t *fw_cur[MAXV];		/* the entry a hart's firmware work counts to */
static char *out_path;
static bool want_mmio = true;
static int nvcpus;
static uint64_t opened, closed, paused;
static bool in_window, counting, spanning, by_span;
static uint64_t spans, span_insns[MAXV];
static unsigned int span_depth;
/* the uncore's registers (the SoC's map): a hart's loads and stores there
 * in spans, each of which stalls it longer than an instruction */
#define UNCORE_BASE 0x11000000ull
#define UNCORE_END 0x12000000ull
static uint64_t span_uncore_ld[MAXV], span_uncore_st[MAXV];

static void set_all(bool v)
{
	if (!by_span)
		counting = v;
}

static void on_marker(unsigned int vcpu, void *udata)
{
	switch ((uintptr_t)udata) {
	case ACCIO_MARK_OPEN:
		opened++;
		in_window = true;
		set_all(1);
		break;
	case ACCIO_MARK_CLOSE:
		closed++;
		in_window = false;
		set_all(0);
		break;
	case ACCIO_MARK_PAUSE:
		if (in_window)
			paused++;
		set_all(0);
		break;
	case ACCIO_MARK_RESUME:
		set_all(in_window);
		break;
	case ACCIO_MARK_SPAN:
		spans++;
		span_depth++;
		spanning = true;
		if (by_span)
			counting = true;
		break;
	case ACCIO_MARK_UNSPAN:
		/* by span: spans nest (programs inside a launcher's span) */
		span_depth -= span_depth > 0;
		spanning = by_span && span_depth;
		if (by_span)
			counting = spanning;
		break;
	}
}

/* The block p ran before b stopped after its device access at io. */
static void take_back(unsigned int vcpu, struct block *p, const struct block *b,
		      uint64_t io)
{
	for (size_t k = 0; k + 1 < p->n; k++) {
		if (p->vaddr[k] != io || p->vaddr[k + 1] != b->vaddr[0] || !p->mem[k])
			continue;
		if (last_spanned[vcpu])
			span_insns[vcpu] -= p->n - k - 1;
		if (last_counted[vcpu]) {
			if (!p->cut[vcpu])
				p->cut[vcpu] = g_new0(uint64_t, p->n);
			p->cut[vcpu][k + 1]++;
		}
		return;
	}
}

static void on_block(unsigned int vcpu, void *udata)
{
	struct block *b = udata;

	if (vcpu >= MAXV)
		return;
	if (io_at[vcpu] && last[vcpu])
		take_back(vcpu, last[vcpu], b, io_at[vcpu]);
	io_at[vcpu] = 0;
	if (spanning)
		span_insns[vcpu] += b->n;
	last_spanned[vcpu] = spanning;
	last_counted[vcpu] = counting;
	if (!counting) {
		last[vcpu] = b;
		return;
	}
	b->count[vcpu]++;
	if (b->vaddr[0] >= FW_LO && b->vaddr[0] < FW_HI) {
		struct block *p = last[vcpu];
		uint64_t *e;

		if (p && !(p->vaddr[0] >= FW_LO && p->vaddr[0] < FW_HI)) {
			uint64_t key = p->vaddr[p->n - 1];

			e = g_hash_table_lookup(fw_entries, &key);
			if (!e) {
				e = g_new0(uint64_t, 3);	/* key, entries, insns */
				e[0] = key;
				g_hash_table_insert(fw_entries, &e[0], e);
			}
			e[1]++;
			fw_cur[vcpu] = e;
		}
		if (fw_cur[vcpu])
			fw_cur[vcpu][2] += b->n;
	}
	last[vcpu] = b;
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info,
		   uint64_t vaddr, void *udata)
{
	struct site *s = udata;
	struct qemu_plugin_hwaddr *hw;

	if (!counting && !spanning)
		return;
	hw = qemu_plugin_get_hwaddr(info, vaddr);
	if (!hw || !qemu_plugin_hwaddr_is_io(hw))
		return;
	if (vcpu < MAXV)
		io_at[vcpu] = s->vaddr;
	if (spanning && vcpu < MAXV) {
		uint64_t pa = qemu_plugin_hwaddr_phys_addr(hw);

		if (pa >= UNCORE_BASE && pa < UNCORE_END) {
			if (qemu_plugin_mem_is_store(info))
				span_uncore_st[vcpu]++;
			else
				span_uncore_ld[vcpu]++;
		}
	}
	if (!counting)
		return;
	s->phys = qemu_plugin_hwaddr_phys_addr(hw);
	if (qemu_plugin_mem_is_store(info))
		s->stores++;
	else
		s->loads++;
}

/* RISC-V loads, stores and atomics (integer and FP, compressed or not) */
static bool is_mem32(uint32_t w)
{
	switch (w & 0x7f) {
	case 0x03: case 0x07: case 0x23: case 0x27: case 0x2f:
		return true;
	}
	return false;
}

static bool is_mem16(uint16_t w)
{
	unsigned int f3 = w >> 13;

	switch (w & 3) {
	case 0:		/* c.fld c.lw c.ld, c.fsd c.sw c.sd */
	case 2:		/* c.fldsp c.lwsp c.ldsp, c.fsdsp c.swsp c.sdsp */
		return f3 != 0 && f3 != 4;
	}
	return false;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	struct block *b = g_new0(struct block, 1);

	b->n = n;
	b->vaddr = g_new(uint64_t, n);
	b->mem = g_new0(bool, n);
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint32_t word = 0;
		uint16_t half = 0;

		b->vaddr[i] = qemu_plugin_insn_vaddr(insn);
		if (qemu_plugin_insn_size(insn) == 2) {
			qemu_plugin_insn_data(insn, &half, sizeof(half));
			b->mem[i] = is_mem16(half);
		}
		if (qemu_plugin_insn_size(insn) == 4) {
			qemu_plugin_insn_data(insn, &word, sizeof(word));
			b->mem[i] = is_mem32(word);
			if (accio_mark_of(word))
				qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker,
					QEMU_PLUGIN_CB_NO_REGS,
					(void *)(uintptr_t)accio_mark_of(word));
		}
		if (want_mmio) {
			struct site *s = g_new0(struct site, 1);

			s->vaddr = b->vaddr[i];
			qemu_plugin_register_vcpu_mem_cb(insn, on_mem,
							 QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW, s);
			g_mutex_lock(&lock);
			g_ptr_array_add(sites, s);
			g_mutex_unlock(&lock);
		}
	}
	/*
	 * A plain callback that tests the flag: with QEMU 10.0.2's conditional
	 * block callbacks (..._tb_exec_cond_cb on a scoreboard entry) guest
	 * programs took illegal-instruction traps on FP CSR reads.
	 */
	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, b);
	g_mutex_lock(&lock);
	g_ptr_array_add(blocks, b);
	g_mutex_unlock(&lock);
}

static void on_atexit(qemu_plugin_id_t id, void *p)
{
	GHashTable *by_addr = g_hash_table_new_full(g_int64_hash, g_int64_equal,
						    NULL, g_free);
	GHashTableIter it;
	gpointer key, val;
	FILE *f = fopen(out_path, "w");

	if (!f) {
		qemu_plugin_outs("accio_prof: cannot write the output file\n");
		return;
	}
	for (guint i = 0; i < blocks->len; i++) {
		struct block *b = g_ptr_array_index(blocks, i);
		bool any = false;

		for (int v = 0; v < nvcpus; v++)
			any |= b->count[v] != 0;
		if (!any)
			continue;
		for (size_t k = 0; k < b->n; k++) {
			uint64_t *c = g_hash_table_lookup(by_addr, &b->vaddr[k]);

			if (!c) {
				/* key first, then the counts, in one allocation */
				c = g_new0(uint64_t, MAXV + 1);
				c[0] = b->vaddr[k];
				g_hash_table_insert(by_addr, &c[0], c);
			}
			for (int v = 0; v < nvcpus; v++) {
				c[1 + v] += b->count[v];
				/* the executions that stopped at or before k */
				for (size_t j = 0; b->cut[v] && j <= k; j++)
					c[1 + v] -= b->cut[v][j];
			}
		}
	}
	fprintf(f, "W %" PRIu64 " %" PRIu64 " %d %" PRIu64 "\n",
		opened, closed, nvcpus, paused);
	fprintf(f, "S %" PRIu64, spans);
	for (int v = 0; v < nvcpus && v < MAXV; v++)
		fprintf(f, " %" PRIu64, span_insns[v]);
	fprintf(f, "\n");
	fprintf(f, "U");
	for (int v = 0; v < nvcpus && v < MAXV; v++)
		fprintf(f, " %" PRIu64 " %" PRIu64, span_uncore_ld[v], span_uncore_st[v]);
	fprintf(f, "\n");
	g_hash_table_iter_init(&it, by_addr);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		uint64_t *c = val;

		fprintf(f, "I %" PRIx64, c[0]);
		for (int v = 0; v < nvcpus; v++)
			fprintf(f, " %" PRIu64, c[1 + v]);
		fputc('\n', f);
	}
	for (guint i = 0; i < sites->len; i++) {
		struct site *s = g_ptr_array_index(sites, i);

		if (s->loads || s->stores)
			fprintf(f, "M %" PRIx64 " %" PRIx64 " %" PRIu64 " %" PRIu64 "\n",
				s->vaddr, s->phys, s->loads, s->stores);
	}
	g_hash_table_iter_init(&it, fw_entries);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		uint64_t *e = val;

		fprintf(f, "F %" PRIx64 " %" PRIu64 " %" PRIu64 "\n", e[0], e[1], e[2]);
	}
	fclose(f);
	g_hash_table_destroy(by_addr);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (!eq) {
			fprintf(stderr, "accio_prof: bad argument %s\n", argv[i]);
			return -1;
		}
		*eq = 0;
		if (!strcmp(argv[i], "out")) {
			out_path = g_strdup(eq + 1);
		} else if (!strcmp(argv[i], "mmio")) {
			if (!qemu_plugin_bool_parse(argv[i], eq + 1, &want_mmio)) {
				fprintf(stderr, "accio_prof: mmio=on|off\n");
				return -1;
			}
		} else if (!strcmp(argv[i], "by")) {
			if (strcmp(eq + 1, "window") && strcmp(eq + 1, "span")) {
				fprintf(stderr, "accio_prof: by=window|span\n");
				return -1;
			}
			by_span = !strcmp(eq + 1, "span");
		} else {
			fprintf(stderr, "accio_prof: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	if (!out_path) {
		fprintf(stderr, "accio_prof: out=FILE is required\n");
		return -1;
	}
	if (!info->system_emulation) {
		fprintf(stderr, "accio_prof: system emulation only\n");
		return -1;
	}
	nvcpus = info->system.max_vcpus;
	if (nvcpus > MAXV) {
		fprintf(stderr, "accio_prof: at most %d harts\n", MAXV);
		return -1;
	}
	blocks = g_ptr_array_new();
	fw_entries = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, g_free);
	sites = g_ptr_array_new();
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
	return 0;
}
