// Source and target addresses. Unless --allow-remote is given (see plan.js),
// every address the load generator touches must be loopback: a flood tool
// should not be one typo away from hitting somebody else's host. Linux treats all of 127.0.0.0/8 as loopback, and each source address has its
// own ephemeral port range, so a range of sources multiplies the connections
// one target port can take.
import net from 'node:net';
import { UsageError } from '../config/cli.js';
import { readSnapshot } from '../runtime/proc.js';

/** Largest range accepted, so a typo cannot ask for millions of addresses. */
const MAX_RANGE = 65536;

export function isLoopback(host) {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost' || bare === '::1') return true;
  return net.isIPv4(bare) && bare.startsWith('127.');
}

/**
 * Expands `--local-address` values: single addresses and ranges such as
 * `127.0.0.1-127.0.0.32` (IPv4, inclusive), in the order given.
 * @param {string[]} values
 * @returns {string[]}
 * @throws {UsageError} for unparseable or empty ranges
 */
export function expandAddresses(values) {
  const out = [];
  for (const value of values) {
    const dash = value.indexOf('-');
    if (dash === -1) {
      out.push(checkSource(value, value));
      continue;
    }
    const first = ipv4ToInt(checkSource(value.slice(0, dash), value));
    const last = ipv4ToInt(checkSource(value.slice(dash + 1), value));
    if (first === undefined || last === undefined) throw new UsageError(`--local-address range ${value}: ranges are IPv4 only`);
    if (last < first) throw new UsageError(`--local-address range ${value} is empty (the end is below the start)`);
    if (last - first + 1 > MAX_RANGE) throw new UsageError(`--local-address range ${value} has more than ${MAX_RANGE} addresses`);
    for (let a = first; a <= last; a++) out.push(intToIpv4(a));
  }
  return out;
}

/**
 * The warning to print when some source address would need more ports than
 * the kernel's ephemeral range holds, or undefined.
 */
export function portRangeWarning(connections, addressCount, portsPerAddress) {
  const perAddress = Math.ceil(connections / Math.max(1, addressCount));
  if (perAddress <= portsPerAddress) return undefined;
  const needed = Math.ceil(connections / portsPerAddress);
  return (
    `${perAddress} connections per source address exceed the ${portsPerAddress} ephemeral ports ` +
    `(/proc/sys/net/ipv4/ip_local_port_range); expect EADDRNOTAVAIL. ` +
    `Give at least ${needed} addresses, e.g. --local-address 127.0.0.1-127.0.0.${Math.min(254, needed)}`
  );
}

/** Ephemeral ports one source address has (net.ipv4.ip_local_port_range). */
export function ephemeralPortCount(snapshot = readSnapshot()) {
  const [low, high] = snapshot.sysctl('net.ipv4.ip_local_port_range') ?? [];
  return high >= low ? high - low + 1 : Infinity;
}

/** net.ipv4.ip_local_port_range as {low, high}; Linux's default when unreadable. */
export function ephemeralPorts(snapshot = readSnapshot()) {
  const [low, high] = snapshot.sysctl('net.ipv4.ip_local_port_range') ?? [];
  return low > 0 && high >= low ? { low, high } : { low: 32768, high: 60999 };
}

function checkSource(address, value) {
  if (!net.isIP(address)) throw new UsageError(`--local-address ${value}: ${address} is not an IP address`);
  return address;
}

function ipv4ToInt(address) {
  if (!net.isIPv4(address)) return undefined;
  return address.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
}

function intToIpv4(n) {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}
