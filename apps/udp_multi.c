// SPDX-License-Identifier: MIT
/*
 * udp_multi: T concurrent client processes, each running udp_pingpong
 * against the echo server on its own socket (its own ICT row when
 * accelerated, or a share of the rows when there are more clients than
 * rows).
 *
 * usage: udp_multi -T CLIENTS [-o PREFIX] [udp_pingpong options...]
 *
 * Every client is forked first and held at a barrier, then all are
 * released together, so that the T clients really run at once (started
 * one after another by a shell loop, short clients would overlap little).
 * With -o, client i's output goes to PREFIX.i (i = 1..T), else nowhere.
 *
 * Prints "clients=T ok=K" and exits 0 when every client succeeded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char **args = calloc(argc + 3, sizeof(char *));
	const char *prefix = NULL;
	int t = 0, i, n = 0, ok = 0, st, gate[2];
	char path[256], c;

	args[n++] = "udp_pingpong";
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-T") && i + 1 < argc)
			t = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			prefix = argv[++i];
		else
			args[n++] = argv[i];
	}
	args[n++] = "-q";
	if (t < 1) {
		fprintf(stderr, "usage: udp_multi -T CLIENTS [-o PREFIX] [udp_pingpong options]\n");
		return 2;
	}
	if (pipe(gate) < 0) {
		perror("udp_multi: pipe");
		return 1;
	}
	for (i = 1; i <= t; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("udp_multi: fork");
			return 1;
		}
		if (pid == 0) {
			close(gate[1]);
			if (prefix)
				snprintf(path, sizeof(path), "%s.%d", prefix, i);
			if (!freopen(prefix ? path : "/dev/null", "w", stdout))
				_exit(127);
			if (prefix)
				dup2(1, 2);
			/* the barrier: the gate opens when the parent closes it */
			while (read(gate[0], &c, 1) > 0)
				;
			close(gate[0]);
			execvp(args[0], args);
			_exit(127);
		}
	}
	close(gate[0]);
	close(gate[1]);		/* every client starts now */
	for (i = 0; i < t; i++)
		if (wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
	printf("clients=%d ok=%d\n", t, ok);
	return ok == t ? 0 : 1;
}
