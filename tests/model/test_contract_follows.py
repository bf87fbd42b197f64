"""Change the contract in one file and the layers follow.

A copy of the register map's SystemRDL gets a different contract: the RX
record's LEN and SPORT change places, so do the TX record's LEN and DPORT,
and the link events swap their codes. From that one edit the generator
writes the headers, the vectors are written again (Python, from the
generated accio_contract.py), and the C model (hardware/model) and
libaccio's record codec are compiled against the new headers: the model
passes the new vectors, and the codec reads and writes the records as the
new Python contract lays them out. The model built on the new contract
fails the committed vectors, so the vectors do carry the layout. (The
kernel and the RTL name the same constants; tests/model/test_contract.py
checks that nobody defines them by hand.)"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REGMAP = os.path.join(ROOT, "hardware", "regmap")
MODEL = os.path.join(ROOT, "hardware", "model")
VECTORS = os.path.join(ROOT, "hardware", "vectors")
LIBACCIO = os.path.join(ROOT, "libaccio")
CC = os.environ.get("HOSTCC", "cc")


def edit(path, old, new):
    text = open(path).read()
    assert text.count(old) == 1, old
    open(path, "w").write(text.replace(old, new))


@pytest.fixture(scope="module")
def changed(tmp_path_factory):
    """A tree with the changed contract: regmap/, generated/, vectors/."""
    tmp = tmp_path_factory.mktemp("contract")
    rdl = tmp / "regmap"
    shutil.copytree(REGMAP, rdl, ignore=shutil.ignore_patterns("__pycache__"))
    rec = str(rdl / "accio_records.rdl")
    edit(rec, "} LEN @ 0x0;\n    reg { regwidth = 16; accesswidth = 16; desc = \"UDP source port.\";"
         " field {} VALUE[15:0] = 0; } SPORT @ 0x2;",
         "} LEN @ 0x2;\n    reg { regwidth = 16; accesswidth = 16; desc = \"UDP source port.\";"
         " field {} VALUE[15:0] = 0; } SPORT @ 0x0;")
    text = open(rec).read()
    tx = text.index("addrmap accio_tx_rec")
    tail = text[tx:].replace("} LEN @ 0x0;", "} LEN @ 0x2;", 1).replace("} DPORT @ 0x2;", "} DPORT @ 0x0;", 1)
    open(rec, "w").write(text[:tx] + tail)
    unc = str(rdl / "accio_uncore.rdl")
    edit(unc, "LINK_UP = 1 {", "LINK_UP = 2 {")
    edit(unc, "LINK_DOWN = 2 {", "LINK_DOWN = 1 {")

    spec = importlib.util.spec_from_file_location("accio_generate_copy", str(rdl / "generate.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.SOURCES = [str(rdl / os.path.basename(s)) for s in gen.SOURCES]
    out = tmp / "generated"
    out.mkdir()
    gen.generate(str(out))

    vec = tmp / "vectors"
    vec.mkdir()
    shutil.copy(os.path.join(VECTORS, "gen_vectors.py"), vec)
    subprocess.run([sys.executable, str(vec / "gen_vectors.py")], check=True)
    return tmp


def define(header, name):
    m = re.search(r"(?m)^#define %s\s+(\S+)" % name, open(header).read())
    return m and m.group(1)


def test_the_edit_reaches_the_generated_contract(changed):
    new = str(changed / "generated" / "accio_contract.h")
    old = os.path.join(ROOT, "hardware", "generated", "accio_contract.h")
    assert (define(new, "ACCIO_RX_REC_LEN"), define(new, "ACCIO_RX_REC_SPORT")) == ("2", "0")
    assert (define(old, "ACCIO_RX_REC_LEN"), define(old, "ACCIO_RX_REC_SPORT")) == ("0", "2")
    assert (define(new, "ACCIO_TX_REC_LEN"), define(new, "ACCIO_TX_REC_DPORT")) == ("2", "0")
    assert re.search(r"ACCIO_EV_LINK_UP\s*=\s*2", open(new).read())
    py = open(changed / "generated" / "accio_contract.py").read()
    assert re.search(r"(?m)^RX_REC_LEN\s*=\s*2", py), "the Python twin follows"
    for v in ("rx_deliver.vec", "events.vec", "mmio_tx.vec"):
        assert open(changed / "vectors" / v).read() != open(os.path.join(VECTORS, v)).read(), v


def vecrun(tmp, gen):
    exe = str(tmp / ("vecrun-" + os.path.basename(os.path.dirname(gen + "/"))))
    subprocess.run([CC, "-O1", "-std=gnu11", "-I", MODEL, "-I", gen, "-o", exe,
                    os.path.join(MODEL, "tests", "vecrun.c"), os.path.join(MODEL, "accio_uncore.c")],
                   check=True)
    return exe


def test_the_model_follows_the_new_contract(changed):
    exe = vecrun(changed, str(changed / "generated"))
    vecs = sorted(str(p) for p in (changed / "vectors").glob("*.vec"))
    assert len(vecs) >= 8
    r = subprocess.run([exe, *vecs], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # the vectors carry the layout: the old ones fail on the new model
    old = sorted(os.path.join(VECTORS, v) for v in ("rx_deliver.vec", "mmio_tx.vec", "events.vec"))
    r = subprocess.run([exe, *old], capture_output=True, text=True)
    assert r.returncode != 0, "the committed vectors passed a model of another contract"


CODEC = r"""
#include <arpa/inet.h>
#include <stdio.h>
#include "row.h"

/* argv[1]: an RX header in hex; prints its fields, then a TX header. */
int main(int argc, char **argv)
{
	uint8_t h[ACCIO_RX_HDR] __attribute__((aligned(8))) = { 0 };
	uint8_t t[ACCIO_TX_HDR] __attribute__((aligned(8)));
	struct rec_rx rec;
	unsigned int i, b;

	for (i = 0; i < ACCIO_RX_HDR && sscanf(argv[1] + 2 * i, "%2x", &b) == 1; i++)
		h[i] = b;
	rec_rx_decode(h, &rec);
	printf("%u %u %u %llu\n", rec.len, rec.sport, rec.sip,
	       (unsigned long long)rec.tstamp);
	rec_tx_encode(t, 1234, htonl(0x0a000302), htons(4791));
	for (i = 0; i < ACCIO_TX_HDR; i++)
		printf("%02x", t[i]);
	printf("\n");
	return argc != 2;
}
"""


def test_libaccio_records_follow_the_new_contract(changed):
    """libaccio's record codec (src/row.h), built on the new headers, reads
    an RX header the new Python contract lays out and writes a TX header
    that it reads back."""
    inc = changed / "include" / "linux"
    inc.mkdir(parents=True)
    shutil.copy(changed / "generated" / "accio_contract.h", inc / "accio_contract.h")
    uapi = subprocess.run([os.path.join(LIBACCIO, "uapi-header.sh"),
                           os.path.join(ROOT, "kernel-patches")],
                          capture_output=True, text=True, check=True).stdout
    (inc / "accio.h").write_text(uapi)
    (changed / "codec.c").write_text(CODEC)
    exe = str(changed / "codec")
    subprocess.run([CC, "-O2", "-Wall", "-Werror", "-I", os.path.join(LIBACCIO, "src"),
                    "-I", os.path.join(LIBACCIO, "include"), "-I", str(changed / "include"),
                    "-o", exe, str(changed / "codec.c")], check=True)

    spec = importlib.util.spec_from_file_location(
        "accio_contract_copy", str(changed / "generated" / "accio_contract.py"))
    k = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(k)
    rx = bytearray(k.RX_HDR)
    rx[k.RX_REC_LEN:k.RX_REC_LEN + 2] = (1472).to_bytes(2, "little")
    rx[k.RX_REC_SPORT:k.RX_REC_SPORT + 2] = (7777).to_bytes(2, "little")
    rx[k.RX_REC_SIP:k.RX_REC_SIP + 4] = (0x0a000202).to_bytes(4, "little")
    rx[k.RX_REC_TSTAMP:k.RX_REC_TSTAMP + 8] = (123456789).to_bytes(8, "little")
    r = subprocess.run([exe, rx.hex()], capture_output=True, text=True, check=True)
    fields, tx = r.stdout.split("\n")[:2]
    assert fields.split() == ["1472", "7777", str(0x0a000202), "123456789"]
    tx = bytes.fromhex(tx)
    assert int.from_bytes(tx[k.TX_REC_LEN:k.TX_REC_LEN + 2], "little") == 1234
    assert int.from_bytes(tx[k.TX_REC_DPORT:k.TX_REC_DPORT + 2], "little") == 4791
    assert int.from_bytes(tx[k.TX_REC_DIP:k.TX_REC_DIP + 4], "little") == 0x0a000302
