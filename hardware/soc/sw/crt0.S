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
	j	soc_exit
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
	csrr	a0, mcause
	andi	a0, a0, 0x3f
	addi	a0, a0, 100

/* soc_exit(status): end the run (the harness's console; on QEMU the
 * virt machine's test device: 0x5555 passes, (status << 16) | 0x3333 fails) */
	.globl	soc_exit
soc_exit:
#ifndef SOC_QEMU
	li	t0, 0x70000008
	sd	a0, 0(t0)
#else
	li	t0, 0x100000
	li	t1, 0x5555
	beqz	a0, 5f
	slli	t1, a0, 16
	li	t2, 0x3333
	or	t1, t1, t2
5:	sw	t1, 0(t0)
#endif
4:	j	4b
