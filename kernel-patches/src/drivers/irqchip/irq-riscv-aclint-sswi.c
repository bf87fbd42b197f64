// SPDX-License-Identifier: GPL-2.0
/*
 * RISC-V ACLINT SSWI: supervisor software interrupts between harts.
 *
 * The device has one SETSSIP register per hart: a store of 1 makes the
 * hart's supervisor software interrupt pending, which the hart clears in
 * its sip CSR. The kernel sends its IPIs with that store instead of an
 * SBI call, so neither the sender nor the receiver enters the firmware;
 * remote TLB flushes then go by IPI too.
 * Without the device the IPIs stay with the SBI.
 */

#define pr_fmt(fmt) "aclint-sswi: " fmt

#include <linux/cpumask.h>
#include <linux/io.h>
#include <linux/irqchip.h>
#include <linux/of.h>
#include <linux/of_address.h>
#include <linux/of_irq.h>
#include <linux/smp.h>

#include <asm/smp.h>

static void __iomem *sswi_reg[NR_CPUS] __ro_after_init;

static void sswi_send_ipi(const struct cpumask *target)
{
	unsigned int cpu;

	for_each_cpu(cpu, target)
		writel(1, sswi_reg[cpu]);
}

static const struct riscv_ipi_ops sswi_ipi_ops = {
	.ipi_inject = sswi_send_ipi,
	.rfence = true,
};

static int __init sswi_init(struct device_node *node,
			    struct device_node *parent)
{
	struct of_phandle_args args;
	unsigned long hartid;
	void __iomem *base;
	int i, cpu, n = 0;

	base = of_iomap(node, 0);
	if (!base) {
		pr_err("%pOFP: no registers\n", node);
		return -ENODEV;
	}
	/* register i belongs to the hart of interrupts-extended entry i */
	for (i = 0; !of_irq_parse_one(node, i, &args); i++) {
		if (args.args_count != 1 || args.args[0] != RV_IRQ_SOFT ||
		    riscv_of_parent_hartid(args.np, &hartid))
			continue;
		cpu = riscv_hartid_to_cpuid(hartid);
		if (cpu < 0)
			continue;
		sswi_reg[cpu] = base + 4 * i;
		n++;
	}
	for_each_possible_cpu(cpu) {
		if (!sswi_reg[cpu]) {
			pr_warn("%pOFP: no register for CPU %d, IPIs stay with the SBI\n",
				node, cpu);
			iounmap(base);
			return -ENODEV;
		}
	}
	riscv_set_ipi_ops(&sswi_ipi_ops);
	pr_info("%pOFP: IPIs of %d harts by supervisor software interrupts\n",
		node, n);
	return 0;
}

IRQCHIP_DECLARE(riscv_aclint_sswi, "riscv,aclint-sswi", sswi_init);
