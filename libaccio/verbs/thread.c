// SPDX-License-Identifier: MIT
/*
 * An RC QP's helper thread: the transport of a QP whose program does not
 * poll it (the target of RDMA WRITEs), and the completion events of an
 * armed CQ's RC QPs.
 */
#include "accio_verbs.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/*
 * A QP that lets peers write its memory gets a thread that serves the row
 * while the program does not poll (RDMA WRITEs are one-sided: the target
 * program may only watch its memory). It sleeps in poll(2) on the row fd,
 * which the uncore's wake-up ends, and looks at the timers every 10 ms.
 * Until the first RDMA WRITE arrives it only looks every millisecond: a
 * wake-up per packet costs the SoC work that a program that polls its
 * CQs (and never gets a WRITE) does not need. Woken while the program is
 * at the QP, it leaves the packets to the program. A QP whose CQ asks for
 * a completion event gets the thread too: while the CQ is armed, the
 * program's polls leave the packets to it, and it reports what it
 * completes (rc_events()).
 */
static void *rc_thread(void *arg)
{
	struct accio_qp *qp = arg;
	struct pollfd fds[2] = {
		{ .fd = qp->r.fd, .events = POLLIN },
		{ .fd = qp->thread_fd, .events = POLLIN },
	};
	const struct timespec nap = { .tv_nsec = 20000 };
	struct accio_cq *scq = to_acq(qp->ibv_qp.send_cq);
	struct accio_cq *rcq = to_acq(qp->ibv_qp.recv_cq);
	uint64_t kicks;

	for (;;) {
		bool events = __atomic_load_n(&scq->want_event, __ATOMIC_SEQ_CST) ||
			      __atomic_load_n(&rcq->want_event, __ATOMIC_SEQ_CST);
		bool armed = events || __atomic_load_n(&qp->writes_seen, __ATOMIC_RELAXED);

		fds[1].revents = 0;
		if ((armed ? poll(fds, 2, 10) : poll(&fds[1], 1, 1)) < 0 && errno != EINTR)
			break;
		if (__atomic_load_n(&qp->thread_stop, __ATOMIC_SEQ_CST))
			break;
		/* a kick (a CQ was armed): take it; nothing to do if it went */
		if ((fds[1].revents & POLLIN) && read(qp->thread_fd, &kicks, sizeof(kicks)) < 0)
			kicks = 0;
		if (!events && pthread_spin_trylock(&qp->sq_lock)) {
			/* the program is at the QP: it takes the packets */
			nanosleep(&nap, NULL);
			continue;
		}
		if (events)
			pthread_spin_lock(&qp->sq_lock);
		pthread_spin_lock(&qp->rq_lock);
		rc_progress(qp);
		rc_events(qp);
		pthread_spin_unlock(&qp->rq_lock);
		pthread_spin_unlock(&qp->sq_lock);
	}
	return NULL;
}

/*
 * The thread runs on the harts the program is not pinned to, where there
 * are any. On the program's own hart the uncore would hold its wake-up
 * back while the program, an accelerated thread of the same priority,
 * runs there (spinning on its buffer, say), and the two would take turns
 * with the QP's locks.
 */
void rc_thread_start(struct accio_qp *qp)
{
	long i, ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t own, other;
	pthread_attr_t pa;
	int none = 0;

	if (!__atomic_compare_exchange_n(&qp->thread_on, &none, 1, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		return;		/* started already */
	qp->thread_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (qp->thread_fd < 0 || pthread_attr_init(&pa)) {
		qp->thread_on = 0;
		return;
	}
	if (!sched_getaffinity(0, sizeof(own), &own)) {
		CPU_ZERO(&other);
		for (i = 0; i < ncpu && i < CPU_SETSIZE; i++)
			if (!CPU_ISSET(i, &own))
				CPU_SET(i, &other);
		if (CPU_COUNT(&other))
			pthread_attr_setaffinity_np(&pa, sizeof(other), &other);
	}
	if (pthread_create(&qp->thread, &pa, rc_thread, qp))
		qp->thread_on = 0;
	pthread_attr_destroy(&pa);
}

/* Wake the thread (started if need be): a CQ asks for an event. */
void rc_thread_kick(struct accio_qp *qp)
{
	uint64_t one = 1;

	rc_thread_start(qp);
	if (qp->thread_on && write(qp->thread_fd, &one, sizeof(one)) < 0)
		return;		/* a kick is pending already */
}

void rc_thread_stop(struct accio_qp *qp)
{
	uint64_t one = 1;

	if (!qp->thread_on)
		return;
	__atomic_store_n(&qp->thread_stop, true, __ATOMIC_SEQ_CST);
	if (write(qp->thread_fd, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
		pthread_cancel(qp->thread);
	pthread_join(qp->thread, NULL);
	qp->thread_on = 0;
}
