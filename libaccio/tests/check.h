/* SPDX-License-Identifier: MIT */
/* The host tests' one assertion: it names the test, the line and the condition. */
#ifndef ACCIO_CHECK_H
#define ACCIO_CHECK_H

#include <stdio.h>

static int check_failures;

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: %s: failed: %s\n",	\
				__FILE__, __LINE__, __func__, #cond);	\
			check_failures++;				\
		}							\
	} while (0)

#define CHECK_DONE(name)						\
	do {								\
		if (check_failures)					\
			fprintf(stderr, "%s: %d failed\n", name,	\
				check_failures);			\
		else							\
			printf("%s: ok\n", name);			\
		return check_failures != 0;				\
	} while (0)

#endif /* ACCIO_CHECK_H */
