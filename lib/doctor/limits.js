// The machine limits that stop a gateway from holding its connections, each
// checked against a target of N connections over W workers. The same checks
// serve `gateway doctor` (./cli.js) and the warnings the primary logs at start
// (capacityWarnings below), so the two never disagree.
import { readSnapshot, sysctlFile } from '../runtime/proc.js';
import { FD_HEADROOM, workerCapacity } from '../runtime/capacity.js';
import { Status } from './status.js';
import { count, bytes, show } from './format.js';

/**
 * Memory one idle connection costs: ~8 KiB of user RSS across the gateway's
 * processes (the ws socket and its stream state, the connection's state and
 * subscription) plus ~5 KiB of kernel slab (TCP 2.3 KiB, sock inode, file,
 * dentry, epoll entry). Measured by `npm run bench` (idle scenarios): 6.8–7.1
 * KiB user at 60k connections over 4 workers, 5.0 KiB slab per socket.
 */
export const BYTES_PER_CONNECTION = (8 + 5) * 1024;

/**
 * Memory of its own that one Node process holds before its first client (V8
 * heap, compiled code, malloc arenas, libuv): 15–17 MB of private dirty pages
 * per worker, 19–20 MB for the primary (/proc/<pid>/smaps_rollup, 4 workers
 * idle).
 */
export const BYTES_PER_PROCESS = 20 * 1024 ** 2;

/**
 * Node's executable, counted once: its code and data pages are shared by every
 * process of the machine (42–47 MB of shared clean pages in each one's RSS,
 * which is why `ps` shows ~63 MB per idle worker).
 */
export const BYTES_NODE_SHARED = 48 * 1024 ** 2;

/** Bytes in the pages net.ipv4.tcp_mem counts. */
const PAGE_SIZE = 4096;

/**
 * Connections per worker `gateway doctor` checks against when no
 * --connections is given: a conservative reading of what the gateway is
 * built for (600k idle connections on 4 cores, ~150k per Node process).
 */
export const UNCAPPED_PER_WORKER = 100_000;

/**
 * @typedef {object} Target
 * @property {number} connections in all
 * @property {number} workers
 * @property {number} backlog the listen backlog the gateway asks for
 *
 * @typedef {object} Result
 * @property {string} id
 * @property {string} label
 * @property {string} source the /proc file read
 * @property {string} [sysctl] the key, when a sysctl fixes it (scripts/tune.sh)
 * @property {string} status one of Status
 * @property {number|number[]|string} [current]
 * @property {number} [needed]
 * @property {string} [neededFor] what the need comes from, when not the connections
 * @property {string} [unit] 'bytes' or 'pages'
 * @property {string} detail what the current value means for the target
 * @property {string} [fix] the command or setting that lifts it
 */

/**
 * Checks every limit of a machine snapshot (./proc.js) against a target.
 * @param {ReturnType<typeof readSnapshot>} snapshot
 * @param {Target} target
 * @returns {Result[]} one per limit, in the order a growing gateway hits them
 */
export function checkLimits(snapshot, target) {
  return CHECKS.map(({ id, label, source, sysctl, unit, read, evaluate, missing }) => {
    const current = read(snapshot);
    const base = { id, label, source: `/proc/${source}`, sysctl, unit, current };
    if (current === undefined) {
      return { ...base, status: Status.UNKNOWN, detail: `cannot read /proc/${source}`, ...missing?.(target) };
    }
    return { ...base, ...evaluate(current, target, snapshot) };
  });
}

/**
 * The warnings the gateway logs at start: one sentence, with the command
 * that fixes it, per limit that would not hold the configured capacity,
 * --max-connections × --workers. Without --max-connections there is no
 * target to check (see capacityNote).
 * @param {{workers: number, maxConnections: number, backlog: number}} config as resolveConfig() returns it
 * @param {{root?: string}} [options] root: the folder holding proc/ ('/')
 * @returns {string[]} empty when everything fits
 */
export function capacityWarnings(config, { root = '/' } = {}) {
  const { workers, maxConnections, backlog } = config;
  if (maxConnections === 0) return [];
  const basis = `--max-connections ${maxConnections} × ${workers} workers`;
  return checkLimits(readSnapshot(root), { connections: maxConnections * workers, workers, backlog, balance: config.balance })
    .filter((r) => r.status === Status.WARN || r.status === Status.FAIL)
    .map((r) => `${r.label} is ${show(r.current, r.unit)}, ${show(r.needed, r.unit)} needed for ${r.neededFor ?? basis}: ${r.detail}. Fix: ${r.fix}`);
}

/**
 * What the gateway logs at start when --max-connections is 0: how many
 * connections the open-files limit lets each worker hold, and how to have
 * the machine checked against a target.
 * @returns {string|undefined} undefined when --max-connections is set
 */
export function capacityNote(config, { root = '/' } = {}) {
  if (config.maxConnections !== 0) return undefined;
  const perWorker = workerCapacity(config, { root });
  const each = Number.isFinite(perWorker) ? `about ${count(perWorker)} connections (its open-files limit less ${FD_HEADROOM})` : 'as many connections as memory allows';
  return `each worker takes ${each}; with --max-connections the limits of this machine are checked against it at start (gateway doctor --connections N checks any target)`;
}

const CHECKS = [
  {
    id: 'open-files',
    label: 'open files per process',
    source: 'self/limits',
    // Node raises its soft limit to the hard one at start-up, so the hard
    // limit is what every gateway process gets.
    read: (s) => s.openFiles?.hard,
    evaluate(current, target) {
      const needed = filesPerProcess(target);
      const perWorker = Math.max(0, current - FD_HEADROOM);
      return {
        needed,
        status: atLeast(current, needed),
        detail: `each worker can hold about ${count(perWorker)} connections, ${count(perWorker * target.workers)} in all`,
        fix: `LimitNOFILE=${needed} in the systemd unit (sysctl/ws-gateway.service), or \`ulimit -Hn ${needed} && ulimit -n ${needed}\` as root in the shell that starts the gateway`
      };
    }
  },
  sysctlCheck('fs.nr_open', (current, target) => {
    const needed = filesPerProcess(target);
    return {
      needed,
      status: atLeast(current, needed),
      detail: `no process can raise its open-files limit above ${count(current)}`,
      fix: `sudo sysctl -w fs.nr_open=${needed}`
    };
  }),
  sysctlCheck('fs.file-max', (current, { connections, workers }, snapshot) => {
    const inUse = snapshot.sysctl('fs.file-nr')?.[0] ?? 0;
    const reserved = inUse + (workers + 1) * FD_HEADROOM;
    const needed = connections + reserved;
    return {
      needed,
      status: atLeast(current, needed),
      detail: `the whole system can open ${count(current)} files and has ${count(inUse)} open: room for about ${count(Math.max(0, current - reserved))} connections`,
      fix: `sudo sysctl -w fs.file-max=${needed}`
    };
  }),
  sysctlCheck('net.core.somaxconn', (current, target) => ({
    ...backlogNeeded(target),
    status: atLeast(current, backlogNeeded(target).needed, Status.WARN),
    detail: `the kernel silently caps the listen backlog at ${count(current)}; in a burst, connections beyond it wait a second or more for a SYN retry`,
    fix: `sudo sysctl -w net.core.somaxconn=${backlogNeeded(target).needed}`
  })),
  sysctlCheck('net.ipv4.tcp_max_syn_backlog', (current, target) => ({
    ...backlogNeeded(target),
    status: atLeast(current, backlogNeeded(target).needed, Status.WARN),
    detail: `about ${count(current)} handshakes can wait for their last ACK; in a reconnect storm the rest get SYN cookies or are dropped`,
    fix: `sudo sysctl -w net.ipv4.tcp_max_syn_backlog=${backlogNeeded(target).needed}`
  })),
  sysctlCheck(
    'net.ipv4.ip_local_port_range',
    ([low, high], { connections }) => {
      const ports = high - low + 1;
      const addresses = Math.ceil(connections / ports);
      return {
        status: Status.INFO,
        detail: `${count(ports)} ephemeral ports per source address. A server only accepts, so it uses none; a load generator opening ${count(connections)} connections to one address and port needs ${count(addresses)} source address${addresses === 1 ? '' : 'es'} (--local-address)`,
        fix: 'on the load generator: sudo sysctl -w net.ipv4.ip_local_port_range="1024 65535"'
      };
    },
    allValues
  ),
  {
    ...sysctlCheck('net.netfilter.nf_conntrack_max', (current, { connections }, snapshot) => {
      const inUse = snapshot.sysctl('net.netfilter.nf_conntrack_count')?.[0] ?? 0;
      const needed = connections + inUse;
      return {
        needed,
        status: atLeast(current, needed),
        detail: `a full table drops new connections' packets ("nf_conntrack: table full, dropping packet" in dmesg); ${count(inUse)} entries in use leave room for ${count(Math.max(0, current - inUse))}`,
        fix: `sudo sysctl -w net.netfilter.nf_conntrack_max=${needed}`
      };
    }),
    missing: () => ({ status: Status.OK, current: 'not loaded', detail: 'nf_conntrack is not loaded: there is no table to fill' })
  },
  {
    ...sysctlCheck(
      'net.ipv4.tcp_mem',
      ([min, pressure, max], { connections }) => {
        // A socket with queued data holds at least one page, and a broadcast
        // queues a frame on every socket at once.
        const needed = connections;
        return {
          needed,
          status: max < needed ? Status.FAIL : atLeast(pressure, needed, Status.WARN),
          detail: `TCP buffers need about one page per socket when a broadcast reaches all ${count(connections)} at once (${bytes(needed * PAGE_SIZE)}); above ${count(pressure)} pages TCP trims buffers, above ${count(max)} sockets stall and new connections fail`,
          fix: `sudo sysctl -w net.ipv4.tcp_mem="${min} ${Math.max(pressure, needed)} ${Math.max(max, Math.ceil(needed * 1.5))}"`
        };
      },
      allValues
    ),
    unit: 'pages'
  },
  {
    ...sysctlCheck('net.ipv4.tcp_migrate_req', (current, { balance }) => {
      if (balance !== 'reuseport') return { status: Status.INFO, detail: 'read only under --balance reuseport' };
      return {
        needed: 1,
        neededFor: '--balance reuseport',
        status: atLeast(current, 1, Status.WARN),
        detail: 'a worker that stops listening (rolling restart, drain) resets the connections still queued on its listener; at 1 the kernel moves them to the other workers',
        fix: 'sudo sysctl -w net.ipv4.tcp_migrate_req=1'
      };
    }),
    missing: ({ balance }) =>
      balance === 'reuseport'
        ? { status: Status.WARN, neededFor: '--balance reuseport', detail: 'this kernel has no tcp_migrate_req (Linux 5.14+): a rolling restart resets the connections queued on a closing listener', fix: 'a Linux 5.14+ kernel' }
        : { status: Status.INFO, current: 'not on this kernel', detail: 'read only under --balance reuseport' }
  },
  {
    id: 'memory',
    label: 'memory available',
    source: 'meminfo',
    unit: 'bytes',
    read: (s) => s.memory?.available,
    evaluate(current, { connections, workers }, snapshot) {
      const reserved = BYTES_NODE_SHARED + (workers + 1) * BYTES_PER_PROCESS;
      const needed = connections * BYTES_PER_CONNECTION + reserved;
      const total = snapshot.memory.total;
      return {
        needed,
        status: needed > total ? Status.FAIL : atLeast(current, needed, Status.WARN),
        detail: `at ~${BYTES_PER_CONNECTION / 1024} KiB per connection, ${bytes(BYTES_PER_PROCESS)} per process and ${bytes(BYTES_NODE_SHARED)} of Node's code shared by all, ${bytes(total)} of RAM (${bytes(current)} available) holds about ${count(Math.max(0, Math.floor((current - reserved) / BYTES_PER_CONNECTION)))} connections`,
        fix: `an instance with more than ${bytes(needed)} of RAM free for the gateway, or fewer connections per instance (--max-connections)`
      };
    }
  }
];

/** A check of the sysctl `key`; `pick` takes the value compared from the file's numbers. */
function sysctlCheck(key, evaluate, pick = (values) => values[0]) {
  return {
    id: key,
    label: key,
    source: sysctlFile(key),
    sysctl: key,
    read: (s) => {
      const values = s.sysctl(key);
      return values && pick(values);
    },
    evaluate
  };
}

function allValues(values) {
  return values;
}

/**
 * The accept queue the target needs: --backlog, or all its connections
 * arriving at once when they are fewer (a longer queue is never filled).
 */
function backlogNeeded({ backlog, connections }) {
  if (connections < backlog) return { needed: connections, neededFor: `all ${count(connections)} connections arriving at once` };
  return { needed: backlog, neededFor: `--backlog ${backlog}` };
}

function filesPerProcess({ connections, workers }) {
  return Math.ceil(connections / workers) + FD_HEADROOM;
}

function atLeast(current, needed, short = Status.FAIL) {
  return current >= needed ? Status.OK : short;
}
