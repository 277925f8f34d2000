// Gateway nodes on --engine redis and their redis-server, each in a network
// namespace of a private network (./netns.js), for the partition test and
// benchmark: a node is cut from Redis with lab.cut(node) and healed with
// lab.heal(node). The gateways and Redis are reached from here on 127.0.0.1
// (forwarded ports); so is a webhook endpoint that listens on a Unix socket.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { PrivateNet } from './netns.js';
import { eventually, startGateway } from './gateway.js';

const REDIS_PORT = 6379;
const HOOKS_PORT = 8090; // a node's way to the webhook endpoint, inside its namespace

export class PartitionLab {
  /**
   * @param {object} options
   * @param {number} [options.nodes] gateway nodes, `n1`, `n2`, …
   * @param {string[]} options.args their flags (--engine redis and --redis-url are added)
   * @param {string} [options.hooksSocket] a Unix socket with a webhook endpoint on it: the nodes get --webhook-url to it
   * @param {string} [options.gateway] another checkout's bin/gateway.js (startGateway)
   * @returns {Promise<PartitionLab>} with Redis answering and every node ready
   */
  static async start({ nodes = 2, args, hooksSocket, gateway }) {
    const names = Array.from({ length: nodes }, (_, i) => `n${i + 1}`);
    const lab = new PartitionLab(await PrivateNet.create(['redis', ...names]));
    try {
      await lab.startRedis();
      lab.nodes = await Promise.all(names.map((name) => lab.startNode(name, args, hooksSocket, gateway)));
    } catch (err) {
      await lab.stop();
      throw err;
    }
    return lab;
  }

  constructor(net) {
    this.net = net;
    this.nodes = [];
    this.redis = undefined; // an ioredis connection from here, to look at the keys
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-redis-'));
  }

  async startRedis() {
    const address = this.net.address('redis');
    this.net.spawn('redis', 'redis-server', ['--port', String(REDIS_PORT), '--bind', address, '127.0.0.1', '--protected-mode', 'no', '--save', '', '--appendonly', 'no', '--dir', this.dir], { stdio: 'ignore' });
    this.redisUrl = `redis://${address}:${REDIS_PORT}`;
    const [port] = await eventually(() => this.net.expose('redis', [REDIS_PORT]).catch(() => undefined), { what: 'redis-server forwarded' });
    this.redis = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 100 });
    this.redis.on('error', () => {});
    await eventually(async () => (await this.redis.ping()) === 'PONG', { what: 'redis-server in its namespace' });
  }

  async startNode(name, args, hooksSocket, bin) {
    const own = ['--engine', 'redis', '--redis-url', this.redisUrl, ...args];
    if (hooksSocket !== undefined) {
      await this.net.reach(name, HOOKS_PORT, hooksSocket);
      own.push('--webhook-url', `http://127.0.0.1:${HOOKS_PORT}/hooks`);
    }
    const gateway = await startGateway(own, { prefix: this.net.prefix(name), gateway: bin });
    const path = new URL(gateway.url).pathname;
    [gateway.port, gateway.metricsPort] = await this.net.expose(name, [gateway.port, gateway.metricsPort]);
    gateway.url = `ws://127.0.0.1:${gateway.port}${path}`;
    gateway.http = `http://127.0.0.1:${gateway.port}`;
    gateway.name = name;
    return gateway;
  }

  /** Drops the node's packets both ways (no FIN, no RST) until heal(). */
  cut(node) {
    this.net.cut(node.name);
  }

  heal(node) {
    this.net.heal(node.name);
  }

  async stop() {
    this.redis?.disconnect();
    await Promise.all(this.nodes.map((node) => node.stop()));
    await this.net.remove();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
