// ably-js (the real `ably` package) clients of a test's gateway.
import Ably from 'ably';

/**
 * ably-js clients of the gateway `current()` gives, each closed by closeAll().
 * @param {() => {port: number}} current
 */
export function ablyClients(current) {
  const clients = [];
  const options = (more) => ({ endpoint: '127.0.0.1', port: current().port, tls: false, disableConnectivityCheck: true, logLevel: 0, ...more });
  const realtime = (more) => {
    const client = new Ably.Realtime(options(more));
    clients.push(client);
    return client;
  };
  return { options, realtime, closeAll: () => clients.splice(0).forEach((client) => client.close()) };
}
