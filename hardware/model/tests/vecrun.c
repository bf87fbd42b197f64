// SPDX-License-Identifier: MIT
/*
 * vecrun: replay Accio test vectors (hardware/vectors/FORMAT.md) against the
 * C model of the uncore, without QEMU.
 *
 * usage: vecrun FILE.vec...
 * Prints one line per failed expectation and a closing "N passed, N failed"
 * line (one count per file). Exit status 0 when every file passed.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accio_uncore.h"

#define MEM_BASE	0x80000000ULL
#define MEM_SIZE	(4u << 20)
#define MAX_FRAMES	4096
#define MAX_LINES	64

struct frame {
	uint8_t *data;
	size_t len;
};

struct harness {
	uint8_t *mem;
	uint64_t now;
	struct frame txq[MAX_FRAMES];
	unsigned int tx_head, tx_count;
	int irq[MAX_LINES];
	const char *file;
	int line;
	int failures;
};

static int h_dma_read(void *o, uint64_t a, void *b, size_t n)
{
	struct harness *h = o;

	if (a < MEM_BASE || a + n > MEM_BASE + MEM_SIZE || a + n < a)
		return -1;
	memcpy(b, h->mem + (a - MEM_BASE), n);
	return 0;
}

static int h_dma_write(void *o, uint64_t a, const void *b, size_t n)
{
	struct harness *h = o;

	if (a < MEM_BASE || a + n > MEM_BASE + MEM_SIZE || a + n < a)
		return -1;
	memcpy(h->mem + (a - MEM_BASE), b, n);
	return 0;
}

/* The vectors' wire is idle: a frame starts at the current vector time. */
static uint64_t h_transmit(void *o, const uint8_t *f, size_t n)
{
	struct harness *h = o;
	struct frame *slot;

	if (h->tx_count == MAX_FRAMES) {
		fprintf(stderr, "%s:%d: transmit queue overflow\n", h->file, h->line);
		h->failures++;
		return h->now;
	}
	slot = &h->txq[(h->tx_head + h->tx_count++) % MAX_FRAMES];
	slot->data = malloc(n);
	memcpy(slot->data, f, n);
	slot->len = n;
	return h->now;
}

static void h_set_irq(void *o, unsigned int line, int level)
{
	struct harness *h = o;

	if (line < MAX_LINES)
		h->irq[line] = level;
}

static uint64_t h_now(void *o)
{
	return ((struct harness *)o)->now;
}

static const struct accio_uncore_ops ops = {
	.dma_read = h_dma_read,
	.dma_write = h_dma_write,
	.transmit = h_transmit,
	.set_irq = h_set_irq,
	.now_ns = h_now,
};

static void fail(struct harness *h, const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "%s:%d: ", h->file, h->line);
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	h->failures++;
}

static int parse_hex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	while (*s) {
		int hi, lo;

		if (!isxdigit((unsigned char)s[0]) || !isxdigit((unsigned char)s[1]) ||
		    n == max)
			return -1;
		hi = isdigit((unsigned char)s[0]) ? s[0] - '0' : (tolower(s[0]) - 'a' + 10);
		lo = isdigit((unsigned char)s[1]) ? s[1] - '0' : (tolower(s[1]) - 'a' + 10);
		out[n++] = (uint8_t)(hi << 4 | lo);
		s += 2;
	}
	return (int)n;
}

static char *hex(const uint8_t *b, size_t n)
{
	static char buf[2 * 2048 + 1];
	size_t i;

	for (i = 0; i < n && i < 2048; i++)
		sprintf(buf + 2 * i, "%02x", b[i]);
	buf[2 * i] = 0;
	return buf;
}

/* Optional "user ASID" and "hart H" words after the operands. */
static void parse_who(char **tok, int ntok, int from, struct accio_access *who)
{
	int i;

	memset(who, 0, sizeof(*who));
	for (i = from; i + 1 < ntok; i += 2) {
		if (!strcmp(tok[i], "user")) {
			who->user = true;
			who->asid = (uint16_t)strtoul(tok[i + 1], NULL, 0);
		} else if (!strcmp(tok[i], "hart")) {
			who->hart = (unsigned int)strtoul(tok[i + 1], NULL, 0);
		}
	}
}

static int run_file(const char *path)
{
	static uint8_t buf[1 << 16];
	struct harness h = { .file = path };
	struct accio_uncore *u = NULL;
	unsigned int rows = 64, harts = 4;
	char line[1 << 17];
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return 1;
	}
	h.mem = calloc(1, MEM_SIZE);
	while (fgets(line, sizeof(line), f)) {
		char *tok[16], *p = line, *save;
		int ntok = 0, n;

		h.line++;
		if ((p = strchr(line, '#')))
			*p = 0;
		for (p = strtok_r(line, " \t\r\n", &save); p && ntok < 16;
		     p = strtok_r(NULL, " \t\r\n", &save))
			tok[ntok++] = p;
		if (!ntok)
			continue;
		if (!strcmp(tok[0], "config")) {
			int i;

			for (i = 1; i < ntok; i++) {
				if (!strncmp(tok[i], "rows=", 5))
					rows = strtoul(tok[i] + 5, NULL, 0);
				else if (!strncmp(tok[i], "harts=", 6))
					harts = strtoul(tok[i] + 6, NULL, 0);
			}
			accio_uncore_free(u);
			u = accio_uncore_new(rows, harts, &ops, &h);
			if (!u) {
				fail(&h, "bad configuration%s%s", "", "");
				break;
			}
			continue;
		}
		if (!u) {
			u = accio_uncore_new(rows, harts, &ops, &h);
		}
		if (!strcmp(tok[0], "mac") && ntok == 2) {
			uint8_t m[6];
			unsigned int v[6];

			if (sscanf(tok[1], "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2],
				   &v[3], &v[4], &v[5]) != 6) {
				fail(&h, "bad mac %s%s", tok[1], "");
				continue;
			}
			for (n = 0; n < 6; n++)
				m[n] = (uint8_t)v[n];
			accio_uncore_set_mac(u, m);
		} else if (!strcmp(tok[0], "time") && ntok == 2) {
			h.now = strtoull(tok[1], NULL, 0);
		} else if (!strcmp(tok[0], "mem") && ntok == 3) {
			uint64_t a = strtoull(tok[1], NULL, 0);

			n = parse_hex(tok[2], buf, sizeof(buf));
			if (n < 0 || h_dma_write(&h, a, buf, n))
				fail(&h, "bad mem line%s%s", "", "");
		} else if (!strcmp(tok[0], "write") && ntok >= 3) {
			struct accio_access who;

			parse_who(tok, ntok, 3, &who);
			accio_uncore_write(u, strtoull(tok[1], NULL, 0),
					   strtoull(tok[2], NULL, 0), &who);
		} else if (!strcmp(tok[0], "store") && ntok >= 4) {
			struct accio_access who;

			parse_who(tok, ntok, 4, &who);
			accio_uncore_store(u, strtoull(tok[1], NULL, 0),
					   strtoull(tok[3], NULL, 0),
					   (unsigned int)strtoul(tok[2], NULL, 0), &who);
		} else if (!strcmp(tok[0], "read") && ntok >= 3) {
			struct accio_access who;
			uint64_t got, want = strtoull(tok[2], NULL, 0);
			char g[32], w[32];

			parse_who(tok, ntok, 3, &who);
			got = accio_uncore_read(u, strtoull(tok[1], NULL, 0), &who);
			if (got != want && strcmp(tok[2], "any")) {
				snprintf(g, sizeof(g), "0x%llx", (unsigned long long)got);
				snprintf(w, sizeof(w), "0x%llx", (unsigned long long)want);
				fail(&h, "read: got %s, expected %s", g, w);
			}
		} else if (!strcmp(tok[0], "rx") && ntok == 3) {
			bool took;

			n = parse_hex(tok[1], buf, sizeof(buf));
			if (n < 0) {
				fail(&h, "bad frame%s%s", "", "");
				continue;
			}
			took = accio_uncore_rx(u, buf, n);
			if (strcmp(tok[2], "any") && took != !strcmp(tok[2], "consumed"))
				fail(&h, "rx: frame was %s, expected %s",
				     took ? "consumed" : "passed", tok[2]);
		} else if (!strcmp(tok[0], "tx") && ntok == 2) {
			struct frame *fr;

			n = parse_hex(tok[1], buf, sizeof(buf));
			if (!h.tx_count) {
				fail(&h, "tx: no frame was transmitted%s%s", "", "");
				continue;
			}
			fr = &h.txq[h.tx_head];
			h.tx_head = (h.tx_head + 1) % MAX_FRAMES;
			h.tx_count--;
			if (n < 0 || (size_t)n != fr->len || memcmp(fr->data, buf, n))
				fail(&h, "tx: got %s, expected %s", hex(fr->data, fr->len),
				     tok[1]);
			free(fr->data);
		} else if (!strcmp(tok[0], "notx") && ntok == 1) {
			if (h.tx_count)
				fail(&h, "notx: %s pending%s", "frames", "");
		} else if (!strcmp(tok[0], "expect-mem") && ntok == 3) {
			static uint8_t want[1 << 16];
			uint64_t a = strtoull(tok[1], NULL, 0);

			n = parse_hex(tok[2], want, sizeof(want));
			if (n < 0 || h_dma_read(&h, a, buf, n) || memcmp(buf, want, n))
				fail(&h, "memory: got %s, expected %s", hex(buf, n > 0 ? n : 0),
				     tok[2]);
		} else if (!strcmp(tok[0], "irq") && ntok == 3) {
			unsigned int l = strtoul(tok[1], NULL, 0);
			int want = atoi(tok[2]);

			if (l >= MAX_LINES || !!h.irq[l] != !!want)
				fail(&h, "irq %s: expected level %s", tok[1], tok[2]);
		} else if (!strcmp(tok[0], "dump") && ntok == 1) {
			size_t need = accio_uncore_dump(u, NULL, 0) + 1;
			char *text = malloc(need);

			if (text) {
				accio_uncore_dump(u, text, need);
				fputs(text, stdout);
				free(text);
			}
		} else if (!strcmp(tok[0], "link") && ntok == 2) {
			accio_uncore_link(u, !strcmp(tok[1], "up"));
		} else {
			fail(&h, "unknown directive %s%s", tok[0], "");
		}
	}
	fclose(f);
	while (h.tx_count) {
		free(h.txq[h.tx_head].data);
		h.tx_head = (h.tx_head + 1) % MAX_FRAMES;
		h.tx_count--;
	}
	accio_uncore_free(u);
	free(h.mem);
	return h.failures;
}

int main(int argc, char **argv)
{
	int i, passed = 0, failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: vecrun FILE.vec...\n");
		return 2;
	}
	for (i = 1; i < argc; i++) {
		int bad = run_file(argv[i]);

		printf("%-40s %s\n", argv[i], bad ? "FAIL" : "ok");
		if (bad)
			failed++;
		else
			passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
