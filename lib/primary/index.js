// The primary process: the public listener, the workers, the publish relay and
// the metrics endpoint; and the signals: SIGTERM/SIGINT drain, SIGHUP rolls.
import { once } from 'node:events';
import { createLogger } from '../runtime/logger.js';
import { GatewayMaster } from './master.js';
import { Balancer } from './balancer.js';
import { Supervisor } from './supervisor.js';
import { PrimaryRelay } from './relay.js';
import { createEngine } from '../engines/index.js';
import { attachUsers } from './users.js';
import { attachCalls } from './calls.js';
import { attachIpCounts } from './ip-counts.js';
import { attachPresence } from './presence.js';
import { ipCapInPrimary } from '../config/options.js';
import { withholdSecretVariables } from '../config/file.js';
import { Op } from '../core/ipc.js';
import { clusterStats } from './cluster-stats.js';
import { createPrimaryMetrics, serveMetrics } from './metrics.js';
import { readProxyHeader } from '../transport/proxy-protocol.js';
import { statusPage } from './status-page.js';
import { capacityWarnings, capacityNote } from '../doctor/limits.js';
import { workerCapacity } from '../runtime/capacity.js';
import { checkWs } from '../runtime/internals.js';
import { probeHandOver } from './probe.js';
import { reservePort } from './reuseport.js';
import { reloadConfig } from './reload.js';
import { startWebhooks } from '../webhooks/index.js';
import { WebhookDelivery } from '../webhooks/delivery.js';
import { attachProtocols, protocolNamespaces } from '../wiring/ways-in.js';
import { NATIVE_APP } from '../core/namespaces.js';
import { createAdmin } from '../admin/routes.js';
import { attachAdminCalls } from './admin-calls.js';
import { startApps } from './apps.js';
import { Apps, servesPusher } from '../pusher/apps.js';
import { readyFields } from './ready-line.js';
import { ListenError } from '../core/errors.js';

const SETTLE_MS = 2000;

/** @param {object} config resolved gateway configuration (lib/config/options.js) */
export async function startPrimary(config) {
  const withheld = withholdSecretVariables(); // before anything is forked: a child inherits the environment
  const log = createLogger(config.logLevel, { role: 'primary' }, config.logFormat);
  const refuse = (err) => {
    log.fatal({ err: err.message, code: err.code }, 'cannot start');
    process.exit(1);
  };
  try {
    checkWs();
  } catch (err) {
    refuse(err);
  }
  const apps = new Apps(); // this process's: kept current by startApps, read by the engine's namespaces and the protocols
  const engine = await createEngine(config, log, protocolNamespaces(apps)).catch(refuse);
  const metrics = createPrimaryMetrics({ liveWorkers: () => supervisor.live().length, engine });
  engine.instrument?.({
    published: (seconds, count) => {
      for (let i = 0; i < count; i++) metrics.publishLatency.observe(seconds);
    },
    failedOver: () => metrics.failovers.inc()
  });
  // The per-user view of presence (the webhooks' seam): counted here, once per arrival and departure cluster-wide.
  engine.onMember((channel, user, present) => {
    metrics.memberChanges.inc({ change: present ? 'arrived' : 'departed' });
    log.debug({ channel, user, present }, 'presence member');
  });
  const countWebhooks = (result, events, app = NATIVE_APP) => metrics.webhookEvents.inc({ result, app }, events);
  const delivery = new WebhookDelivery({ count: countWebhooks, log });
  const webhooks = startWebhooks({ config, engine, delivery, log });
  const relay = new PrimaryRelay({
    engine,
    onPublish: (n) => metrics.relayed.inc(n),
    // The primary's event loop is worth measuring while the workers hold sockets (they report then).
    onStats: () => metrics.loopDelay.set([...relay.figures.values()].some((w) => w.sockets > 0))
  });
  const appSources = await startApps({ config, relay, engine, apps, log }).catch(refuse);

  if (config.auth !== 'none') attachUsers(relay, config.maxConnsPerUser, engine); // jwt and hook: every connection has a user
  const calls = attachCalls(relay, engine.calls, config);
  const protocols = attachProtocols({ config, apps, engine, relay, calls, delivery, log });
  attachPresence(relay, engine);
  if (ipCapInPrimary(config)) attachIpCounts(relay, config.maxConnsPerIp);
  // Under reuseport the workers' own listeners refuse what the primary's would (a bad PROXY header).
  relay.handle(Op.REFUSED, (link, [, reason]) => metrics.refused.inc({ reason }));
  const supervisor = new Supervisor({ config, relay, log, restarted: () => metrics.restarts.inc(), apps });
  // Who accepts: the primary, handing each connection to a worker (ip,
  // even), or each worker on its own listener (reuseport).
  const { address, port, close } = config.balance === 'reuseport' ? await sharePort(config, refuse) : await listenHere(config, { supervisor, metrics, log });
  log.info({ address, port, backlog: config.backlog, balance: config.balance }, 'listening');
  for (const warning of capacityWarnings(config)) log.warn(warning);
  const note = capacityNote(config);
  if (note !== undefined) log.info(note);
  if (config.auth === 'none') log.warn('--auth none: anyone who reaches the port may subscribe and publish to any channel');

  const view = clusterStats(relay);
  let metricsServer;
  if (config.metricsPort !== 0) {
    metricsServer = await serveMetrics({
      host: config.metricsHost,
      port: config.metricsPort,
      registry: metrics.registry,
      log,
      stats: view.latest,
      page: statusPage({ port, path: config.path, tls: config.tlsCert !== undefined }),
      admin:
        config.adminPassword === undefined
          ? undefined
          : createAdmin({
              password: config.adminPassword,
              call: attachAdminCalls(relay),
              stats: view.latest,
              counted: (result) => metrics.adminLogins.inc({ result }),
              appConnections: servesPusher(config) ? () => appSources.connections : undefined,
              maxPayload: config.maxPayload,
              log
            })
    }).catch(refuse);
  }

  supervisor.start();
  await readyAll(supervisor, config.workers);
  if (config.balance !== 'reuseport') {
    await probeHandOver(supervisor.live()[0].worker).catch((err) => {
      supervisor.kill();
      refuse(err);
    });
  }
  log.info(readyFields(config, { port, metricsPort: metricsServer?.address().port ?? 0 }), 'gateway ready');

  process.on('SIGHUP', async () => {
    const next = await reloadConfig(supervisor.config, withheld, log);
    if (next === undefined) return;
    supervisor.config = next;
    appSources.configure(next);
    engine.configure(next);
    supervisor.rollingRestart();
  });
  let stopping = false;
  const stop = async (signal) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      supervisor.kill();
      process.exit(1);
    }
    stopping = true;
    log.info({ signal, drainTimeout: config.drainTimeout }, 'draining');
    close(); // no new connections; the load balancer sees the port closed
    await supervisor.drain();
    // The drained clients' last leaves reach the engine's store (Redis) before the process goes, and the other nodes stop counting on
    // this one for the cluster's calls; a store that does not answer is not waited for long.
    await Promise.race([Promise.all([engine.presence.settled(), engine.calls?.leave()]), new Promise((resolve) => setTimeout(resolve, SETTLE_MS))]);
    await Promise.all([webhooks?.close(), protocols.close(), appSources.close()]);
    await delivery.close();
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

/** The primary's listener (--balance ip, even): sticky-session's Master, taking over each connection's handle. */
async function listenHere(config, { supervisor, metrics, log }) {
  let stallsLogged = 0;
  const master = new GatewayMaster({
    supervisor,
    balancer: new Balancer(config.balance, workerCapacity(config)),
    readProxyHeader: config.proxyProtocol ? (socket) => readProxyHeader(socket, config.proxyTimeout) : undefined,
    refused: (reason) => metrics.refused.inc({ reason }),
    stalled: () => {
      metrics.handoverStalls.inc();
      if (stallsLogged++ === 0) log.warn('a worker did not acknowledge a connection within a second: moved on (gateway_handover_stalls_total counts each)');
    }
  });
  master.on('error', (err) => {
    const failed = err.syscall === 'listen' ? new ListenError('--port', err) : err;
    log.fatal({ err: failed.message, code: failed.code }, 'public listener failed');
    process.exit(1);
  });
  master.listen({ port: config.port, host: config.host, backlog: config.backlog });
  await once(master, 'listening');
  return { ...master.address(), close: () => master.close() };
}

/** --balance reuseport: the workers listen; the primary checks they can and settles the port they share. */
async function sharePort(config, refuse) {
  config.port = await reservePort(config).catch(refuse);
  // Each worker stops listening as it drains (lib/worker/index.js).
  return { address: config.host, port: config.port, close: () => {} };
}
