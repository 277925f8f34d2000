// The fetch jose's createRemoteJWKSet uses (its customFetch option) for
// --jwt-jwks-url. jose's own cooldown starts only after a successful fetch:
// while the identity provider fails, every verification would fetch again,
// and an outage would turn each reconnect into a request against it. Here:
//   - at most one request per `cooldownMs`, whatever its outcome;
//   - between them, and when a request fails, jose is handed the last keys
//     that were fetched, so tokens signed with them keep verifying;
//   - an outage is logged once when it starts and once when it ends.
import { BackendError, InternalCode } from '../core/errors.js';
import { metrics } from './metrics.js';

/**
 * @param {object} options
 * @param {number} options.cooldownMs
 * @param {import('pino').Logger} options.log
 * @returns {(url: string, init: RequestInit) => Promise<Response>}
 */
export function boundedJwksFetch({ cooldownMs, log }) {
  let lastTry = -Infinity; // ms: when the last real request was sent
  let lastKeys; // the body of the last successful answer
  let failing = false;

  const fromCache = (why) => {
    if (lastKeys === undefined) return Promise.reject(new BackendError(InternalCode.UNREACHABLE, `JWKS not fetched yet (${why})`));
    return Promise.resolve(new Response(lastKeys, { status: 200, headers: { 'content-type': 'application/json' } }));
  };

  return async function jwksFetch(url, init) {
    const now = Date.now();
    if (now - lastTry < cooldownMs) return fromCache('cooling down after the last request');
    lastTry = now;
    let problem;
    try {
      const res = await fetch(url, init);
      if (res.status === 200) {
        const text = await res.text();
        JSON.parse(text); // a broken body is a failure, and must not replace good keys
        lastKeys = text;
        metrics.jwksFetches.inc({ result: 'ok' });
        if (failing) log.warn({ url }, 'JWKS endpoint answers again');
        failing = false;
        return new Response(text, { status: 200, headers: res.headers });
      }
      await res.body?.cancel();
      problem = `answered ${res.status}`;
    } catch (err) {
      problem = err.name === 'TimeoutError' || err.name === 'AbortError' ? 'timed out' : err.message;
    }
    metrics.jwksFetches.inc({ result: 'failed' });
    if (!failing) {
      log.error({ url, problem, keepsKeys: lastKeys !== undefined }, 'JWKS endpoint failing: keys already fetched keep verifying; retried at most once per cooldown');
    }
    failing = true;
    return fromCache(problem);
  };
}
