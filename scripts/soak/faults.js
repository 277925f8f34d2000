// The fault schedule: a SIGKILL of a random worker every --kill-every
// seconds, one SIGHUP rolling restart half way, a hostile burst every
// --hostile-every seconds. Reconnect storms are the holders' own
// (--reconnect-every). No fault in the quiet tail, so the last reconnects
// recover before the loadgens count.
import { hostileBurst } from './hostile.js';

export class Faults {
  constructor({ gateway, o, log }) {
    this.gateway = gateway;
    this.o = o;
    this.log = log;
    this.killedPids = new Set();
    this.counts = { workerKills: 0, rollingRestarts: 0, hostileBursts: 0 };
    this.hostile = [];
    this.timers = [];
  }

  start() {
    const { o } = this;
    const lastS = o.durationS - o.quietTailS;
    this.every(o.killEvery, lastS, () => this.killWorker());
    this.every(o.hostileEvery, lastS, () => this.hostileBurst());
    if (o.durationS / 2 < lastS) this.timers.push(setTimeout(() => this.rollingRestart(), (o.durationS / 2) * 1000));
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
