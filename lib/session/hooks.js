// The hooks: the gateway asks the application's backend whether a connection
// may open (connect: its identity, as a JWT's claims would give it), a
// subscribe or a publish may go ahead (in the namespaces that ask for it),
// and whether an expiring connection is extended (refresh).
//
// Every call goes through one limiter per worker (../backend/limiter.js):
// at most --hook-concurrency in flight, at most --hook-queue waiting, the
// rest refused at once; and one pooled client (../backend/http.js) whose
// --hook-timeout starts when the request leaves the queue. A call resolves
// with the answer, or rejects with HookRefused (the application said no) or
// HookFailed (no usable answer: the client is told to come back later).
// Each outcome is counted under its result label, so the metrics say what
// the backend did.
import { BackendError, HookFailed, HookRefused, InternalCode } from '../core/errors.js';
import { BackendClient } from '../backend/http.js';
import { Limiter, QUEUE_FULL } from '../backend/limiter.js';
import { identityFrom } from '../core/identity.js';
import { PermissionsCache } from '../core/permissions.js';
import { gaugeReads, metrics } from './metrics.js';

const MAX_ANSWER_BYTES = 64 * 1024;
const DEFAULT_REFUSAL = 4001;
const MAX_REASON_BYTES = 123; // a WebSocket close reason's limit

/** The result label of gateway_hook_requests_total for an answer that was used; a failure's is its InternalCode. */
const HookResult = Object.freeze({
  OK: 'ok',
  REFUSED: 'refused'
});

const GONE = Symbol('gone');

/** Whether `config` names any hook: only then does a worker load the HTTP client. */
export function hooksConfigured(config) {
  return [config.connectHook, config.subscribeHook, config.publishHook, config.refreshHook].some((url) => url !== undefined);
}

export class Hooks {
  /** @param {object} config resolved gateway configuration, with at least one hook URL */
  constructor(config) {
    this.urls = {
      connect: url(config.connectHook),
      subscribe: url(config.subscribeHook),
      publish: url(config.publishHook),
      refresh: url(config.refreshHook)
    };
    this.limiter = new Limiter(config.hookConcurrency, config.hookQueue);
    this.permissions = new PermissionsCache(); // the connect answers' compiled permissions, shared
    this.client = new BackendClient({ timeoutMs: config.hookTimeout, connections: config.hookConcurrency, maxBytes: MAX_ANSWER_BYTES });
    gaugeReads(metrics.hookQueue, () => this.limiter.waiting);
  }

  /** Whether expiring connections are refreshed (--refresh-hook) rather than closed. */
  get refreshes() {
    return this.urls.refresh !== undefined;
  }

  /**
   * Each call takes `present()`, asked when the request's turn comes: a
   * client that left while it waited costs the backend nothing.
   * @param {{client: string, transport: 'ws'|'sse', ip: string, headers: object}} body
   * @param {() => boolean} present
   * @returns {Promise<import('../core/identity.js').Identity>} rejects with HookRefused or HookFailed
   */
  connect(body, present) {
    return this.call('connect', body, present, (result) => identityFrom(result.user, result.expireAt, result, 'user', this.permissions));
  }

  /** @returns {Promise<true>} allowed; rejects with HookRefused or HookFailed */
  subscribe(body, present) {
    return this.call('subscribe', body, present, allowed);
  }

  /** @returns {Promise<{dataJson?: string}>} dataJson: the replacement to publish instead; rejects with HookRefused or HookFailed */
  publish(body, present) {
    return this.call('publish', body, present, publishResult);
  }

  /** @returns {Promise<{expiresAt: number}|{expired: true}>} rejects with HookRefused or HookFailed */
  refresh(body, present) {
    return this.call('refresh', body, present, refreshResult);
  }

  /**
   * Sends one hook request through the limiter and interprets its answer.
   * @param {(result: object) => *} interpret the `result` object to the caller's value, or a string saying what is wrong
   */
  async call(hook, body, present, interpret) {
    const outcome = await this.limiter.run(() => (present() ? this.send(hook, body) : Promise.resolve(GONE)));
    const value = NOT_SENT.get(outcome)?.() ?? classify(outcome, interpret);
    metrics.hookRequests.inc({ hook, result: resultLabel(value) });
    if (value instanceof Error) throw value;
    return value;
  }

  async send(hook, body) {
    const end = metrics.hookDuration.startTimer({ hook });
    const outcome = await this.client.post(this.urls[hook], JSON.stringify(body));
    end();
    return outcome;
  }
}

// What a request that was never sent ends as: a fresh error each time.
const NOT_SENT = new Map([
  [QUEUE_FULL, () => new HookFailed(InternalCode.QUEUE_FULL, 'too many hook requests waiting')],
  [GONE, () => new HookFailed(InternalCode.GONE, 'the client left before its turn')]
]);

function resultLabel(value) {
  if (value instanceof HookFailed) return value.result;
  return value instanceof HookRefused ? HookResult.REFUSED : HookResult.OK;
}

function url(text) {
  return text === undefined ? undefined : new URL(text);
}

// The backend's answer, in the order the contract reads it: a status, JSON,
// then `error` (a refusal) or `result` (for `interpret`).
function classify(outcome, interpret) {
  if (outcome instanceof BackendError) return new HookFailed(outcome.code, outcome.message);
  const { status, text } = outcome;
  if (status >= 500) return new HookFailed(InternalCode.SERVER_ERROR, `answered ${status}`);
  if (status < 200 || status > 299) return invalid(`answered ${status}`);
  let answer;
  try {
    answer = JSON.parse(text);
  } catch {
    return invalid('the answer is not JSON');
  }
  if (!isObject(answer)) return invalid('the answer is not a JSON object');
  if (answer.error !== undefined) return refusal(answer.error);
  if (!isObject(answer.result)) return invalid('the answer has neither result nor error');
  const value = interpret(answer.result);
  return typeof value === 'string' ? invalid(value) : value;
}

function refusal(error) {
  if (!isObject(error)) return invalid('error must be an object');
  const { code = DEFAULT_REFUSAL, message = 'refused by the application' } = error;
  if (!Number.isInteger(code) || code < 4000 || code > 4999) return invalid('error.code must be an integer from 4000 to 4999');
  if (typeof message !== 'string') return invalid('error.message must be a string');
  return new HookRefused(code, truncate(message));
}

function allowed() {
  return true;
}

function publishResult(result) {
  return 'data' in result ? { dataJson: JSON.stringify(result.data) } : {};
}

function refreshResult(result) {
  if (result.expired === true) return { expired: true };
  if (!Number.isFinite(result.expireAt)) return 'the refresh answer needs expireAt (seconds) or expired: true';
  return { expiresAt: result.expireAt * 1000 };
}

function invalid(message) {
  return new HookFailed(InternalCode.INVALID, message);
}

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function truncate(message) {
  const bytes = Buffer.from(message);
  return bytes.length <= MAX_REASON_BYTES ? message : bytes.subarray(0, MAX_REASON_BYTES).toString().replace(/\uFFFD+$/, '');
}
