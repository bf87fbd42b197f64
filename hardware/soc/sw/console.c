// SPDX-License-Identifier: MIT
/*
 * console: the console as a 16550 both ways. Reads one line from the
 * receive register (waiting on LSR's data-ready bit), prints it back as
 * "got=LINE" and the number of bytes; a line that does not come within
 * two million cycles ends the program with status 1. Then its interrupt:
 * none while IER is clear (IIR "no interrupt"), pending at the PLIC once
 * the transmitter-empty interrupt is enabled.
 */
#include "soc.h"

#define RBR	0
#define IER	1
#define IIR	2
#define LSR	5

int main(void)
{
	volatile uint8_t *uart = (volatile uint8_t *)SOC_CONSOLE;
	char line[80];
	unsigned int n = 0;
	uint64_t t0 = rdcycle();

	puts_("console: type a line\n");
	while (n < sizeof(line) - 1) {
		if (!(uart[LSR] & 1)) {
			if (rdcycle() - t0 > 2000000) {
				puts_("console: no input\n");
				return 1;
			}
			continue;
		}
		line[n] = (char)uart[RBR];
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
	puts_("got=");
	puts_(line);
	putch('\n');
	putnum("bytes", n);
	putnum("data_ready_after", uart[LSR] & 1);
	putnum("iir_idle", uart[IIR]);
	uart[IER] = 2;
	putnum("iir_thre", uart[IIR]);
#ifdef SOC_IRQ_CONSOLE
	putnum("plic_pending", mmio_r32(SOC_PLIC + 0x1000) >> SOC_IRQ_CONSOLE(1) & 1);
#endif
	uart[IER] = 0;
	return 0;
}
