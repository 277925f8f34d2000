// How many connections one worker may hold. The primary balances on it, the
// worker's admission gate enforces it and the doctor checks the machine
// against the same headroom, so the three never disagree.
import { readSnapshot } from './proc.js';

/**
 * Descriptors a Node process holds besides its clients: stdio, epoll and
 * eventfds, IPC channels to the primary, log files, and on the primary the
 * sockets in flight between accept and the hand-over to a worker.
 */
export const FD_HEADROOM = 1024;

/**
 * Connections one worker may hold: --max-connections, or when that is 0 what
 * its open-files limit allows (the hard limit, to which Node raises the soft
 * one at start-up, less the headroom), so a worker answers 503 instead of
 * failing with EMFILE.
 * @param {{maxConnections: number}} config
 * @param {{root?: string}} [options] root: the folder holding proc/ ('/')
 */
export function workerCapacity(config, { root = '/' } = {}) {
  if (config.maxConnections > 0) return config.maxConnections;
  const hard = readSnapshot(root).openFiles?.hard;
  return hard === undefined ? Infinity : Math.max(1, hard - FD_HEADROOM);
}
