// SPDX-License-Identifier: MIT
/*
 * The Accio Rocket SoC's own Verilator harness (rocket-chip's emulator needs
 * fesvr, which we do not have): DRAM behind Rocket's AXI4 memory port with an
 * ELF loader, the boot ROM inside the SoC jumps to DRAM, a console on the
 * MMIO port, the wire model on the SoC's AXI-Stream ports (the NIC's wire;
 * built without SOC_NIC, for the SoC whose wire reaches the uncore
 * directly, also the count of the frames on the uncore's normal-path port),
 * cycle counts and optional FST waveforms for a window of cycles.
 *
 * usage: soc-sim [options] [PROGRAM.elf]   (the program may come by --load)
 *   --max-cycles N      stop (exit 3) after N cycles (default 20,000,000)
 *   --wire MODE         echo (default: a peer that answers ARP, ICMP echo and
 *                       UDP, below), sink, or replay:FILE (frames as hex
 *                       lines, sent in order once the program marks 1)
 *   --wire-delay N      cycles from a frame's last TX beat to its echo (200)
 *   --frames FILE       write every transmitted frame: the cycle of its last
 *                       beat, then its bytes in hex
 *   --fst FILE --fst-from C --fst-to C   waveforms (build with TRACE=1)
 *   --mhz F             core clock for the uncore's time (default 1000)
 *   --dram-latency N    cycles from a read's address to its first beat, and
 *                       from a write's last beat to its response (default 0:
 *                       a memory that answers at once)
 *   --load FILE@ADDR    also put FILE's bytes into DRAM at ADDR (a kernel
 *                       image, a devicetree blob, an initramfs); repeatable
 *   --save-at C FILE    at cycle C, write the whole simulation (the SoC's
 *                       state, DRAM, the harness's queues and counts) to
 *                       FILE and stop (exit 0, "saved=C")
 *   --save-on TEXT FILE the same, at the cycle the console has printed TEXT
 *                       (a booted system announcing it is ready)
 *   --stop-on TEXT      end the run (status 0, "stopped=C") at the cycle the
 *                       console has printed TEXT
 *   --restore FILE      start from such a file instead of reset (no program
 *                       needed; cycle counts go on from the saved one)
 *   --input TEXT        bytes for the console to receive, in order (\n is a
 *                       newline); not part of a saved simulation
 *
 * The console (offsets from 0x70000000): 0 prints a character, 8 ends the
 * run with the value as exit status, 16 prints "mark N cycle C" (N the
 * value), which the calibration uses. At the end: "cycles=C", the frame
 * counts and the exit status.
 */
#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <elf.h>
#include <memory>
#include <string>
#include <vector>

#include "VAccioSoC.h"
#include "verilated.h"
#ifdef SOC_SAVABLE
#include "verilated_save.h"
#endif
#if VM_TRACE
#include "verilated_fst_c.h"
#endif

static const uint64_t DRAM_BASE = 0x80000000ull;
static const uint64_t DRAM_SIZE = 64ull << 20;

struct Burst {
	uint32_t id, len, size, beat;
	uint64_t addr, due;	/* due: the cycle its first beat may go */
};

struct Frame {
	std::vector<uint8_t> data;
	uint64_t due;	/* cycle from which it may be sent */
};

static std::vector<uint8_t> dram(DRAM_SIZE);

static uint8_t *dram_at(uint64_t a, size_t n)
{
	if (a < DRAM_BASE || a + n > DRAM_BASE + DRAM_SIZE)
		return nullptr;
	return &dram[a - DRAM_BASE];
}

static int load_elf(const char *path)
{
	FILE *f = fopen(path, "rb");
	Elf64_Ehdr eh;

	if (!f || fread(&eh, sizeof(eh), 1, f) != 1 || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_RISCV) {
		fprintf(stderr, "soc-sim: %s: not a 64-bit RISC-V ELF file\n", path);
		return -1;
	}
	for (int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (fseek(f, eh.e_phoff + i * sizeof(ph), SEEK_SET) || fread(&ph, sizeof(ph), 1, f) != 1)
			return -1;
		if (ph.p_type != PT_LOAD || !ph.p_memsz)
			continue;
		uint8_t *m = dram_at(ph.p_paddr, ph.p_memsz);
		if (!m || ph.p_filesz > ph.p_memsz) {
			fprintf(stderr, "soc-sim: %s: segment at %#" PRIx64 " is outside DRAM\n",
				path, (uint64_t)ph.p_paddr);
			return -1;
		}
		memset(m, 0, ph.p_memsz);
		if (fseek(f, ph.p_offset, SEEK_SET) || fread(m, 1, ph.p_filesz, f) != ph.p_filesz)
			return -1;
	}
	fclose(f);
	return 0;
}

/* FILE@ADDR: a raw file into DRAM */
static int load_raw(const std::string &spec)
{
	size_t at = spec.rfind('@');
	uint64_t addr;
	long n;

	if (at == std::string::npos) {
		fprintf(stderr, "soc-sim: --load wants FILE@ADDR, not %s\n", spec.c_str());
		return -1;
	}
	std::string path = spec.substr(0, at);
	addr = strtoull(spec.c_str() + at + 1, nullptr, 0);
	FILE *f = fopen(path.c_str(), "rb");
	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "soc-sim: %s: %s\n", path.c_str(), strerror(errno));
		return -1;
	}
	uint8_t *m = dram_at(addr, n);
	if (!m || fread(m, 1, n, f) != (size_t)n) {
		fprintf(stderr, "soc-sim: %s (%ld bytes) does not fit DRAM at %#" PRIx64 "\n",
			path.c_str(), n, addr);
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static std::vector<std::vector<uint8_t>> read_frames(const char *path)
{
	std::vector<std::vector<uint8_t>> out;
	FILE *f = fopen(path, "r");
	char line[8192];

	if (!f) {
		fprintf(stderr, "soc-sim: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	while (fgets(line, sizeof(line), f)) {
		std::vector<uint8_t> fr;
		for (char *p = line; p[0] && p[1]; p += 2) {
			int h = hexval(p[0]), l = hexval(p[1]);
			if (h < 0 || l < 0)
				break;
			fr.push_back(h << 4 | l);
		}
		if (!fr.empty())
			out.push_back(fr);
	}
	fclose(f);
	return out;
}

/*
 * The echo peer at the wire's far end (as QEMU's NIC with wire-peer=echo):
 * it answers ARP requests for any IPv4 address, ICMP echo requests and UDP
 * datagrams (back to their source, addresses and ports swapped, the
 * payload unchanged) sent to its station address or broadcast; it ignores
 * everything else. Swapping addresses or ports leaves every checksum valid.
 */
static const uint8_t PEER_MAC[6] = {0x02, 0xac, 0xc1, 0x0e, 0xc4, 0x00};

static unsigned int be16(const uint8_t *p)
{
	return p[0] << 8 | p[1];
}

static bool peer_answer(std::vector<uint8_t> &f)
{
	uint8_t *e = f.data(), *ip = e + 14, *l4, tpa[4];
	size_t len = f.size(), ihl, tot;

	if (len < 14 || (!(e[0] & 1) && memcmp(e, PEER_MAC, 6)))
		return false;
	if (be16(e + 12) == 0x0806) {	/* ARP: a question, not an announcement */
		if (len < 42 || be16(ip) != 1 || be16(ip + 2) != 0x0800 || ip[4] != 6 ||
		    ip[5] != 4 || be16(ip + 6) != 1 || !memcmp(ip + 14, ip + 24, 4))
			return false;
		ip[7] = 2;
		memcpy(tpa, ip + 24, 4);
		memcpy(ip + 18, ip + 8, 10);
		memcpy(ip + 8, PEER_MAC, 6);
		memcpy(ip + 14, tpa, 4);
		memcpy(e, ip + 18, 6);
		memcpy(e + 6, PEER_MAC, 6);
		return true;
	}
	if (be16(e + 12) != 0x0800 || len < 34 || ip[0] >> 4 != 4 || (e[0] & 1))
		return false;
	ihl = (ip[0] & 15) * 4;
	tot = be16(ip + 2);
	if (ihl < 20 || tot < ihl || 14 + tot > len)
		return false;
	l4 = ip + ihl;
	if (ip[9] == 17) {		/* UDP: a later fragment carries no ports */
		if (!(be16(ip + 6) & 0x1fff)) {
			if (tot < ihl + 8)
				return false;
			for (int i = 0; i < 2; i++)
				std::swap(l4[i], l4[2 + i]);
		}
	} else if (ip[9] == 1) {	/* ICMP echo request */
		if (tot < ihl + 8 || l4[0] != 8 || (be16(ip + 6) & 0x3fff))
			return false;
		uint32_t sum = 0;
		l4[0] = 0;
		l4[2] = l4[3] = 0;
		for (size_t i = 0; i < tot - ihl; i += 2)
			sum += l4[i] << 8 | (i + 1 < tot - ihl ? l4[i + 1] : 0);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		l4[2] = (uint8_t)(~sum >> 8);
		l4[3] = (uint8_t)~sum;
	} else
		return false;
	for (int i = 0; i < 4; i++)
		std::swap(ip[12 + i], ip[16 + i]);
	memcpy(e, e + 6, 6);
	memcpy(e + 6, PEER_MAC, 6);
	return true;
}

int main(int argc, char **argv)
{
	uint64_t max_cycles = 20000000, wire_delay = 200, fst_from = 0, fst_to = 0, dram_latency = 0;
	const char *elf = nullptr, *frames_path = nullptr, *fst_path = nullptr;
	std::string wire = "echo";
	std::vector<std::string> loads;
	uint64_t save_at = UINT64_MAX;
	const char *save_path = nullptr, *restore_path = nullptr;
	std::string save_on, stop_on, console_tail;	/* the last characters printed */
	std::deque<uint8_t> input;	/* what the console has yet to receive */
	double mhz = 1000;

	Verilated::commandArgs(argc, argv);
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto next = [&]() -> const char * {
			if (i + 1 >= argc) {
				fprintf(stderr, "soc-sim: %s needs a value\n", a.c_str());
				exit(2);
			}
			return argv[++i];
		};
		if (a == "--max-cycles") max_cycles = strtoull(next(), nullptr, 0);
		else if (a == "--wire") wire = next();
		else if (a == "--wire-delay") wire_delay = strtoull(next(), nullptr, 0);
		else if (a == "--frames") frames_path = next();
		else if (a == "--fst") fst_path = next();
		else if (a == "--fst-from") fst_from = strtoull(next(), nullptr, 0);
		else if (a == "--fst-to") fst_to = strtoull(next(), nullptr, 0);
		else if (a == "--mhz") mhz = atof(next());
		else if (a == "--dram-latency") dram_latency = strtoull(next(), nullptr, 0);
		else if (a == "--load") loads.push_back(next());
		else if (a == "--save-at") {
			save_at = strtoull(next(), nullptr, 0);
			save_path = next();
		} else if (a == "--save-on") {
			save_on = next();
			save_path = next();
		} else if (a == "--stop-on") stop_on = next();
		else if (a == "--restore") restore_path = next();
		else if (a == "--input") {
			for (const char *p = next(); *p; p++) {
				if (p[0] == '\\' && p[1] == 'n') {
					input.push_back('\n');
					p++;
				} else if (p[0] == '\\' && p[1] == '\\') {
					input.push_back('\\');
					p++;
				} else
					input.push_back((uint8_t)*p);
			}
		}
		else if (a[0] == '+') continue;	/* plusargs for the RTL */
		else if (a[0] == '-') {
			fprintf(stderr, "soc-sim: unknown option %s\n", a.c_str());
			return 2;
		} else elf = argv[i];
	}
	if ((!elf && loads.empty() && !restore_path) ||
	    (wire != "echo" && wire != "sink" && wire.rfind("replay:", 0))) {
		fprintf(stderr, "usage: soc-sim [--max-cycles N] [--wire echo|sink|replay:FILE] "
			"[--wire-delay N] [--frames FILE] [--fst FILE --fst-from C --fst-to C] "
			"[--mhz F] [--dram-latency N] [--load FILE@ADDR]... [--save-at C FILE] "
			"[--restore FILE] [PROGRAM.elf]\n");
		return 2;
	}
#ifndef SOC_SAVABLE
	if (save_path || restore_path) {
		fprintf(stderr, "soc-sim: built without --savable: no --save-at or --restore\n");
		return 2;
	}
#endif
	if (elf && load_elf(elf))
		return 2;
	for (auto &l : loads)
		if (load_raw(l))
			return 2;
	std::vector<std::vector<uint8_t>> replay;
	if (!wire.rfind("replay:", 0))
		replay = read_frames(wire.c_str() + 7);
	FILE *frames = frames_path ? fopen(frames_path, "w") : nullptr;

	auto top = std::make_unique<VAccioSoC>();
#if VM_TRACE
	std::unique_ptr<VerilatedFstC> fst;
	if (fst_path) {
		Verilated::traceEverOn(true);
		fst = std::make_unique<VerilatedFstC>();
		top->trace(fst.get(), 99);
		fst->open(fst_path);
	}
#else
	if (fst_path) {
		fprintf(stderr, "soc-sim: built without waveforms (make soc TRACE=1)\n");
		return 2;
	}
#endif
	std::deque<Burst> rq, wq;
	std::deque<Burst> bq;	/* id, resp (in len), due */
	std::deque<Frame> rxq;
	std::vector<uint8_t> txf, nicf;
	size_t rx_off = 0;
	uint64_t cycle = 0, tx_frames = 0, rx_frames = 0, nic_frames = 0;
	int status = -1;

	top->mac = 0x020000000002ull;	/* 02:00:00:00:00:02, byte 0 in bits 7:0 */
	top->reset = 1;
	top->clock = 0;
#ifdef SOC_SAVABLE
	/* the whole simulation in one file: the SoC, then the harness */
	static const uint64_t MAGIC = 0x31434f53434f4341ull;	/* "ACCOSOC1" */
	auto put = [](VerilatedSerialize &os, const void *p, size_t n) { os.write(p, n); };
	auto put64 = [&](VerilatedSerialize &os, uint64_t v) { put(os, &v, 8); };
	auto get64 = [](VerilatedDeserialize &is) { uint64_t v; is.read(&v, 8); return v; };
	auto save = [&](const char *path) {
		VerilatedSave os;
		os.open(path);
		if (!os.isOpen()) {
			fprintf(stderr, "soc-sim: %s: cannot write\n", path);
			exit(2);
		}
		os << *top;
		put64(os, MAGIC);
		for (uint64_t v : {cycle, tx_frames, rx_frames, nic_frames, (uint64_t)rx_off})
			put64(os, v);
		for (auto *q : {&rq, &wq, &bq}) {
			put64(os, q->size());
			for (auto &b : *q)
				put(os, &b, sizeof(b));
		}
		put64(os, rxq.size());
		for (auto &f : rxq) {
			put64(os, f.due);
			put64(os, f.data.size());
			put(os, f.data.data(), f.data.size());
		}
		for (auto *v : {&txf, &nicf}) {
			put64(os, v->size());
			put(os, v->data(), v->size());
		}
		put(os, dram.data(), dram.size());
		os.close();
	};
	if (restore_path) {
		VerilatedRestore is;
		is.open(restore_path);
		if (!is.isOpen()) {
			fprintf(stderr, "soc-sim: %s: cannot read\n", restore_path);
			return 2;
		}
		is >> *top;
		if (get64(is) != MAGIC) {
			fprintf(stderr, "soc-sim: %s: not a saved simulation of this SoC\n", restore_path);
			return 2;
		}
		cycle = get64(is);
		tx_frames = get64(is);
		rx_frames = get64(is);
		nic_frames = get64(is);
		rx_off = get64(is);
		for (auto *q : {&rq, &wq, &bq}) {
			q->resize(get64(is));
			for (auto &b : *q)
				is.read(&b, sizeof(b));
		}
		rxq.resize(get64(is));
		for (auto &f : rxq) {
			f.due = get64(is);
			f.data.resize(get64(is));
			is.read(f.data.data(), f.data.size());
		}
		for (auto *v : {&txf, &nicf}) {
			v->resize(get64(is));
			is.read(v->data(), v->size());
		}
		is.read(dram.data(), dram.size());
		is.close();
	}
#endif
	for (; cycle < max_cycles && status < 0; cycle++) {
#ifdef SOC_SAVABLE
		if (save_path && cycle == save_at) {
			save(save_path);
			printf("saved=%" PRIu64 "\n", cycle);
			return 0;
		}
#endif
		top->reset = cycle < 20;
		top->time_ns = (uint64_t)(cycle * 1000.0 / mhz);
		/* inputs for this cycle */
		top->mem_axi4_0_aw_ready = 1;
		top->mem_axi4_0_w_ready = !wq.empty();
		top->mem_axi4_0_ar_ready = rq.size() < 8;
		top->mem_axi4_0_b_valid = !bq.empty() && bq.front().due <= cycle;
		if (!bq.empty()) {
			top->mem_axi4_0_b_bits_id = bq.front().id;
			top->mem_axi4_0_b_bits_resp = bq.front().len;
		}
		top->mem_axi4_0_r_valid = !rq.empty() && rq.front().due <= cycle;
		if (!rq.empty()) {
			Burst &b = rq.front();
			uint64_t a = (b.addr & ~(uint64_t)((1u << b.size) - 1)) +
				     (uint64_t)b.beat * (1u << b.size);
			uint8_t *m = dram_at(a & ~7ull, 8);
			uint64_t v = 0;
			if (m)
				memcpy(&v, m, 8);
			top->mem_axi4_0_r_bits_id = b.id;
			top->mem_axi4_0_r_bits_data = v;
			top->mem_axi4_0_r_bits_resp = m ? 0 : 3;
			top->mem_axi4_0_r_bits_last = b.beat == b.len;
		}
		top->tx_ready = 1;
		top->cons_in_valid = !input.empty();
		top->cons_in_data = input.empty() ? 0 : input.front();
#ifndef SOC_NIC
		top->toNic_ready = 1;
#endif
		top->link_valid = 0;
		bool rx_have = !rxq.empty() && rxq.front().due <= cycle;
		top->rx_valid = rx_have;
		if (rx_have) {
			auto &d = rxq.front().data;
			uint64_t v = 0;
			size_t n = std::min<size_t>(8, d.size() - rx_off);
			memcpy(&v, &d[rx_off], n);
			top->rx_data = v;
			top->rx_keep = (uint8_t)((1u << n) - 1);
			top->rx_last = rx_off + 8 >= d.size();
		}
		top->eval();

		/* what happens at this rising edge */
		if (top->mem_axi4_0_ar_valid && top->mem_axi4_0_ar_ready)
			rq.push_back({top->mem_axi4_0_ar_bits_id, top->mem_axi4_0_ar_bits_len,
				      top->mem_axi4_0_ar_bits_size, 0, top->mem_axi4_0_ar_bits_addr,
				      cycle + 1 + dram_latency});
		bool r_fire = top->mem_axi4_0_r_valid && top->mem_axi4_0_r_ready;
		if (top->mem_axi4_0_w_valid && top->mem_axi4_0_w_ready) {
			Burst &b = wq.front();
			uint64_t a = (b.addr & ~(uint64_t)((1u << b.size) - 1)) +
				     (uint64_t)b.beat * (1u << b.size);
			uint8_t *m = dram_at(a & ~7ull, 8);
			uint64_t v = top->mem_axi4_0_w_bits_data;
			for (int i = 0; m && i < 8; i++)
				if (top->mem_axi4_0_w_bits_strb >> i & 1)
					m[i] = v >> (8 * i);
			if (b.beat++ == b.len) {
				bq.push_back({b.id, m ? 0u : 3u, 0, 0, 0,
					      cycle + 1 + dram_latency});
				wq.pop_front();
			}
		}
		if (top->mem_axi4_0_aw_valid && top->mem_axi4_0_aw_ready)
			wq.push_back({top->mem_axi4_0_aw_bits_id, top->mem_axi4_0_aw_bits_len,
				      top->mem_axi4_0_aw_bits_size, 0, top->mem_axi4_0_aw_bits_addr, 0});
		if (top->mem_axi4_0_b_valid && top->mem_axi4_0_b_ready)
			bq.pop_front();
		if (r_fire) {
			if (rq.front().beat++ == rq.front().len)
				rq.pop_front();
		}
		if (rx_have && top->rx_ready) {
			rx_off += 8;
			if (rx_off >= rxq.front().data.size()) {
				rxq.pop_front();
				rx_off = 0;
				rx_frames++;
			}
		}
		if (top->tx_valid) {
			uint64_t v = top->tx_data;
			for (int i = 0; i < 8; i++)
				if (top->tx_keep >> i & 1)
					txf.push_back(v >> (8 * i));
			if (top->tx_last) {
				tx_frames++;
				if (frames) {
					fprintf(frames, "%" PRIu64 " ", cycle);
					for (uint8_t c : txf)
						fprintf(frames, "%02x", c);
					fprintf(frames, "\n");
				}
				if (wire == "echo" && peer_answer(txf))
					rxq.push_back({txf, cycle + wire_delay});
				txf.clear();
			}
		}
#ifndef SOC_NIC
		if (top->toNic_valid && top->toNic_last)
			nic_frames++;
#endif
		if (top->cons_in_pop && !input.empty())
			input.pop_front();
		if (top->cons_valid) {
			uint64_t v = top->cons_data;
			switch (top->cons_off) {
			case 0:
				putchar((int)(v & 0xff));
				fflush(stdout);
				if (!save_on.empty() || !stop_on.empty()) {
					console_tail.push_back((char)(v & 0xff));
					if (console_tail.size() > std::max(save_on.size(), stop_on.size()))
						console_tail.erase(0, 1);
					auto ends = [&](const std::string &t) {
						return !t.empty() && console_tail.size() >= t.size() &&
						       !console_tail.compare(console_tail.size() - t.size(),
									     t.size(), t);
					};
					if (ends(save_on))
						save_at = cycle + 1;
					if (ends(stop_on)) {
						printf("\nstopped=%" PRIu64 "\n", cycle);
						status = 0;
					}
				}
				break;
			case 8:
				status = (int)(v & 0xff);
				break;
			case 16:
				if (v == 1)
					for (auto &fr : replay)
						rxq.push_back({fr, cycle});
				printf("mark %" PRIu64 " cycle %" PRIu64 "\n", v, cycle);
				break;
			}
		}
		top->clock = 1;
		top->eval();
#if VM_TRACE
		if (fst && cycle >= fst_from && (!fst_to || cycle <= fst_to))
			fst->dump(2 * cycle + 1);
#endif
		top->clock = 0;
		top->eval();
#if VM_TRACE
		if (fst && cycle >= fst_from && (!fst_to || cycle <= fst_to))
			fst->dump(2 * cycle + 2);
#endif
	}
	top->final();
#if VM_TRACE
	if (fst)
		fst->close();
#endif
	if (frames)
		fclose(frames);
	printf("cycles=%" PRIu64 "\ntx_frames=%" PRIu64 "\nrx_frames=%" PRIu64 "\n", cycle,
	       tx_frames, rx_frames);
#ifndef SOC_NIC
	printf("nic_frames=%" PRIu64 "\n", nic_frames);
#endif
	if (status < 0) {
		printf("status=timeout\n");
		return 3;
	}
	printf("status=%d\n", status);
	return status;
}
