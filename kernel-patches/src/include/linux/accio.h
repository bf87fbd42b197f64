/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Accio uncore: the hooks the socket layer and the scheduler call.
 */
#ifndef _LINUX_ACCIO_H
#define _LINUX_ACCIO_H

#include <linux/errno.h>
#include <linux/sched.h>
#include <uapi/linux/accio.h>

struct file;
struct mm_struct;
struct socket;

#ifdef CONFIG_ACCIO_UNCORE
int accio_sock_ioctl(struct socket *sock, void __user *arg);
void __accio_sched_switch(struct task_struct *prev, struct task_struct *next);
bool accio_sched_yield(u8 prio);
void accio_mm_asid_changed(struct mm_struct *mm, unsigned long asid);
void accio_mm_switched(struct mm_struct *mm);
void accio_mm_destroyed(struct mm_struct *mm);
int accio_roce_row(struct file *f, u32 *slot);
void accio_roce_row_set_qpn(struct file *f, u32 qpn);
/* how a row's notify function is called: the side, and who calls */
#define ACCIO_ROW_NOTIFY_TX	1	/* the send side, else the receive side */
#define ACCIO_ROW_NOTIFY_USER	2	/* ACCIO_IOC_NOTIFY, else a wake-up */
int accio_row_set_notify(struct file *f,
			 void (*notify)(void *ctx, unsigned int how),
			 void *ctx);
int accio_row_arm_notify(struct file *f, bool tx);

/*
 * Context switch: tell the uncore whether this hart now runs an accelerated
 * I/O thread, and at which priority (the paper's extra ASID bit).
 */
static inline void accio_sched_switch(struct task_struct *prev,
				      struct task_struct *next)
{
	if (unlikely(prev->accio_prio || next->accio_prio))
		__accio_sched_switch(prev, next);
}
#else
static inline void accio_mm_asid_changed(struct mm_struct *mm,
					 unsigned long asid)
{
}

static inline void accio_mm_switched(struct mm_struct *mm)
{
}

static inline void accio_mm_destroyed(struct mm_struct *mm)
{
}

static inline int accio_sock_ioctl(struct socket *sock, void __user *arg)
{
	return -ENOIOCTLCMD;
}

static inline int accio_roce_row(struct file *f, u32 *slot)
{
	return -ENODEV;
}

static inline void accio_roce_row_set_qpn(struct file *f, u32 qpn)
{
}

static inline void accio_sched_switch(struct task_struct *prev,
				      struct task_struct *next)
{
}
#endif

#endif /* _LINUX_ACCIO_H */
