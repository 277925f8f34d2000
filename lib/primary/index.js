// The primary process: the public listener, the workers, the publish relay and
// the metrics endpoint; and the signals: SIGTERM/SIGINT drain, SIGHUP rolls.
import { once } from 'node:events';
import { createLogger } from '../logger.js';
import { GatewayMaster } from './master.js';
import { Balancer } from './balancer.js';
import { Supervisor } from './supervisor.js';
import { PrimaryRelay } from './relay.js';
import { createEngine } from '../engines/index.js';
import { attachUsers } from './users.js';
import { startClusterStats } from './cluster-stats.js';
import { createPrimaryMetrics, serveMetrics } from './metrics.js';
import { readProxyHeader } from './proxy-protocol.js';
import { statusPage } from './status-page.js';
import { capacityWarnings, workerCapacity } from '../doctor/limits.js';

/** @param {object} config resolved gateway configuration (lib/config.js) */
export async function startPrimary(config) {
  const log = createLogger(config.logLevel, { role: 'primary' });
  const engine = await createEngine(config, log);
  const metrics = createPrimaryMetrics({ liveWorkers: () => supervisor.live().length, engine });
  const relay = new PrimaryRelay({ engine, onPublish: (n) => metrics.relayed.inc(n) });
  if (config.auth === 'jwt') attachUsers(relay, config.maxConnsPerUser, engine);
  const supervisor = new Supervisor({ config, relay, log, restarted: () => metrics.restarts.inc() });
  const master = new GatewayMaster({
    supervisor,
    balancer: new Balancer(config.balance, workerCapacity(config)),
    readProxyHeader: config.proxyProtocol ? (socket) => readProxyHeader(socket, config.proxyTimeout) : undefined,
    refused: (reason) => metrics.refused.inc({ reason })
  });

  master.on('error', (err) => {
    log.fatal({ err: err.message, code: err.code }, 'public listener failed');
    process.exit(1);
  });
  master.listen({ port: config.port, host: config.host, backlog: config.backlog });
  await once(master, 'listening');
  const { address, port } = master.address();
  log.info({ address, port, backlog: config.backlog }, 'listening');
  for (const warning of capacityWarnings(config)) log.warn(warning);
  if (config.auth === 'none') log.warn('--auth none: anyone who reaches the port may subscribe and publish to any channel');

  const clusterStats = startClusterStats(relay);
  let metricsServer;
  if (config.metricsPort !== 0) {
    metricsServer = await serveMetrics({
      host: config.metricsHost,
      port: config.metricsPort,
      registry: metrics.registry,
      log,
      stats: clusterStats.latest,
      page: statusPage({ port, path: config.path, tls: config.tlsCert !== undefined })
    });
  }

  supervisor.start();
  await readyAll(supervisor, config.workers);
  log.info(
    { port, path: config.path, workers: config.workers, metricsPort: metricsServer?.address().port ?? 0 },
    'gateway ready'
  );

  process.on('SIGHUP', () => supervisor.rollingRestart());
  let stopping = false;
  const stop = async (signal) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      supervisor.kill();
      process.exit(1);
    }
    stopping = true;
    log.info({ signal, drainTimeout: config.drainTimeout }, 'draining');
    master.close(); // no new connections; the load balancer sees the port closed
    await supervisor.drain();
    clusterStats.stop();
    metricsServer?.close();
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

function readyAll(supervisor, count) {
  return new Promise((resolve) => {
    const check = () => {
      if (supervisor.live().length < count) return;
      supervisor.off('ready', check);
      resolve();
    };
    supervisor.on('ready', check);
  });
}
