// Kernel memory that sockets cost, machine-wide: TCP buffer pages from
// /proc/net/sockstat, all slab from /proc/meminfo, and the slab caches an
// open TCP socket is made of from /proc/slabinfo (readable by root). These
// are shared with everything else on the machine, so a delta is only
// meaningful when the number of sockets moved as expected (`tcpInUse` tells),
// and loopback counts both ends. The total Slab also moves as TIME_WAIT
// buckets of earlier runs expire; the named caches do not.
import { readFileSync } from 'node:fs';

const PAGE = 4096;
// What one open TCP socket holds: the sock, its inode, file and dentry, its epoll entry.
const SOCKET_CACHES = new Set(['TCP', 'sock_inode_cache', 'filp', 'dentry', 'eventpoll_epi']);

/** @returns {{tcpInUse: number, tcpTimeWait: number, tcpMemBytes: number, slabBytes: number, socketCacheBytes: number}} */
export function sampleKernel() {
  const sockstat = readFileSync('/proc/net/sockstat', 'utf8');
  const tcp = /^TCP: inuse (\d+) orphan \d+ tw (\d+) alloc \d+ mem (\d+)/m.exec(sockstat);
  const slab = /^Slab:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
  return {
    tcpInUse: Number(tcp[1]),
    tcpTimeWait: Number(tcp[2]),
    tcpMemBytes: Number(tcp[3]) * PAGE,
    slabBytes: Number(slab[1]) * 1024,
    socketCacheBytes: socketCaches()
  };
}

/**
 * Kernel bytes per TCP socket that appeared between the two samples.
 * @returns {{sockets: number, tcpMemPerSocket: number, slabPerSocket: number, socketCachesPerSocket: number}}
 */
export function kernelPerSocket(before, after) {
  const sockets = after.tcpInUse - before.tcpInUse;
  const per = (key) => (sockets > 0 ? Math.round((after[key] - before[key]) / sockets) : 0);
  return { sockets, tcpMemPerSocket: per('tcpMemBytes'), slabPerSocket: per('slabBytes'), socketCachesPerSocket: per('socketCacheBytes') };
}

// "TCP  118  169  2368 ...": name, active objects, objects, object size.
function socketCaches() {
  let text;
  try {
    text = readFileSync('/proc/slabinfo', 'utf8');
  } catch {
    return 0;
  }
  let bytes = 0;
  for (const line of text.split('\n')) {
    const [name, active, , size] = line.split(/\s+/);
    if (SOCKET_CACHES.has(name)) bytes += Number(active) * Number(size);
  }
  return bytes;
}
