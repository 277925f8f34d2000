// Which worker gets a new connection.
//
// ip:   sticky by client IP, like sticky-session, but by rendezvous hashing
//       over the live workers: each (IP, worker) pair gets a score and the
//       highest wins. When a worker dies only its own IPs move, and they move
//       back when it returns; every other IP keeps its worker.
// even: least connections, whatever the source address, for a load balancer
//       in front without PROXY protocol (all connections from a few IPs).
//       A worker's load is the open sockets it last reported plus those
//       handed to it that it had not yet received then; ties go round robin.
//
// Either way a worker whose load has reached `capacity` is passed over while
// another has room: under `ip` the IP goes to its next-best worker, the same
// one every time. When every worker is full the usual pick stands and that
// worker answers 503.

/**
 * @typedef {object} Slot a worker position, see ./supervisor.js
 * @property {number} number 1..N, stable across restarts
 * @property {number} sockets open sockets the worker last reported
 * @property {number} received sockets the worker had received by that report
 * @property {number} handed sockets handed to the worker in all
 */

export class Balancer {
  /**
   * @param {'ip'|'even'} mode
   * @param {number} [capacity] connections a worker can hold
   */
  constructor(mode, capacity = Infinity) {
    this.byIp = mode === 'ip';
    this.capacity = capacity;
    this.turn = 0;
  }

  /**
   * @param {string} ip the client's address
   * @param {Slot[]} slots workers able to take a connection
   * @returns {Slot|undefined}
   */
  pick(ip, slots) {
    if (!this.byIp) return this.leastLoaded(slots);
    const key = hashString(ip);
    return pickByScore(key, slots, this.capacity) ?? pickByScore(key, slots, Infinity);
  }

  leastLoaded(slots) {
    const n = slots.length;
    let best;
    for (let i = 0; i < n; i++) {
      const slot = slots[(this.turn + i) % n];
      if (best === undefined || load(slot) < load(best)) best = slot;
    }
    this.turn = (this.turn + 1) % Math.max(1, n);
    return best;
  }
}

// Rendezvous hashing: the highest (IP, worker) score among workers with room.
function pickByScore(key, slots, capacity) {
  let best;
  let bestScore = -1;
  for (const slot of slots) {
    if (load(slot) >= capacity) continue;
    const score = mix(key ^ Math.imul(slot.number, 0x9e3779b1));
    if (score > bestScore) {
      best = slot;
      bestScore = score;
    }
  }
  return best;
}

function load(slot) {
  return slot.sockets + slot.handed - slot.received;
}

// FNV-1a over the address text: '10.0.0.1' and '::1' alike, no parsing needed.
function hashString(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

// murmur3's finaliser: spreads every input bit over the whole score.
function mix(h) {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
