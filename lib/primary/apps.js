// The primary's Pusher apps: the flags' and config file's, and the apps
// table's (./apps-database.js) beside them, merged into this process's one
// table (`apps`, made by the wiring: lib/primary/index.js), which the
// engine's namespaces and the webhooks read. Every change goes to every worker as the apps changed and
// the ids removed (Op.APPS); a worker that comes up is sent them all. A row
// of the table that cannot be served (a bad value, an id or key another
// source holds) is refused alone, logged once with its reason.
import { Op } from '../core/ipc.js';
import { configApps, mergeApps, servesPusher } from '../pusher/apps.js';
import { AppsDatabase, appOfRow, withoutPassword } from './apps-database.js';
import { TABLE, waitedFor } from './apps-schema.js';
import { attachCounts } from './counts.js';
import { attachAppRates } from './app-rates.js';

/**
 * @param {object} options
 * @param {object} options.config resolved
 * @param {import('./relay.js').PrimaryRelay} options.relay
 * @param {import('../engines/index.js').Engine} options.engine
 * @param {import('../pusher/apps.js').Apps} options.apps this process's apps, kept current here
 * @param {import('pino').Logger} options.log
 * @returns {Promise<{configure: (config: object) => void, connections: Map<string, number>, close: () => Promise<void>}>}
 *   connections: each app's connections on this node
 * @throws {Error} the apps database cannot be reached or set up (naming it)
 */
export async function startApps({ config, relay, engine, apps: appTable, log }) {
  let current = config;
  let rows = new Map(); // the database's rows by id
  let logged = new Map(); // source -> the refusal logged for it
  const database =
    config.appsDatabase === undefined
      ? undefined
      : new AppsDatabase({ url: config.appsDatabase, lockTimeoutMs: config.appsDatabaseLockTimeout, statementTimeoutMs: config.appsDatabaseStatementTimeout });

  const tell = (op) => relay.broadcast(op);
  const refresh = () => {
    const fromTable = [...rows.values()]
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((row) => ({ app: appOfRow(row), source: `${TABLE} row ${JSON.stringify(row.id)}` }));
    const { apps, refused } = mergeApps([...configApps(current), ...fromTable]);
    const now = new Map(refused.map(({ source, problem }) => [source, problem]));
    for (const [source, problem] of now) if (logged.get(source) !== problem) log.error({ app: source, problem }, `Pusher app refused: ${source}: ${problem}`);
    logged = now;
    const { upserts, removed } = appTable.replace(apps);
    if (upserts.length > 0 || removed.length > 0) tell([Op.APPS, upserts, removed, appTable.degraded]);
  };
  const degrade = (degraded) => {
    appTable.degraded = degraded;
    tell([Op.APPS, [], [], degraded]);
  };

  if (database !== undefined) {
    database.on('apps', (all) => {
      rows = all;
      refresh();
    });
    database.on('rows', (changed) => {
      for (const [id, row] of changed) {
        if (row === null) rows.delete(id);
        else rows.set(id, row);
      }
      refresh();
    });
    database.on('down', (err) => {
      log.error({ err: err.message, database: withoutPassword(config.appsDatabase) }, 'apps database lost: the apps loaded are kept; trying again');
      degrade(true);
    });
    database.on('migrated', ({ from, to }) => log.info({ table: TABLE, from, to }, `apps table brought to schema ${to} (was ${from})`));
    database.on('behind', ({ version, err, againMs }) => {
      const why = waitedFor(err) ?? `failed: ${err.message}`;
      log.warn({ table: TABLE, version, err: err.message }, `apps table left at schema ${version}: the change ${why}; its apps are served as they are, the change tried again in ${againMs / 1000} s`);
    });
    database.on('up', () => {
      log.info({ database: withoutPassword(config.appsDatabase) }, 'apps database back: apps read again');
      degrade(false);
    });
    await database.start();
  } else {
    refresh();
  }
  let connections = new Map();
  if (servesPusher(config)) {
    relay.onAttach((link) => link.send([Op.APPS, appTable.list, null, appTable.degraded]));
    // Each app's connections, exact across workers (and nodes): its maxConnections is checked here.
    connections = attachCounts(relay, {
      ops: { add: Op.APP_ADD, del: Op.APP_DEL },
      capOf: (id) => appTable.byId.get(id)?.maxConnections ?? Infinity,
      remote: engine.appConnections
    });
    attachAppRates(relay, engine.appRates, appTable);
  }
  return {
    connections,
    /** SIGHUP: the flags' and file's apps as they are now. */
    configure(next) {
      current = next;
      refresh();
    },
    close: async () => database?.stop()
  };
}

/**
 * What a worker starts with beside its configuration: the apps, and whether more may come.
 * @param {import('../pusher/apps.js').Apps} apps this process's
 */
export function workerApps(config, apps) {
  return { apps: apps.list, appsLive: config.appsDatabase !== undefined };
}
