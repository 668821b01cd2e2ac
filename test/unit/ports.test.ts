/**
 * Parsing /proc/net/tcp and /proc/net/tcp6, on text captured from this kernel (6.18) with servers
 * listening on 127.0.0.1:5173, 0.0.0.0:5176, :::5174 and ::1:5175 and one connection to 5173, plus
 * hand-encoded lines for addresses no capture had.
 */
import { describe, expect, it } from 'vitest';
import { decodeSocketAddress, parseProcNetTcp, PORT_CHECK_FD_BUDGET, PortProbe, uniquePorts } from '../../supervisor/platform/ports.js';
import { formatPorts } from '../../src/reports/stats-format.js';

const TCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode                                                     
   0: 0100007F:1435 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 184189 1 000000009afaa09e 100 0 0 10 0                    
   1: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 119 1 00000000648cdb94 100 0 0 10 0                       
   2: 00000000:1438 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 184192 1 00000000514d8dd7 100 0 0 10 0                    
   3: 0100007F:9336 0100007F:1435 01 00000000:00000000 00:00000000 00000000     0        0 186656 2 00000000f58b38d6 20 0 0 10 -1                    
   4: 0100007F:1435 0100007F:9336 01 00000000:00000000 00:00000000 00000000     0        0 186657 1 0000000083207e49 20 0 0 10 -1                    
`;

const TCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1437 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 184191 1 000000005d3a4244 100 0 0 10 0
   1: 00000000000000000000000000000000:1436 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 184190 1 00000000b1bb0f9f 100 0 0 10 0
`;

describe('parseProcNetTcp', () => {
  it('reads the LISTEN lines of tcp: address, port (hex, big-endian) and inode', () => {
    expect(parseProcNetTcp(TCP, 4)).toEqual([
      { port: 5173, address: '127.0.0.1', family: 4, inode: 184189 },
      { port: 2024, address: '0.0.0.0', family: 4, inode: 119 },
      { port: 5176, address: '0.0.0.0', family: 4, inode: 184192 },
    ]);
  });

  it('ignores lines in any other state, even for a listening port (the ESTABLISHED 5173 here)', () => {
    const entries = parseProcNetTcp(TCP, 4);
    expect(entries.map((entry) => entry.inode)).not.toContain(186656);
    expect(entries.map((entry) => entry.inode)).not.toContain(186657);
    // The same established lines, marked LISTEN, would be read: the state is what excludes them.
    const relabelled = TCP.split('\n').slice(4, 6).join('\n').replace(/ 01 /g, ' 0A ');
    expect(parseProcNetTcp(relabelled, 4).map((entry) => entry.inode)).toEqual([186656, 186657]);
  });

  it('reads tcp6: :: and ::1, each 32-bit word little-endian', () => {
    expect(parseProcNetTcp(TCP6, 6)).toEqual([
      { port: 5175, address: '::1', family: 6, inode: 184191 },
      { port: 5174, address: '::', family: 6, inode: 184190 },
    ]);
  });

  it('skips the header, blank lines, truncated and malformed lines', () => {
    const junk = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '',
      '   0: 0100007F:1435 00000000:0000 0A',
      '   1: 0100007Z:1435 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0',
      '   2: 0100007F:143 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0',
      '   3: 0100007F:1435 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 x 1 0 100 0 0 10 0',
    ].join('\n');
    expect(parseProcNetTcp(junk, 4)).toEqual([]);
    // An IPv4 line read as IPv6 (or the reverse) does not parse either.
    expect(parseProcNetTcp(TCP, 6)).toEqual([]);
    expect(parseProcNetTcp(TCP6, 4)).toEqual([]);
  });
});

describe('decodeSocketAddress', () => {
  it('decodes IPv4 words printed in little-endian order', () => {
    expect(decodeSocketAddress('0100007F:1435', 4)).toEqual({ address: '127.0.0.1', port: 5173 });
    expect(decodeSocketAddress('00000000:0050', 4)).toEqual({ address: '0.0.0.0', port: 80 });
    // 192.168.1.20 is C0 A8 01 14 in memory, the word 0x1401A8C0.
    expect(decodeSocketAddress('1401A8C0:FFFF', 4)).toEqual({ address: '192.168.1.20', port: 65535 });
  });

  it('decodes IPv6 to RFC 5952 text', () => {
    // 2001:db8::1 is 20 01 0d b8 ... 00 01 in memory: words 0xB80D0120, 0, 0, 0x01000000.
    expect(decodeSocketAddress('B80D0120000000000000000001000000:1F90', 6)).toEqual({ address: '2001:db8::1', port: 8080 });
    // IPv4-mapped ::ffff:127.0.0.1: the third word is 00 00 ff ff (0xFFFF0000).
    expect(decodeSocketAddress('0000000000000000FFFF00000100007F:1435', 6)).toEqual({ address: '::ffff:127.0.0.1', port: 5173 });
    // fe80::1:0:3:4: the run of three zeros is compressed, the lone zero is not.
    expect(decodeSocketAddress('000080FE000000000000010004000300:0016', 6)).toEqual({ address: 'fe80::1:0:3:4', port: 22 });
    // 1:0:0:2:0:0:0:3: the longer run is the one compressed.
    expect(decodeSocketAddress('00000100020000000000000003000000:0001', 6)).toEqual({ address: '1:0:0:2::3', port: 1 });
    // A single zero group is not compressed.
    expect(decodeSocketAddress('00000100030002000500040007000600:0001', 6)).toEqual({ address: '1:0:2:3:4:5:6:7', port: 1 });
  });
});

describe('port lists', () => {
  it('one port listened on as 0.0.0.0 and :: is two entries but shows once', () => {
    const entries = [
      { port: 5173, address: '0.0.0.0', family: 4 as const },
      { port: 5173, address: '::', family: 6 as const },
      { port: 24678, address: '::1', family: 6 as const },
    ];
    expect(uniquePorts(entries)).toEqual([5173, 24678]);
    expect(formatPorts(entries)).toBe(':5173, :24678');
    expect(formatPorts([])).toBe('');
  });

  it('caps a long list', () => {
    expect(formatPorts([1, 2, 3, 4, 5], 3)).toBe(':1, :2, :3, +2 more');
  });
});

describe('PortProbe (a wait with until_port)', () => {
  it('looks at most PORT_CHECK_FD_BUDGET descriptors per check and resumes where it stopped', async () => {
    const { default: fs } = await import('node:fs');
    const { default: net } = await import('node:net');
    // Enough descriptors before the listening socket that one check cannot reach it.
    const fds = Array.from({ length: 2 * PORT_CHECK_FD_BUDGET + 10 }, () => fs.openSync('/dev/null', 'r'));
    const server = net.createServer();
    try {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as net.AddressInfo;
      // Where the listening socket comes in the fd list the probe walks (names, as readdir gives them).
      const socketFd = (server as unknown as { _handle: { fd: number } })._handle.fd;
      const position = fs.readdirSync('/proc/self/fd').indexOf(String(socketFd));
      expect(position).toBeGreaterThanOrEqual(PORT_CHECK_FD_BUDGET);
      const probe = new PortProbe(port);
      const checks: boolean[] = [];
      for (let i = 0; i < 10 && !checks.includes(true); i++) checks.push(probe.check(process.pid, () => [process.pid]));
      // Bounded: each check stops at its budget and the next resumes there, so the socket is found
      // by exactly the check whose slice of the list holds it.
      expect(checks).toEqual([...Array<boolean>(Math.floor(position / PORT_CHECK_FD_BUDGET)).fill(false), true]);
      // Negative control: a port nothing of ours listens on is never found.
      const other = new PortProbe(port === 65_535 ? 1 : port + 1);
      expect([1, 2, 3, 4].map(() => other.check(process.pid, () => [process.pid]))).toEqual([false, false, false, false]);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      for (const fd of fds) fs.closeSync(fd);
    }
  });
});
