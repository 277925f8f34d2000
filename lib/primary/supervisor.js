// Keeps one worker process in each of N slots: forks them, restarts a dead one
// with exponential backoff (a worker that dies on start must not become a fork
// storm), replaces them one at a time on SIGHUP, and drains them on shutdown.
import cluster from 'node:cluster';
import { EventEmitter, once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Message } from '../core/ipc.js';
import { workerConfig } from '../config/options.js';
import { workerApps } from './apps.js';
import { prettifyLines } from '../runtime/logger.js';

const WORKER_ENTRY = fileURLToPath(new URL('../worker/main.js', import.meta.url));
const HEALTHY_UPTIME_MS = 10000; // a worker that lived this long resets the backoff
const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 30000;
const EXIT_GRACE_MS = 10000; // past drain-timeout, stragglers are killed

export class Supervisor extends EventEmitter {
  /**
   * @param {object} options
   * @param {object} options.config resolved gateway configuration
   * @param {import('./relay.js').PrimaryRelay} options.relay
   * @param {import('pino').Logger} options.log
   * @param {() => void} options.restarted counts a restart
   * @param {import('../pusher/apps.js').Apps} options.apps this process's apps, which a worker starts with
   */
  constructor({ config, relay, log, restarted, apps }) {
    super();
    this.apps = apps;
    this.config = config;
    this.relay = relay;
    this.log = log;
    this.restarted = restarted;
    this.stopping = false;
    this.restarting = false; // a rolling restart is under way
    this.slots = Array.from({ length: config.workers }, (_, i) => ({
      number: i + 1,
      worker: null, // the ready worker serving this slot
      starting: null, // a worker forked for this slot, not ready yet: at most one
      failures: 0,
      sockets: 0,
      received: 0,
      handed: 0,
      retry: null
    }));
    // No arguments: a worker's configuration comes over IPC (whenStarted in
    // ../ipc.js), and the primary's flags, --jwt-secret among them, would
    // otherwise be repeated in every worker's /proc/<pid>/cmdline.
    // Under --log-format pretty the workers' JSON lines come through a pipe
    // and the primary prints them readable.
    this.pretty = config.logFormat === 'pretty';
    const stdio = this.pretty ? { stdio: ['inherit', 'pipe', 'inherit', 'ipc'] } : {};
    cluster.setupPrimary({ exec: WORKER_ENTRY, args: [], execArgv: workerExecArgv(config), ...stdio });
  }

  start() {
    for (const slot of this.slots) this.fork(slot);
  }

  /** Slots whose worker can take a connection now. */
  live() {
    return this.slots.filter((slot) => slot.worker !== null);
  }

  /** Forks a worker for the slot, unless one is already starting: a slot never gets two. */
  fork(slot) {
    clearTimeout(slot.retry);
    slot.retry = null;
    if (slot.starting !== null) return slot.starting;
    const worker = cluster.fork();
    if (this.pretty) prettifyLines(worker.process.stdout);
    const startedAt = Date.now();
    worker.on('message', (msg) => {
      if (msg?.type === Message.BATCH) {
        this.relay.receive(worker, msg.ops);
        const figures = this.relay.figures.get(worker.id);
        if (figures !== undefined && figures !== slot.figures && slot.worker === worker) {
          slot.figures = figures;
          slot.sockets = figures.sockets;
          slot.received = figures.received;
        }
      } else if (msg?.type === Message.READY) {
        this.ready(slot, worker);
      } else if (msg?.type === Message.START) {
        worker.send({ type: Message.START, config: { ...workerConfig(this.config), ...workerApps(this.config, this.apps) }, worker: slot.number });
      }
    });
    worker.on('error', (err) => this.log.warn({ err: err.message, worker: slot.number }, 'worker IPC error'));
    worker.once('exit', (code, signal) => this.exited(slot, worker, { code, signal, uptimeMs: Date.now() - startedAt }));
    slot.starting = worker;
    return worker;
  }

  /** A worker ready takes its slot; the one it replaces (a rolling restart) drains. */
  ready(slot, worker) {
    const previous = slot.worker;
    slot.starting = null;
    this.relay.attach(worker);
    slot.worker = worker;
    previous?.send({ type: Message.DRAIN, spreadMs: this.config.drainTimeout });
    slot.sockets = 0;
    slot.received = 0;
    slot.handed = 0;
    this.log.info({ worker: slot.number, workerPid: worker.process.pid }, 'worker ready');
    this.emit('ready', slot, previous);
  }

  exited(slot, worker, { code, signal, uptimeMs }) {
    this.relay.detach(worker);
    if (slot.starting === worker) slot.starting = null;
    else if (slot.worker === worker) slot.worker = null;
    else return; // a replaced worker finishing its drain
    this.emit('exit', slot);
    if (this.stopping) return;
    slot.failures = uptimeMs >= HEALTHY_UPTIME_MS ? 0 : slot.failures + 1;
    const delay = slot.failures === 0 ? 0 : Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (slot.failures - 1));
    this.log.error({ worker: slot.number, workerPid: worker.process.pid, code, signal, uptimeMs, retryInMs: delay }, 'worker died');
    this.restarted();
    slot.retry = setTimeout(() => this.fork(slot), delay);
  }

  /**
   * SIGHUP: a fresh worker for each slot, one at a time; the old one drains
   * once the fresh one is ready (ready()). A slot whose worker died and is
   * being replaced anyway gets that replacement, not a second one.
   */
  async rollingRestart() {
    if (this.restarting || this.stopping) return;
    this.restarting = true;
    this.log.info('rolling restart');
    for (const slot of this.slots) {
      if (this.stopping) break;
      const old = slot.worker;
      if (!(await startedOf(this.fork(slot))) || old === null) continue;
      await exitOf(old, this.config.drainTimeout + EXIT_GRACE_MS);
    }
    this.restarting = false;
    this.log.info('rolling restart done');
  }

  /** Shutdown: every worker closes its clients over drain-timeout, then exits. */
  async drain() {
    this.stopping = true;
    for (const slot of this.slots) clearTimeout(slot.retry);
    const workers = Object.values(cluster.workers);
    for (const worker of workers) worker.send({ type: Message.DRAIN, spreadMs: this.config.drainTimeout });
    await Promise.all(workers.map((w) => exitOf(w, this.config.drainTimeout + EXIT_GRACE_MS)));
  }

  /** Second signal: no more waiting. */
  kill() {
    for (const worker of Object.values(cluster.workers)) worker.process.kill('SIGKILL');
  }
}

/** Resolves true once the worker is ready, false if it dies first. */
function startedOf(worker) {
  return new Promise((resolve) => {
    const done = (started) => {
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      resolve(started);
    };
    const onMessage = (msg) => msg?.type === Message.READY && done(true);
    const onExit = () => done(false);
    worker.on('message', onMessage);
    worker.on('exit', onExit);
  });
}

/** Resolves when the worker has exited, killing it if it takes longer than `ms`. */
function exitOf(worker, ms) {
  if (worker.isDead()) return Promise.resolve();
  const timer = setTimeout(() => worker.process.kill('SIGKILL'), ms);
  return once(worker, 'exit').finally(() => clearTimeout(timer));
}

// Workers inherit the primary's own Node flags (--cpu-prof reaches them this
// way), then --expose-gc and the heap options; V8 takes the last of a repeated
// flag, so the gateway's options win: however the primary was started, its
// workers hold connections with the same young-generation cap.
function workerExecArgv(config) {
  const argv = [...process.execArgv, '--expose-gc', `--max-semi-space-size=${config.maxSemiSpaceSize}`];
  if (config.maxOldSpaceSize) argv.push(`--max-old-space-size=${config.maxOldSpaceSize}`);
  return argv;
}
