// SPDX-License-Identifier: MIT
/*
 * accio-timeout: timeout(1) that leaves evidence behind.
 *
 * usage: accio-timeout SECONDS COMMAND [ARG]...
 *
 * Runs COMMAND. When it is still running after SECONDS, prints the guest's
 * diagnostics (accio-diag: tasks and where they sleep, accelerated sockets
 * and their rings, blocked-task dump), kills it and exits with 124, like
 * timeout(1). Otherwise exits with COMMAND's status (128+N when signal N
 * ended it); 125 when it cannot run COMMAND, 126/127 when exec fails.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t expired;

static void on_alarm(int sig)
{
	expired = 1;
}

static void diagnose(const char *reason)
{
	pid_t d = fork();

	if (d == 0) {
		execlp("accio-diag", "accio-diag", reason, (char *)NULL);
		perror("accio-timeout: accio-diag");
		_exit(127);
	}
	if (d > 0)
		while (waitpid(d, NULL, 0) < 0 && errno == EINTR)
			;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { { 0, 0 }, { 0, 0 } };
	char reason[512], *end;
	double secs;
	pid_t pid, w;
	int st;

	secs = argc >= 3 ? strtod(argv[1], &end) : 0;
	if (argc < 3 || *end || !(secs > 0) || secs > 1e6) {
		fprintf(stderr, "usage: accio-timeout SECONDS COMMAND [ARG]...\n");
		return 125;
	}
	pid = fork();
	if (pid < 0) {
		perror("accio-timeout: fork");
		return 125;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "accio-timeout: %s: %s\n", argv[2], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	/* no SA_RESTART: the alarm interrupts waitpid() */
	sigaction(SIGALRM, &sa, NULL);
	it.it_value.tv_sec = (time_t)secs;
	it.it_value.tv_usec = (suseconds_t)((secs - (double)(time_t)secs) * 1e6);
	setitimer(ITIMER_REAL, &it, NULL);
	for (;;) {
		w = waitpid(pid, &st, 0);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			perror("accio-timeout: waitpid");
			return 125;
		}
		if (expired) {
			snprintf(reason, sizeof(reason),
				 "accio-timeout: %s still running after %s s",
				 argv[2], argv[1]);
			diagnose(reason);
			kill(pid, SIGKILL);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			return 124;
		}
	}
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}
