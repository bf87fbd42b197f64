/* SPDX-License-Identifier: MIT */
/* The SoC's boot ROM (at 0x10000; Rocket starts at 0x10040): every hart
 * jumps to the program the harness loaded at the start of DRAM, with its
 * hart ID in a0. */
	.section .text
	.globl _start
_start:
	.org 0x40
	csrr	a0, mhartid
	li	t0, 0x80000000
	jr	t0
	.align 6
