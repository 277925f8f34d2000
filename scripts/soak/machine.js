// The soak's default size, from the machine it runs on: the gateway, its
// loadgens and the sampler all share these cores, so a fixed size that suits
// a large server (30,000 connections over 4 workers) overloads a 2-core one
// and the run measures the overload (stalled workers) instead of the gateway.
import os from 'node:os';
import { readSnapshot } from '../../lib/runtime/proc.js';
import { BYTES_PER_CONNECTION } from '../../lib/doctor/limits.js';
import { FD_HEADROOM } from '../../lib/runtime/capacity.js';

// Held connections per core: the old default's 30,000 over 4 workers was
// 7,500 a core with the loadgens elsewhere; they share the cores here, so
// two thirds of that.
export const CONNECTIONS_PER_CORE = 5000;
export const SSE_STREAMS_PER_CORE = 500;
// Both ends of every connection live on this machine, and the run keeps a
// quarter of the available memory for everything else.
const MEMORY_SHARE = 0.75;

/**
 * The rule: one worker per core; CONNECTIONS_PER_CORE a core, but no more
 * than both ends fit in MEMORY_SHARE of the available memory, nor more than
 * the workers' open-files limit holds (less headroom, with a fifth spare for
 * the reconnect storms' overlap); SSE streams SSE_STREAMS_PER_CORE a core.
 * @returns {{workers: number, connections: number, sseStreams: number, rule: string}}
 */
export function machineDefaults({ cores = os.availableParallelism(), snapshot = readSnapshot() } = {}) {
  const workers = Math.max(1, cores);
  const available = snapshot.memory?.available ?? os.freemem();
  const byMemory = Math.floor((available * MEMORY_SHARE) / (2 * BYTES_PER_CONNECTION));
  const byFiles = snapshot.openFiles ? Math.floor(workers * Math.max(0, snapshot.openFiles.hard - FD_HEADROOM) * 0.8) : Infinity;
  const connections = Math.max(100, Math.min(CONNECTIONS_PER_CORE * cores, byMemory, byFiles));
  const sseStreams = Math.min(SSE_STREAMS_PER_CORE * cores, Math.ceil(connections / 10));
  const rule = `${workers} workers, ${connections} connections for ${cores} cores (${CONNECTIONS_PER_CORE} a core; memory allows ${byMemory}, open files ${byFiles})`;
  return { workers, connections, sseStreams, rule };
}
