// The one gate every way in passes, whatever the transport: the WebSocket
// upgrade (../worker/upgrade.js) and GET /sse (../native/sse.js) call it alike, so a limit
// means the same thing on both. In order:
//   1. check(req), before anything is answered: draining, capacity (every
//      transport counted together against --max-connections), the Origin
//      allow-list, the per-IP cap counted here (--balance ip: one IP, one
//      worker);
//   2. reserveIp(ip): the per-IP cap counted by the primary, where one IP's
//      connections land on several workers (reuseport, even): the
//      connection waits for the answer;
//   3. admitted(conn, ip) once the connection is open, left(conn) once it
//      closes: the counts behind 1 and 2;
//   4. the credential, asynchronous: verify(token) (jose, ./auth.js) under
//      --auth jwt, or identify(request) under --auth hook (the application's
//      connect hook, ./hooks.js: the same identity a token's claims give),
//      then the user counted across the cluster (./sessions.js). A WebSocket
//      presents its token in its first frame, after the 101, and is
//      identified by the hook right after the 101, before its welcome; a
//      stream presents its token in its URL and is identified before its
//      response starts.
// Each refusal is a GatewayError (../errors.js) whose code and status the
// way in answers with.
import { randomBytes } from 'node:crypto';
import { ErrorCode, GatewayError } from '../core/errors.js';
import { Op } from '../core/ipc.js';
import { ipCapInPrimary } from '../config/options.js';
import { workerCapacity } from '../runtime/capacity.js';
import { createVerifier } from './auth.js';
import { Hooks, hooksConfigured } from './hooks.js';
import { clientIp } from './client-ip.js';
import { IpCounts } from './ip-counts.js';
import { WorkerUsers } from './users.js';
import { metrics } from './metrics.js';
import { kSession } from '../core/symbols.js';

// Shared: a refusal at the door costs no allocation, whatever the flood.
const REFUSALS = {
  [ErrorCode.DRAINING]: 'this worker is draining: reconnect',
  [ErrorCode.OVER_CAPACITY]: 'this worker is full',
  [ErrorCode.ORIGIN]: 'this Origin is not allowed',
  [ErrorCode.IP_CAP]: 'too many connections from this address'
};

/** A refusal at the door, made fresh for each connection it refuses. */
function refusal(code) {
  return new GatewayError(code, REFUSALS[code]);
}

// The door when nothing else is said: no limit but capacity, any Origin, no credential.
const DEFAULTS = {
  capacity: Infinity,
  allowedOrigins: undefined,
  maxConnsPerIp: 0,
  ipsInPrimary: false,
  maxConnsPerUser: 0,
  trustForwarded: false,
  auth: 'none',
  verify: undefined,
  hooks: undefined
};

export class Admission {
  /**
   * @param {object} options
   * @param {import('../worker/relay.js').WorkerRelay} options.relay the primary counts users and, with ipsInPrimary, IPs
   * @param {() => boolean} options.draining
   * @param {number} options.worker this worker's number, in the connection ids
   * @param {number} [options.capacity=Infinity] connections the worker holds, every transport together (lib/runtime/capacity.js)
   * @param {string[]} [options.allowedOrigins] --allowed-origins: the Origins let in; any without a list
   * @param {number} [options.maxConnsPerIp=0] --max-conns-per-ip (0: none)
   * @param {boolean} [options.ipsInPrimary=false] the primary counts each IP's connections, since
   *   one IP's land on several workers (lib/config/options.js ipCapInPrimary); otherwise this worker does
   * @param {number} [options.maxConnsPerUser=0] --max-conns-per-user (0: none)
   * @param {boolean} [options.trustForwarded=false] --trust-forwarded: the client's IP is X-Forwarded-For's last
   * @param {'none'|'jwt'|'hook'} [options.auth='none'] --auth
   * @param {(token: *) => Promise<import('../core/identity.js').Identity>} [options.verify] under
   *   --auth jwt: a token's check (./auth.js createVerifier)
   * @param {Hooks} [options.hooks] the application's hooks, when any is configured
   */
  constructor(options) {
    const { relay, draining, worker, capacity, allowedOrigins, maxConnsPerIp, ipsInPrimary, maxConnsPerUser, trustForwarded, auth, verify, hooks } = {
      ...DEFAULTS,
      ...options
    };
    this.draining = draining;
    this.capacity = capacity;
    this.origins = allowedOrigins && new Set(allowedOrigins);
    this.trustForwarded = trustForwarded;
    this.relay = relay;
    this.ipsInPrimary = ipsInPrimary;
    this.perIp = new IpCounts(ipsInPrimary ? 0 : maxConnsPerIp);
    this.maxConnsPerUser = maxConnsPerUser;
    this.held = 0; // open connections, every transport
    // Worker number and a random part, so ids stay unique across restarts.
    this.idPrefix = `${worker}-${randomBytes(4).toString('hex')}-`;
    this.opened = 0;
    this.jwt = auth === 'jwt';
    this.hook = auth === 'hook';
    this.identified = this.jwt || this.hook; // every connection has a user
    this.verify = verify;
    this.hooks = hooks;
    if (this.identified) {
      const disconnected = (n) => metrics.disconnects.inc({ reason: 'api' }, n);
      this.users = new WorkerUsers({ relay, cap: maxConnsPerUser, disconnected });
    }
  }

  /** @returns {string} a new connection's id, unique in the cluster */
  clientId() {
    return `${this.idPrefix}${(this.opened++).toString(36)}`;
  }

  /**
   * Under --auth hook: asks the application who the request's client is.
   * @param {string} client its connection id
   * @param {'ws'|'sse'} transport
   * @param {() => boolean} present whether the client is still there when the request's turn comes
   * @returns {Promise<import('../core/identity.js').Identity>} rejects with HookRefused or HookFailed
   */
  identify(req, client, transport, ip, present) {
    const { cookie, authorization, origin } = req.headers;
    const headers = { cookie, authorization, origin, 'user-agent': req.headers['user-agent'] };
    return this.hooks.connect({ client, transport, ip, headers }, present);
  }

  /** @throws {GatewayError} why the request may not open a connection, if it may not */
  check(req) {
    if (this.draining()) throw refusal(ErrorCode.DRAINING);
    if (this.held >= this.capacity) throw refusal(ErrorCode.OVER_CAPACITY);
    if (this.origins && !this.origins.has(req.headers.origin)) throw refusal(ErrorCode.ORIGIN);
    if (!this.perIp.allows(clientIp(req, this.trustForwarded))) throw refusal(ErrorCode.IP_CAP);
  }

  /**
   * Takes one of the IP's places in the primary's count, when it keeps them.
   * @returns {Promise<void>} rejects with the refusal past the cap
   */
  async reserveIp(ip) {
    if (this.ipsInPrimary && !(await this.relay.ask(Op.IP_ADD, ip))) throw refusal(ErrorCode.IP_CAP);
  }

  /** A place reserveIp() took for a connection that never opened. */
  releaseIp(ip) {
    if (this.ipsInPrimary) this.relay.send([Op.IP_DEL, ip]);
  }

  /**
   * A connection let in by check() (and reserveIp()) is open: counted until
   * left(); its session keeps the IP it is counted under, if any is.
   */
  admitted(conn, ip) {
    this.held++;
    if (this.ipsInPrimary || this.perIp.add(ip)) conn[kSession].ip = ip;
  }

  left(conn) {
    this.held--;
    const { ip } = conn[kSession];
    if (ip === null) return;
    if (this.ipsInPrimary) this.releaseIp(ip);
    else this.perIp.remove(ip);
  }
}

/**
 * A worker's door, from the resolved configuration: its limits, and the
 * token check or the hooks its --auth and hook flags ask for.
 * @param {object} config resolved gateway configuration
 * @param {import('pino').Logger} log
 * @returns {object} Admission's options, less the worker's own (relay, draining, worker)
 */
export function admissionOptions(config, log) {
  return {
    capacity: workerCapacity(config),
    allowedOrigins: config.allowedOrigins,
    maxConnsPerIp: config.maxConnsPerIp,
    ipsInPrimary: ipCapInPrimary(config),
    maxConnsPerUser: config.maxConnsPerUser,
    trustForwarded: config.trustForwarded,
    auth: config.auth,
    verify: config.auth === 'jwt' ? createVerifier(config, log) : undefined,
    hooks: hooksConfigured(config) ? new Hooks(config) : undefined
  };
}
