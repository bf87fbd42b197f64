// node's dgram (libuv's event loop) against a UDP echo: every datagram's
// echo is matched to what was sent. Usage: node udp_dgram.js HOST PORT N
'use strict';
const dgram = require('dgram');
const [host, port, n] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const s = dgram.createSocket('udp4');
const want = new Set();
let bad = 0;
const give_up = setTimeout(end, 20000);
function end() {
  clearTimeout(give_up);
  console.log(`node_echoed=${n - want.size} node_bad=${bad}`);
  s.close();
}
s.on('message', (m) => {
  if (want.delete(m.toString())) {
    if (want.size === 0) end();
  } else {
    bad++;
  }
});
s.connect(port, host, () => {
  for (let i = 0; i < n; i++) {
    const m = `node-${i}-` + 'j'.repeat(i % 300);
    want.add(m);
    s.send(m);
  }
});
