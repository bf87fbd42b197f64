// SPDX-License-Identifier: MIT
/*
 * udp_multi: T concurrent client processes, each running udp_pingpong
 * against the echo server on its own socket (its own ICT row when
 * accelerated).
 *
 * usage: udp_multi -T CLIENTS [udp_pingpong options...]
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
	int t = 0, i, n = 0, ok = 0, st;

	args[n++] = "udp_pingpong";
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-T") && i + 1 < argc)
			t = atoi(argv[++i]);
		else
			args[n++] = argv[i];
	}
	args[n++] = "-q";
	if (t < 1) {
		fprintf(stderr, "usage: udp_multi -T CLIENTS [udp_pingpong options]\n");
		return 2;
	}
	for (i = 0; i < t; i++) {
		if (fork() == 0) {
			if (!freopen("/dev/null", "w", stdout))
				_exit(127);
			execvp(args[0], args);
			_exit(127);
		}
	}
	for (i = 0; i < t; i++)
		if (wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
	printf("clients=%d ok=%d\n", t, ok);
	return ok == t ? 0 : 1;
}
