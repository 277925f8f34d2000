// A signed GET on a Pusher app's HTTP API, as the server libraries sign it, for the benchmarks.
import { sign } from '../../lib/pusher/signatures.js';

/** @returns {Promise<object>} the answer's JSON */
export async function signedGet(gw, app, route, params = {}) {
  const path = `/apps/${app.appId}${route}`;
  const query = { auth_key: app.key, auth_timestamp: String(Math.floor(Date.now() / 1000)), auth_version: '1.0', ...params };
  const sorted = Object.keys(query)
    .sort()
    .map((k) => `${k}=${query[k]}`)
    .join('&');
  const signature = sign(app.secret, `GET\n${path}\n${sorted}`);
  const res = await fetch(`${gw.http}${path}?${sorted}&auth_signature=${signature}`);
  if (res.status !== 200) throw new Error(`${route} answered ${res.status}: ${await res.text()}`);
  return res.json();
}
