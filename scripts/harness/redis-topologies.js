// Production Redis for the engine's failover tests, as real processes on
// free ports in temp dirs: a master with two replicas watched by three
// sentinels, and a three-master Redis Cluster with two replicas per master.
// Failure detection is turned down from the defaults' half a minute, so a
// failover takes a few seconds: to a second for a Cluster node; to 2.5 s for
// a sentinel, which on a loaded machine at 1 s once took a freshly promoted
// master for down (1.07 s after switching to it) and failed over again to the only replica,
// leaving two masters with no replica between them until Sentinel turned the
// first back into a replica 8 s later (nothing can be acknowledged under
// --redis-wait-replicas 1 meanwhile).
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { promisify } from 'node:util';
import os from 'node:os';
import path from 'node:path';
import { slotOf } from '../../lib/engines/redis/connect.js';
import { RedisServer, command } from './redis.js';
import { eventually, freePort } from './gateway.js';

export const MASTER_NAME = 'mymaster';
const DOWN_AFTER_MS = 1000; // a Cluster node's
const SENTINEL_DOWN_AFTER_MS = 2500;
const REPLICATION = ['--repl-diskless-sync-delay', '0']; // a replica syncs at once, not after the default 5 s
const online = (info) => info.match(/state=online/g)?.length ?? 0;

/** A master, two replicas, three sentinels. */
export class SentinelGroup {
  static start() {
    return started(new SentinelGroup(), async (group) => {
      group.servers.push(await RedisServer.start(REPLICATION));
      const master = group.servers[0];
      for (let i = 0; i < 2; i++) group.servers.push(await RedisServer.start([...REPLICATION, '--replicaof', '127.0.0.1', String(master.port)]));
      await eventually(async () => online(await master.command('INFO', 'replication')) === 2, { what: 'two replicas in sync' });
      for (let i = 0; i < 3; i++) group.sentinels.push(await Sentinel.start(master.port));
      await eventually(async () => (await group.sentinels[0].command('SENTINEL', 'SENTINELS', MASTER_NAME)).length === 2, {
        timeout: 15000,
        what: 'the sentinels see each other'
      });
      await eventually(async () => (await group.sentinels[0].command('SENTINEL', 'REPLICAS', MASTER_NAME)).length === 2, {
        what: 'the sentinels see the replicas'
      });
    });
  }

  constructor() {
    this.servers = [];
    this.sentinels = [];
  }

  /** --redis-sentinels */
  get addresses() {
    return this.sentinels.map((s) => s.address).join(',');
  }

  /** The server the sentinels call master now. */
  async master() {
    const [, port] = await this.sentinels[0].command('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME);
    return this.servers.find((s) => s.port === Number(port));
  }

  /** Resolves once every sentinel names a master other than `old`. */
  async failedOver(old, timeout = 20000) {
    await eventually(
      async () => {
        for (const sentinel of this.sentinels) {
          const [, port] = await sentinel.command('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME);
          if (Number(port) === old.port) return false;
        }
        return true;
      },
      { timeout, what: `a new master instead of ${old.address}` }
    );
    return this.master();
  }

  async remove() {
    await Promise.all([...this.sentinels, ...this.servers].map((p) => p.remove()));
  }
}

/** One redis-sentinel, watching the master on `masterPort`; stopped and started again on its port. */
class Sentinel {
  static async start(masterPort) {
    const sentinel = new Sentinel(await freePort());
    const config = [
      `port ${sentinel.port}`,
      'bind 127.0.0.1',
      `dir ${sentinel.dir}`,
      `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${masterPort} 2`,
      `sentinel down-after-milliseconds ${MASTER_NAME} ${SENTINEL_DOWN_AFTER_MS}`,
      `sentinel failover-timeout ${MASTER_NAME} 4000`,
      `sentinel parallel-syncs ${MASTER_NAME} 2`
    ];
    writeFileSync(sentinel.file, config.join('\n') + '\n'); // a sentinel rewrites its own file: what it learnt survives a restart
    await sentinel.start();
    return sentinel;
  }

  constructor(port) {
    this.port = port;
    this.address = `127.0.0.1:${port}`;
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-sentinel-'));
    this.file = path.join(this.dir, 'sentinel.conf');
    this.proc = undefined;
  }

  async start() {
    this.proc = spawn('redis-sentinel', [this.file], { stdio: 'ignore' });
    this.exited = once(this.proc, 'exit');
    await eventually(() => this.command('PING').then((r) => r === 'PONG'), { what: `redis-sentinel on ${this.port}` });
  }

  command(...args) {
    return command(`redis://${this.address}`, ...args);
  }

  async stop() {
    if (this.proc?.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill('SIGKILL');
      await this.exited;
    }
  }

  async remove() {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Three masters with two replicas each: after a failover, --redis-wait-replicas 1 can still be met. */
export class RedisClusterGroup {
  static start() {
    return started(new RedisClusterGroup(), async (group) => {
      const node = [...REPLICATION, '--cluster-enabled', 'yes', '--cluster-node-timeout', String(DOWN_AFTER_MS), '--cluster-replica-validity-factor', '0'];
      for (let i = 0; i < 9; i++) group.servers.push(await RedisServer.start(node));
      const addresses = group.servers.map((s) => s.address);
      await promisify(execFile)('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '2', '--cluster-yes']);
      await eventually(async () => (await Promise.all(group.servers.map((s) => s.command('CLUSTER', 'INFO')))).every((i) => /cluster_state:ok/.test(i)), {
        timeout: 20000,
        what: 'cluster_state:ok on every node'
      });
      await eventually(async () => (await Promise.all((await group.masters()).map((m) => m.command('INFO', 'replication')))).every((i) => online(i) === 2), {
        what: 'two replicas in sync with every master'
      });
    });
  }

  constructor() {
    this.servers = [];
  }

  /** --redis-cluster: every node as a seed */
  get addresses() {
    return this.servers.map((s) => s.address).join(',');
  }

  /** The servers that are masters now. */
  async masters() {
    const roles = await Promise.all(this.servers.map((s) => (s.proc.exitCode === null && s.proc.signalCode === null ? s.command('ROLE') : [])));
    return this.servers.filter((s, i) => roles[i][0] === 'master');
  }

  /** The master that owns `key`'s slot now. */
  async masterOf(key) {
    const live = this.servers.find((s) => s.proc.exitCode === null && s.proc.signalCode === null);
    const slot = slotOf(key);
    const ranges = await live.command('CLUSTER', 'SLOTS');
    const [, , [, port]] = ranges.find(([from, to]) => slot >= from && slot <= to);
    return this.servers.find((s) => s.port === port);
  }

  /** Resolves once three live masters serve every slot again (a replica took over). */
  async healed(timeout = 20000) {
    const live = () => this.servers.filter((s) => s.proc.exitCode === null && s.proc.signalCode === null);
    await eventually(
      async () =>
        (await this.masters()).length === 3 &&
        (await Promise.all(live().map((s) => s.command('CLUSTER', 'INFO')))).every((i) => /cluster_state:ok/.test(i)),
      { timeout, what: 'three masters and cluster_state:ok after a failover' }
    );
  }

  /**
   * Moves `slot` to the master `target` as `redis-cli --cluster reshard`
   * does: IMPORTING on the target, MIGRATING on the owner, its keys MIGRATEd
   * one at a time (`between()` awaited before each and after the last), then
   * NODE on every master, the target first.
   */
  async migrate(slot, target, between) {
    const live = this.servers.find((s) => s.proc.exitCode === null && s.proc.signalCode === null);
    const [, , [, port]] = (await live.command('CLUSTER', 'SLOTS')).find(([from, to]) => slot >= from && slot <= to);
    const source = this.servers.find((s) => s.port === port);
    const [sourceId, targetId] = await Promise.all([source, target].map((s) => s.command('CLUSTER', 'MYID')));
    await target.command('CLUSTER', 'SETSLOT', slot, 'IMPORTING', sourceId);
    await source.command('CLUSTER', 'SETSLOT', slot, 'MIGRATING', targetId);
    for (;;) {
      await between();
      const keys = await source.command('CLUSTER', 'GETKEYSINSLOT', slot, 1);
      if (keys.length === 0) break;
      await source.command('MIGRATE', '127.0.0.1', target.port, '', 0, 5000, 'KEYS', ...keys);
    }
    const others = (await this.masters()).filter((m) => m !== source && m !== target);
    for (const master of [target, source, ...others]) await master.command('CLUSTER', 'SETSLOT', slot, 'NODE', targetId);
  }

  async remove() {
    await Promise.all(this.servers.map((s) => s.remove()));
  }
}

/** Runs `setup(group)`: the group once it is up, or removed and the error thrown. */
async function started(group, setup) {
  try {
    await setup(group);
    return group;
  } catch (err) {
    await group.remove();
    throw err;
  }
}
