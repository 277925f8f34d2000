// The fault schedule: a SIGKILL of a random worker every --kill-every
// seconds, one SIGHUP rolling restart half way, a hostile burst every
// --hostile-every seconds, and with a redis-server of the soak's own one
// restart (empty: every channel starts a new epoch) about a third of the way.
// Reconnect storms are the holders' own (--reconnect-every). No fault in the
// quiet tail, so the last reconnects recover before the loadgens count.
import { hostileBurst } from './hostile.js';
import { track } from '../bench/children.js';

export class Faults {
  /** @param {{gateway: object, o: object, log: Function, redis?: import('../harness/redis.js').RedisServer}} */
  constructor({ gateway, o, log, redis }) {
    this.gateway = gateway;
    this.redis = redis;
    this.o = o;
    this.log = log;
    this.killedPids = new Set();
    this.counts = { workerKills: 0, rollingRestarts: 0, hostileBursts: 0, redisRestarts: 0 };
    this.hostile = [];
    this.timers = [];
  }

  start() {
    const { o } = this;
    const lastS = o.durationS - o.quietTailS;
    this.every(o.killEvery, lastS, () => this.killWorker());
    this.every(o.hostileEvery, lastS, () => this.hostileBurst());
    if (o.durationS / 2 < lastS) this.timers.push(setTimeout(() => this.rollingRestart(), (o.durationS / 2) * 1000));
    if (this.redis) this.timers.push(setTimeout(() => this.redisRestart(), redisRestartS(o) * 1000));
  }

  every(periodS, lastS, fault) {
    if (periodS <= 0) return;
    for (let at = periodS; at < lastS; at += periodS) this.timers.push(setTimeout(fault, at * 1000));
  }

  killWorker() {
    const slots = Array.from({ length: this.o.workers }, (_, i) => i + 1).filter((i) => this.gateway.workerPid(i) !== undefined);
    const slot = slots[Math.floor(Math.random() * slots.length)];
    const pid = this.gateway.workerPid(slot);
    if (pid === undefined) return;
    this.killedPids.add(pid);
    this.counts.workerKills++;
    this.log(`fault: SIGKILL worker ${slot} (pid ${pid})`);
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }

  rollingRestart() {
    this.counts.rollingRestarts++;
    this.log('fault: SIGHUP (rolling restart)');
    this.gateway.signal('SIGHUP');
  }

  async redisRestart() {
    this.counts.redisRestarts++;
    this.log('fault: redis-server killed and started again, empty');
    await this.redis.stop();
    await this.redis.start();
    track(this.redis.proc);
  }

  async hostileBurst() {
    this.counts.hostileBursts++;
    this.log('fault: hostile input burst');
    const outcome = await hostileBurst({ port: this.gateway.port, path: '/ws' });
    this.hostile.push(outcome);
  }

  stop() {
    for (const t of this.timers) clearTimeout(t);
  }
}

/**
 * A quarter of a kill period after the kill nearest a third of the run: not
 * at the moment of a kill, so most subscribers are held across the restart
 * and show that the new epoch reaches them live.
 */
function redisRestartS(o) {
  if (o.killEvery <= 0) return o.durationS / 3;
  return (Math.floor(o.durationS / 3 / o.killEvery) + 0.25) * o.killEvery;
}
