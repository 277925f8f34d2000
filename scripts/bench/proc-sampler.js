// CPU time and resident memory of a server's process tree (the primary and
// every worker it forked), read from /proc. CPU is what an operation costs the
// server whatever the wall clock did, so every "per operation" figure is a
// difference of two of these snapshots divided by a count.
import { readFileSync, readdirSync } from 'node:fs';

const TICK_US = 1e6 / 100; // USER_HZ: /proc reports CPU time in 1/100 s on Linux

/**
 * @param {number} root pid of the server's main process
 * @returns {{at: number, processes: Map<number, {cpuUs: number, rssBytes: number}>}}
 *   at in ms (performance.now); processes keyed by pid, the root first
 */
export function sampleTree(root) {
  const processes = new Map();
  for (const pid of treeOf(root)) {
    const figures = sampleProcess(pid);
    if (figures !== undefined) processes.set(pid, figures);
  }
  return { at: performance.now(), processes };
}

/** The root and its descendants, depth first. */
export function treeOf(root) {
  const out = [root];
  for (let i = 0; i < out.length; i++) out.push(...childrenOf(out[i]));
  return out;
}

/**
 * CPU used between two samples, split into the root (the primary) and the
 * rest (the workers). A process that appeared later counts from zero, one that
 * is gone is left out: workers do not come and go during a scenario.
 * @returns {{primaryUs: number, workersUs: number, totalUs: number, seconds: number}}
 */
export function cpuBetween(before, after, root) {
  let primaryUs = 0;
  let workersUs = 0;
  for (const [pid, now] of after.processes) {
    const used = now.cpuUs - (before.processes.get(pid)?.cpuUs ?? 0);
    if (pid === root) primaryUs += used;
    else workersUs += used;
  }
  return { primaryUs, workersUs, totalUs: primaryUs + workersUs, seconds: (after.at - before.at) / 1000 };
}

/** Resident bytes of the whole tree. */
export function rssOf(sample) {
  let sum = 0;
  for (const { rssBytes } of sample.processes.values()) sum += rssBytes;
  return sum;
}

/** @returns {number} the user and system CPU a process has used, µs (throws once it is gone) */
export function cpuUsOf(pid) {
  // The command name (field 2) may hold spaces; the fields after its ')' are fixed.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US; // utime, stime
}

function sampleProcess(pid) {
  try {
    const cpuUs = cpuUsOf(pid);
    const rss = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return { cpuUs, rssBytes: rss ? Number(rss[1]) * 1024 : 0 };
  } catch {
    return undefined; // exited between the listing and the read
  }
}

function childrenOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * A process's CPU to the nanosecond, summed over its threads (the scheduler's
 * own count, /proc/<pid>/task/<tid>/schedstat), and the voluntary context
 * switches of its main thread: each is one wait of the event loop that ended,
 * so their rate is how often the loop wakes. For figures too small for the
 * 10 ms steps of cpuUsOf.
 * @returns {{cpuNs: number, wakeups: number} | undefined} undefined once the process is gone
 */
export function schedOf(pid) {
  try {
    let cpuNs = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        cpuNs += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {} // a thread that exited between the listing and the read
    }
    const wakeups = Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8'))[1]);
    return { cpuNs, wakeups };
  } catch {
    return undefined;
  }
}
