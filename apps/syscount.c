// SPDX-License-Identifier: MIT
/*
 * syscount: run a program under ptrace and count its system calls, like
 * strace -c. Used to show that the Accio fast path moves datagrams without
 * data-path system calls.
 *
 * usage: syscount PROGRAM [ARGS...]
 *
 * Prints "syscalls total=N" and "syscall NAME=N" for every call made, to
 * stderr, after the program exits; exits with the program's status. Follows
 * a single-threaded program (not its children).
 */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define NSYS 512

static const char *name_of(int nr)
{
	switch (nr) {
	case 22: return "epoll_pwait";
	case 21: return "epoll_ctl";
	case 25: return "fcntl";
	case 29: return "ioctl";
	case 57: return "close";
	case 63: return "read";
	case 64: return "write";
	case 65: return "readv";
	case 66: return "writev";
	case 72: return "pselect6";
	case 73: return "ppoll";
	case 113: return "clock_gettime";
	case 198: return "socket";
	case 200: return "bind";
	case 203: return "connect";
	case 204: return "getsockname";
	case 205: return "getpeername";
	case 206: return "sendto";
	case 207: return "recvfrom";
	case 208: return "setsockopt";
	case 211: return "sendmsg";
	case 212: return "recvmsg";
	case 222: return "mmap";
	case 215: return "munmap";
	case 425: return "io_uring_setup";
	case 426: return "io_uring_enter";
	case 427: return "io_uring_register";
	default: return NULL;
	}
}

int main(int argc, char **argv)
{
	static unsigned long count[NSYS];
	unsigned long regs[32], total = 0;
	struct iovec iov = { regs, sizeof(regs) };
	int st, entering = 1, sig = 0, i;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: syscount PROGRAM [ARGS...]\n");
		return 2;
	}
	pid = fork();
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		execvp(argv[1], argv + 1);
		perror("syscount: exec");
		_exit(127);
	}
	waitpid(pid, &st, 0);
	ptrace(PTRACE_SETOPTIONS, pid, 0,
	       PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL);
	for (;;) {
		if (ptrace(PTRACE_SYSCALL, pid, 0, sig) < 0)
			break;
		sig = 0;
		if (waitpid(pid, &st, 0) < 0 || WIFEXITED(st) || WIFSIGNALED(st))
			break;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			if (entering &&
			    ptrace(PTRACE_GETREGSET, pid, NT_PRSTATUS, &iov) == 0) {
				unsigned long nr = regs[17];	/* a7 */

				if (nr < NSYS)
					count[nr]++;
				total++;
			}
			entering = !entering;
			continue;
		}
		/* a signal for the program: deliver it on the next resume */
		if (WSTOPSIG(st) != SIGTRAP)
			sig = WSTOPSIG(st);
	}
	fprintf(stderr, "syscalls total=%lu\n", total);
	for (i = 0; i < NSYS; i++) {
		if (!count[i])
			continue;
		if (name_of(i))
			fprintf(stderr, "syscall %s=%lu\n", name_of(i), count[i]);
		else
			fprintf(stderr, "syscall nr%d=%lu\n", i, count[i]);
	}
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}
