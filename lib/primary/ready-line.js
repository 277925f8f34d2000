// The fields of the "gateway ready" log line: every URL the gateway serves,
// as a person would paste it into a browser or a client, with the balance
// mode and the worker count; and the bound ports, which scripts read.
import { appsOf } from '../pusher/apps.js';

/**
 * @param {object} config resolved gateway configuration
 * @param {{port: number, metricsPort: number}} bound the ports listened on (0 when metrics are off)
 * @returns {object} log fields
 */
export function readyFields(config, { port, metricsPort }) {
  const tls = config.tlsCert !== undefined;
  const origin = (scheme, host, onPort) => `${scheme}${tls && host === config.host ? 's' : ''}://${hostInUrl(host)}:${onPort}`;
  const ws = origin('ws', config.host, port);
  const http = origin('http', config.host, port);
  const fields = { websocket: `${ws}${config.path}`, sse: `${http}/sse?channels=<channel>`, client: `${http}/client.js` };
  const keys = appsOf(config).map((app) => app.key);
  if (keys.length > 0) fields.pusher = keys.map((key) => `${ws}/app/${key}`).join(' ');
  if (metricsPort !== 0) {
    const operator = origin('http', config.metricsHost, metricsPort);
    Object.assign(fields, { status: `${operator}/`, metrics: `${operator}/metrics` });
    if (config.adminPassword !== undefined) fields.admin = `${operator}/admin`;
  }
  return { ...fields, balance: config.balance, workers: config.workers, port, path: config.path, metricsPort };
}

// A wildcard address is reached on this machine as localhost.
function hostInUrl(host) {
  if (host === '0.0.0.0' || host === '::' || host === '') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}
