// A TCP load balancer in front of gateway nodes, for the tests of a node's
// death: each connection goes to the first node of its list still in
// service, as a balancer's health check would keep it. A node taken out
// (out()) gets no new connection; those it held end with it.
import net from 'node:net';
import { once } from 'node:events';

export class Balancer {
  /**
   * @param {number[]} ports the nodes' ports on 127.0.0.1, in order of preference
   * @param {string} path the nodes' WebSocket path
   * @returns {Promise<Balancer>} listening on 127.0.0.1 (`url`)
   */
  static async start(ports, path) {
    const balancer = new Balancer(ports);
    balancer.server.listen(0, '127.0.0.1');
    await once(balancer.server, 'listening');
    balancer.url = `ws://127.0.0.1:${balancer.server.address().port}${path}`;
    return balancer;
  }

  constructor(ports) {
    this.ports = [...ports];
    this.sockets = new Set();
    this.server = net.createServer((inbound) => {
      const [port] = this.ports;
      if (port === undefined) return inbound.destroy();
      const outbound = net.connect(port, '127.0.0.1');
      for (const [a, b] of [[inbound, outbound], [outbound, inbound]]) {
        this.sockets.add(a);
        a.on('error', () => b.destroy());
        a.on('close', () => {
          this.sockets.delete(a);
          b.destroy();
        });
        a.pipe(b);
      }
    });
  }

  /** Takes the node on `port` out of service. */
  out(port) {
    this.ports = this.ports.filter((p) => p !== port);
  }

  close() {
    this.server.close();
    for (const socket of this.sockets) socket.destroy();
  }
}
