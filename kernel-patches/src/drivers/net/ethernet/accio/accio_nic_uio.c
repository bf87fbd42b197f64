// SPDX-License-Identifier: GPL-2.0-only
/*
 * Accio NIC for user-space drivers (UIO)
 *
 * Hands the registers of an Accio NIC to a user-space poll-mode driver
 * (DPDK's net_accio) instead of the netdev driver. It binds only when asked
 * to, through the device's driver_override, so the netdev driver keeps the
 * NIC otherwise. The NIC is polled: no interrupt is offered.
 *
 * The NIC moves frames by DMA to physical addresses that its user posted.
 * When the last user closes the device, however it ended, the NIC is
 * disabled and its queues are emptied, so that no DMA goes on into memory
 * that the process no longer owns.
 */

#include <linux/io.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/uio_driver.h>

#include "accio_regs.h"

struct accio_nic_uio {
	struct uio_info info;
	void __iomem *base;
	struct mutex lock;	/* users */
	unsigned int users;
};

/* Writing only QRESET also clears ENABLE and every other control bit. */
static void accio_nic_uio_quiesce(struct accio_nic_uio *u)
{
	writeq(0, u->base + ACCIO_NIC_INTR_MASK);
	writeq(ACCIO_NIC_CTRL_QRESET_MASK, u->base + ACCIO_NIC_CTRL);
}

static int accio_nic_uio_open(struct uio_info *info, struct inode *inode)
{
	struct accio_nic_uio *u = info->priv;

	mutex_lock(&u->lock);
	u->users++;
	mutex_unlock(&u->lock);
	return 0;
}

static int accio_nic_uio_release(struct uio_info *info, struct inode *inode)
{
	struct accio_nic_uio *u = info->priv;

	mutex_lock(&u->lock);
	if (!--u->users)
		accio_nic_uio_quiesce(u);
	mutex_unlock(&u->lock);
	return 0;
}

static int accio_nic_uio_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct accio_nic_uio *u;
	struct resource *res;
	u64 id;

	u = devm_kzalloc(dev, sizeof(*u), GFP_KERNEL);
	if (!u)
		return -ENOMEM;
	u->base = devm_platform_get_and_ioremap_resource(pdev, 0, &res);
	if (IS_ERR(u->base))
		return PTR_ERR(u->base);
	id = readq(u->base + ACCIO_NIC_ID);
	if ((id & ACCIO_NIC_ID_MAGIC_MASK) !=
	    (ACCIO_NIC_ID_RESET & ACCIO_NIC_ID_MAGIC_MASK)) {
		dev_err(dev, "not an Accio NIC (id %#llx)\n", id);
		return -ENODEV;
	}
	if (!PAGE_ALIGNED(res->start)) {
		dev_err(dev, "registers at %pa are not page aligned\n", &res->start);
		return -EINVAL;
	}
	mutex_init(&u->lock);
	accio_nic_uio_quiesce(u);

	u->info.name = "accio-nic";
	u->info.version = "1";
	u->info.irq = UIO_IRQ_NONE;
	u->info.open = accio_nic_uio_open;
	u->info.release = accio_nic_uio_release;
	u->info.priv = u;
	u->info.mem[0].name = "registers";
	u->info.mem[0].memtype = UIO_MEM_PHYS;
	u->info.mem[0].addr = res->start;
	u->info.mem[0].size = PAGE_ALIGN(resource_size(res));
	platform_set_drvdata(pdev, u);
	return devm_uio_register_device(dev, &u->info);
}

static int accio_nic_uio_remove(struct platform_device *pdev)
{
	accio_nic_uio_quiesce(platform_get_drvdata(pdev));
	return 0;
}

/* No match table: the device is bound through driver_override only. */
static struct platform_driver accio_nic_uio_driver = {
	.probe = accio_nic_uio_probe,
	.remove = accio_nic_uio_remove,
	.driver = {
		.name = "accio-nic-uio",
	},
};
module_platform_driver(accio_nic_uio_driver);

MODULE_DESCRIPTION("Accio NIC for user-space poll-mode drivers (UIO)");
MODULE_LICENSE("GPL");
