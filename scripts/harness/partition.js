// Gateway nodes on --engine redis and their redis-server, each in a network
// namespace of a private network (./netns.js), for the partition tests and
// benchmark: a node is cut from Redis with lab.cut(node) and healed with
// lab.heal(node). With `sentinel`, Redis is a master (member `redis`), a
// replica (`replica`) and three Sentinels (`s1`…`s3`), each in a namespace
// of its own too, so any of them can be cut alone (cutMember), and the
// nodes find the master through the Sentinels. With `cluster`, Redis is a
// Cluster of three masters (`r1`…`r3`, no replicas), each in a namespace of
// its own, so one master can be cut alone; their node timeout is longer
// than any cut a test makes, so the masters never fail each other: a cut is
// only what the nodes see. The gateways and Redis are
// reached from here on 127.0.0.1 (forwarded ports); so is a webhook
// endpoint that listens on a Unix socket.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { PrivateNet } from './netns.js';
import { eventually, startGateway } from './gateway.js';

const REDIS_PORT = 6379;
const SENTINEL_PORT = 26379;
const SENTINELS = ['s1', 's2', 's3'];
const MASTER_NAME = 'mymaster';
const CLUSTER = ['r1', 'r2', 'r3'];
const CLUSTER_NODE_TIMEOUT_MS = 60000;
// As in ./redis-topologies.js: short enough for a test, long enough that a
// loaded machine's stall is not taken for a dead master.
const SENTINEL_DOWN_AFTER_MS = 2500;
const HOOKS_PORT = 8090; // a node's way to the webhook endpoint, inside its namespace

export class PartitionLab {
  /**
   * @param {object} options
   * @param {number} [options.nodes] gateway nodes, `n1`, `n2`, …
   * @param {string[]} options.args their flags (--engine redis and --redis-url are added)
   * @param {string} [options.hooksSocket] a Unix socket with a webhook endpoint on it: the nodes get --webhook-url to it
   * @param {string} [options.gateway] another checkout's bin/gateway.js (startGateway)
   * @param {boolean} [options.sentinel] a master, a replica and three Sentinels (--redis-sentinels) instead of one Redis
   * @param {boolean} [options.cluster] a Cluster of three masters (--redis-cluster) instead of one Redis
   * @returns {Promise<PartitionLab>} with Redis answering and every node ready
   */
  static async start({ nodes = 2, args, hooksSocket, gateway, sentinel = false, cluster = false }) {
    const names = Array.from({ length: nodes }, (_, i) => `n${i + 1}`);
    const redisMembers = sentinel ? ['redis', 'replica', ...SENTINELS] : cluster ? CLUSTER : ['redis'];
    const lab = new PartitionLab(await PrivateNet.create([...redisMembers, ...names]));
    try {
      if (cluster) await lab.startCluster();
      else lab.redis = await lab.startRedis('redis');
      if (sentinel) await lab.startSentinels();
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
    this.redis = undefined; // an ioredis connection from here to the first master, to look at the keys
    this.servers = new Map(); // member -> an ioredis connection from here (redis-server or redis-sentinel)
    this.sentinels = undefined; // --redis-sentinels, with `sentinel`
    this.cluster = undefined; // --redis-cluster, with `cluster`
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-redis-'));
  }

  /** A redis-server in the member's namespace (`extra`: its further arguments); resolves its connection from here. */
  async startRedis(member, extra = []) {
    const address = this.net.address(member);
    const dir = mkdtempSync(path.join(this.dir, `${member}-`));
    const args = ['--port', String(REDIS_PORT), '--bind', address, '127.0.0.1', '--protected-mode', 'no', '--save', '', '--appendonly', 'no', '--dir', dir];
    this.net.spawn(member, 'redis-server', [...args, '--repl-diskless-sync-delay', '0', ...extra], { stdio: 'ignore' });
    this.redisUrl ??= `redis://${address}:${REDIS_PORT}`;
    return this.connectTo(member, REDIS_PORT);
  }

  async connectTo(member, port) {
    const [local] = await eventually(() => this.net.expose(member, [port]).catch(() => undefined), { what: `${member} forwarded` });
    const redis = new Redis({ port: local, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 100 });
    redis.on('error', () => {});
    await eventually(async () => (await redis.ping()) === 'PONG', { what: `${member} answering in its namespace` });
    this.servers.set(member, redis);
    return redis;
  }

  /** The replica, in sync, and three Sentinels that see it and each other. */
  async startSentinels() {
    const master = this.net.address('redis');
    const replica = await this.startRedis('replica', ['--replicaof', master, String(REDIS_PORT)]);
    await eventually(async () => /master_link_status:up/.test(await replica.info('replication')), { what: 'the replica in sync' });
    for (const member of SENTINELS) {
      const file = path.join(this.dir, `${member}.conf`); // a Sentinel rewrites its own file
      const config = [
        `port ${SENTINEL_PORT}`,
        'protected-mode no',
        `dir ${this.dir}`,
        `sentinel monitor ${MASTER_NAME} ${master} ${REDIS_PORT} 2`,
        `sentinel down-after-milliseconds ${MASTER_NAME} ${SENTINEL_DOWN_AFTER_MS}`,
        `sentinel failover-timeout ${MASTER_NAME} 4000`
      ];
      writeFileSync(file, config.join('\n') + '\n');
      this.net.spawn(member, 'redis-sentinel', [file], { stdio: 'ignore' });
    }
    const sentinels = await Promise.all(SENTINELS.map((member) => this.connectTo(member, SENTINEL_PORT)));
    await eventually(
      async () => (await Promise.all(sentinels.map((s) => s.call('SENTINEL', 'SENTINELS', MASTER_NAME)))).every((others) => others.length === 2),
      { timeout: 15000, what: 'the Sentinels see each other' }
    );
    await eventually(async () => (await sentinels[0].call('SENTINEL', 'REPLICAS', MASTER_NAME)).length === 1, { what: 'the Sentinels see the replica' });
    this.sentinels = SENTINELS.map((member) => `${this.net.address(member)}:${SENTINEL_PORT}`).join(',');
  }

  /** Three masters that split the slots between them (redis-cli --cluster create, run in the first one's namespace). */
  async startCluster() {
    const extra = ['--cluster-enabled', 'yes', '--cluster-node-timeout', String(CLUSTER_NODE_TIMEOUT_MS), '--cluster-config-file', 'nodes.conf'];
    const masters = await Promise.all(CLUSTER.map((member) => this.startRedis(member, extra)));
    const seeds = CLUSTER.map((member) => `${this.net.address(member)}:${REDIS_PORT}`);
    const create = this.net.spawn(CLUSTER[0], 'redis-cli', ['--cluster', 'create', ...seeds, '--cluster-yes'], { stdio: 'ignore' });
    const [code] = await once(create, 'exit');
    if (code !== 0) throw new Error(`redis-cli --cluster create exited with ${code}`);
    await eventually(async () => (await Promise.all(masters.map((m) => m.call('CLUSTER', 'INFO')))).every((info) => /cluster_state:ok/.test(info)), {
      timeout: 20000,
      what: 'cluster_state:ok on every master'
    });
    this.redis = masters[0];
    this.cluster = seeds.join(',');
  }

  /** The Cluster member whose master owns `key`'s slot. */
  async masterOf(key) {
    const slot = await this.redis.call('CLUSTER', 'KEYSLOT', key);
    const [, , [host]] = (await this.redis.call('CLUSTER', 'SLOTS')).find(([from, to]) => slot >= from && slot <= to);
    return CLUSTER.find((member) => this.net.address(member) === host);
  }

  /** The member the Sentinels call master now (`redis` or `replica`). */
  async master() {
    const [address] = await this.servers.get(SENTINELS[0]).call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME);
    return ['redis', 'replica'].find((member) => this.net.address(member) === address);
  }

  /**
   * Has the Sentinels fail the master over to the replica (SENTINEL
   * FAILOVER), and resolves with the new master's member once every
   * Sentinel names it and the old master is its replica, in sync.
   */
  async failover() {
    const old = await this.master();
    await this.servers.get(SENTINELS[0]).call('SENTINEL', 'FAILOVER', MASTER_NAME);
    const promoted = old === 'redis' ? 'replica' : 'redis';
    const address = this.net.address(promoted);
    await eventually(
      async () => (await Promise.all(SENTINELS.map((s) => this.servers.get(s).call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME)))).every(([host]) => host === address),
      { timeout: 20000, what: `every Sentinel naming ${promoted} master` }
    );
    await eventually(async () => /master_link_status:up/.test(await this.servers.get(old).info('replication')), { timeout: 20000, what: `${old} a replica in sync` });
    return promoted;
  }

  /** Drops a member's packets both ways (a gateway node, a Redis, a Sentinel) until healMember(). */
  cutMember(member) {
    this.net.cut(member);
  }

  healMember(member) {
    this.net.heal(member);
  }

  /** Heals every cut still in place. */
  healAll() {
    for (const member of [...this.net.cutOff]) this.net.heal(member);
  }

  async startNode(name, args, hooksSocket, bin) {
    const redis =
      this.cluster !== undefined
        ? ['--redis-cluster', this.cluster]
        : this.sentinels === undefined
          ? ['--redis-url', this.redisUrl]
          : ['--redis-sentinels', this.sentinels, '--redis-master-name', MASTER_NAME];
    const own = ['--engine', 'redis', ...redis, ...args];
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
    for (const redis of this.servers.values()) redis.disconnect();
    await Promise.all(this.nodes.map((node) => node.stop()));
    await this.net.remove();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
