/* SPDX-License-Identifier: MIT */
/* Start of a bare-metal program on the Accio Rocket SoC: hart 0 runs
 * main() on its stack and ends the run with main's return value as exit
 * status; other harts run hart_main(hartid) when the program has one. */
	.section .text.init
	.globl _start
_start:
	csrr	a0, mhartid
	la	sp, _stack_top
	slli	t0, a0, 12
	sub	sp, sp, t0		/* 4 KiB of stack per hart */
	la	t0, trap_entry
	csrw	mtvec, t0
	bnez	a0, 1f
	call	main
	li	t0, 0x70000008
	sd	a0, 0(t0)
2:	j	2b
1:	call	hart_main
3:	wfi
	j	3b

	.weak	hart_main
hart_main:
	ret

	.align 2
	.weak	trap_entry
trap_entry:
	/* an unexpected trap: exit status 100 + mcause (low bits) */
	csrr	t1, mcause
	andi	t1, t1, 0x3f
	addi	t1, t1, 100
	li	t0, 0x70000008
	sd	t1, 0(t0)
4:	j	4b
