// Kernel memory that sockets cost, machine-wide: TCP buffer pages from
// /proc/net/sockstat, and all slab (socket structs, inodes, epoll entries,
// TIME_WAIT buckets) from /proc/meminfo. Both are shared with everything else
// on the machine, so a delta is only meaningful when the number of sockets
// moved as expected (`tcpInUse` tells), and loopback counts both ends.
import { readFileSync } from 'node:fs';

const PAGE = 4096;

/** @returns {{tcpInUse: number, tcpTimeWait: number, tcpMemBytes: number, slabBytes: number}} */
export function sampleKernel() {
  const sockstat = readFileSync('/proc/net/sockstat', 'utf8');
  const tcp = /^TCP: inuse (\d+) orphan \d+ tw (\d+) alloc \d+ mem (\d+)/m.exec(sockstat);
  const slab = /^Slab:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
  return {
    tcpInUse: Number(tcp[1]),
    tcpTimeWait: Number(tcp[2]),
    tcpMemBytes: Number(tcp[3]) * PAGE,
    slabBytes: Number(slab[1]) * 1024
  };
}

/**
 * Kernel bytes per TCP socket that appeared between the two samples.
 * @returns {{sockets: number, tcpMemPerSocket: number, slabPerSocket: number}}
 */
export function kernelPerSocket(before, after) {
  const sockets = after.tcpInUse - before.tcpInUse;
  const per = (key) => (sockets > 0 ? Math.round((after[key] - before[key]) / sockets) : 0);
  return { sockets, tcpMemPerSocket: per('tcpMemBytes'), slabPerSocket: per('slabBytes') };
}
