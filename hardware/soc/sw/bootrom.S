/* SPDX-License-Identifier: MIT */
/* The SoC's boot ROM (at 0x10000; Rocket starts at 0x10040): every hart
 * jumps to the program the harness loaded at the start of DRAM, with its
 * hart ID in a0 and in a1 the address where the harness puts a devicetree
 * blob when it boots firmware (SOC_DTB in soc.h; OpenSBI's generic
 * fw_jump takes its devicetree from a1 and hands Linux the same address). */
	.section .text
	.globl _start
_start:
	.org 0x40
	csrr	a0, mhartid
	li	a1, 0x82200000
	li	t0, 0x80000000
	jr	t0
	.align 6
