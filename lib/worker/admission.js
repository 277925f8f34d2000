// The one gate every way in passes, whatever the transport: the WebSocket
// upgrade (./upgrade.js) and GET /sse (./sse.js) call it alike, so a limit
// means the same thing on both. In order:
//   1. check(req), before anything is answered: draining, capacity (every
//      transport counted together against --max-connections), the Origin
//      allow-list, the per-IP cap;
//   2. admitted(conn, ip) once the connection is open, left(conn) once it
//      closes: the counts behind 1;
//   3. the credential, asynchronous: verify(token) (jose, ./auth.js), then
//      admitUser(user), --max-conns-per-user counted across the cluster by
//      the primary. A WebSocket presents its token in its first frame, after
//      the 101; a stream in its URL, before its response starts.
// Any further step (an application's connect hook) belongs here, last.
import { ErrorCode } from '../protocol.js';
import { workerCapacity } from '../doctor/limits.js';
import { AuthError, createVerifier } from './auth.js';
import { clientIp } from './client-ip.js';
import { IpCounts } from './ip-counts.js';
import { WorkerUsers } from './users.js';
import { metrics } from './metrics.js';

/** Why a connection is not let in: the HTTP status, a reason (metrics label and error code) and a message. */
export class Refusal {
  constructor(status, reason, message) {
    this.status = status;
    this.reason = reason;
    this.message = message;
  }
}

const DRAINING = new Refusal(503, 'draining', 'this worker is draining: reconnect');
const OVER_CAPACITY = new Refusal(503, 'over_capacity', 'this worker is full');
const ORIGIN = new Refusal(403, 'origin', 'this Origin is not allowed');
const IP_CAP = new Refusal(429, 'ip_cap', 'too many connections from this address');

export class Admission {
  /**
   * @param {object} options
   * @param {object} options.config resolved gateway configuration
   * @param {import('./relay.js').WorkerRelay} options.relay the primary counts users
   * @param {() => boolean} options.draining
   */
  constructor({ config, relay, draining }) {
    this.config = config;
    this.draining = draining;
    this.capacity = workerCapacity(config);
    this.origins = config.allowedOrigins && new Set(config.allowedOrigins);
    this.perIp = new IpCounts(config.maxConnsPerIp);
    this.held = 0; // open connections, every transport
    this.jwt = config.auth === 'jwt';
    if (this.jwt) {
      this.verify = createVerifier(config);
      const disconnected = (n) => metrics.disconnects.inc({ reason: 'api' }, n);
      this.users = new WorkerUsers({ relay, cap: config.maxConnsPerUser, disconnected });
    }
  }

  /** @returns {Refusal|undefined} why the request may not open a connection, if it may not */
  check(req) {
    if (this.draining()) return DRAINING;
    if (this.held >= this.capacity) return OVER_CAPACITY;
    if (this.origins && !this.origins.has(req.headers.origin)) return ORIGIN;
    if (!this.perIp.allows(clientIp(req, this.config.trustForwarded))) return IP_CAP;
    return undefined;
  }

  /** A connection let in by check() is open: counted until left(). */
  admitted(conn, ip) {
    this.held++;
    this.perIp.add(conn, ip);
  }

  left(conn) {
    this.held--;
    this.perIp.remove(conn);
  }

  /**
   * Counts one more connection of `user` across the cluster.
   * @returns {Promise<AuthError|undefined>} the refusal past --max-conns-per-user
   */
  async admitUser(user) {
    if (await this.users.admit(user)) return undefined;
    return new AuthError(ErrorCode.FORBIDDEN, 'forbidden', `at most ${this.config.maxConnsPerUser} connections per user`);
  }
}
