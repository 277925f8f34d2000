// `gateway apps list|add|set|remove|migrate`: the apps table
// (--apps-database, or GATEWAY_APPS_DATABASE) from the command line. Only
// `migrate` changes the schema (./apps-schema.js, as a gateway's first start
// does); the others run no DDL, and every statement is bounded by the same
// lock and statement timeouts as the gateway's. Each app's fields are
// options named as the table's columns are (--client-events,
// --max-connections 500, --webhooks '[{"url": …}]'), checked as the gateway
// checks a row before anything is written. `add` makes the secret (and the
// key, unless given) and prints the secret once; `set --rotate-secret`
// makes a new one. The running gateways pick every change up by themselves.
import { randomBytes } from 'node:crypto';
import { parseCommandLine, exitOnUsageError, UsageError, camel, checkOption } from '../config/cli.js';
import { options as gatewayOptions } from '../config/options.js';
import { APP_FIELDS, appProblem } from '../pusher/apps.js';
import { appOfRow, openAppsDatabase } from './apps-database.js';
import { migrate, schemaVersion, SCHEMA_VERSION, TABLE, waitedFor } from './apps-schema.js';

const ACTIONS = ['list', 'add', 'set', 'remove', 'migrate'];
const NONE = 'none'; // a limit's value for "no limit"
// The fields given as options: every column but the secret, which is made here, never typed.
const FIELDS = Object.entries(APP_FIELDS).filter(([key, field]) => field.column !== undefined && key !== 'secret');

const options = {
  'apps-database': { ...gatewayOptions['apps-database'], describe: 'the PostgreSQL URL of the apps table (default: GATEWAY_APPS_DATABASE)' },
  'apps-database-lock-timeout': gatewayOptions['apps-database-lock-timeout'],
  'apps-database-statement-timeout': gatewayOptions['apps-database-statement-timeout'],
  ...Object.fromEntries(
    FIELDS.map(([key, field]) => [
      field.column.replaceAll('_', '-'),
      typeof field.default === 'boolean' ? { type: 'boolean', describe: `the app's ${key}` } : { type: 'string', describe: describe(key, field) }
    ])
  ),
  'rotate-secret': { type: 'boolean', describe: 'set: make a new secret (printed once)' },
  json: { type: 'boolean', default: false, describe: 'list: print JSON' }
};

/**
 * @param {string[]} argv the arguments after `apps`
 * @returns {Promise<number>} the exit code
 */
export async function main(argv) {
  const [action, ...rest] = argv;
  const usage = `gateway apps <${ACTIONS.join('|')}> [options]`;
  if (!ACTIONS.includes(action) && action !== '--help') {
    process.stderr.write(`error: ${action === undefined ? 'no action' : `unknown action ${JSON.stringify(action)}`}: ${usage}\n`);
    return 2;
  }
  const given = await parseCommandLine({
    argv: ACTIONS.includes(action) ? rest : ['--help'],
    table: options,
    usage,
    epilogue: 'Fields not given keep their value (set) or take the table default (add). A limit of "none" removes it.'
  }).catch(exitOnUsageError);
  const url = given.appsDatabase ?? process.env.GATEWAY_APPS_DATABASE;
  if (url === undefined) exitOnUsageError(new UsageError('give --apps-database postgres://… or GATEWAY_APPS_DATABASE'));
  let fields;
  try {
    fields = fieldsOf(given);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`error: ${err.message}\n`);
    return 2;
  }
  let client;
  try {
    client = await openAppsDatabase(url, { lockTimeoutMs: given.appsDatabaseLockTimeout, statementTimeoutMs: given.appsDatabaseStatementTimeout, name: 'gateway apps' });
  } catch (err) {
    process.stderr.write(`error: ${err.message}\n`);
    return 1;
  }
  try {
    if (action === 'migrate') return await upgrade(client);
    const version = await schemaVersion(client);
    if (version === 0) throw Object.assign(new UsageError(`no table ${TABLE} in this database: \`gateway apps migrate\` makes it (so does a gateway's first start)`), { exitCode: 1 });
    if (version < SCHEMA_VERSION) process.stderr.write(`note: ${TABLE} is at schema ${version}, this gateway's is ${SCHEMA_VERSION}: \`gateway apps migrate\` brings it up to date\n`);
    return await run(action, given, fields, client);
  } catch (err) {
    const waited = waitedFor(err);
    if (waited !== undefined) {
      process.stderr.write(`error: the statement ${waited}; nothing was changed: try again, or with a longer --apps-database-lock-timeout\n`);
      return 1;
    }
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`error: ${err.message}\n`);
    return err.exitCode ?? 2;
  } finally {
    await client.end();
  }
}

async function run(action, given, fields, client) {
  if (action === 'list') return list(client, given.json);
  if (action === 'add') {
    const app = { appId: fields.appId ?? randomId(), key: fields.key ?? randomBytes(10).toString('hex'), secret: randomSecret(), ...fields };
    await write(client, app, 'INSERT');
    print(`added app ${app.appId}\n  key:    ${app.key}\n  secret: ${app.secret}\n(the secret is shown this once: keep it in your backend's environment)\n`);
    return 0;
  }
  if (fields.appId === undefined) throw new UsageError(`${action} needs --id`);
  const { rows } = await client.query(`SELECT * FROM ${TABLE} WHERE id = $1`, [fields.appId]);
  if (rows.length === 0) throw Object.assign(new UsageError(`no app ${fields.appId}`), { exitCode: 1 });
  if (action === 'remove') {
    await client.query(`DELETE FROM ${TABLE} WHERE id = $1`, [fields.appId]);
    print(`removed app ${fields.appId}\n`);
    return 0;
  }
  const app = { ...appOfRow(rows[0]), ...fields };
  if (given.rotateSecret) app.secret = randomSecret();
  await write(client, app, 'UPDATE');
  print(`updated app ${app.appId}${given.rotateSecret ? `\n  secret: ${app.secret}\n(the secret is shown this once)` : ''}\n`);
  return 0;
}

/** `migrate`: the table made or brought up to date, once (./apps-schema.js). */
async function upgrade(client) {
  const { from, to } = await migrate(client);
  print(from < to ? `${TABLE}: schema ${to} (was ${from === 0 ? 'no table' : from})\n` : `${TABLE}: schema ${to} already\n`);
  return 0;
}

async function list(client, json) {
  const { rows } = await client.query(`SELECT * FROM ${TABLE} ORDER BY id`);
  const apps = rows.map((row) => {
    const { secret, ...shownFields } = appOfRow(row);
    // Secrets are shown once, when made: a further key's too.
    if (shownFields.ablyKeys !== undefined) shownFields.ablyKeys = shownFields.ablyKeys.map(({ keyId, capability }) => ({ keyId, capability }));
    return shownFields;
  });
  if (json) {
    print(`${JSON.stringify(apps, null, 2)}\n`);
    return 0;
  }
  for (const app of apps) {
    const settings = Object.entries(app)
      .filter(([key]) => key !== 'appId' && key !== 'key')
      .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
      .join(' ');
    print(`${app.appId}\t${app.key}\t${settings}\n`);
  }
  if (apps.length === 0) print('no apps\n');
  return 0;
}

/** Checks the whole app as the gateway would, then writes it. */
async function write(client, app, verb) {
  const problem = appProblem(app);
  if (problem !== undefined) throw new UsageError(problem);
  const entries = Object.entries(APP_FIELDS).filter(([key, field]) => field.column !== undefined && app[key] !== undefined);
  const columns = entries.map(([, field]) => field.column);
  const values = entries.map(([key, field]) => (field.json !== undefined && app[key] !== null ? JSON.stringify(app[key]) : app[key]));
  try {
    if (verb === 'INSERT') {
      await client.query(`INSERT INTO ${TABLE} (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`, values);
    } else {
      await client.query(`UPDATE ${TABLE} SET ${columns.map((column, i) => `${column} = $${i + 1}`).join(', ')} WHERE id = $${columns.length + 1}`, [...values, app.appId]);
    }
  } catch (err) {
    if (err.code === '23505') throw Object.assign(new UsageError(`the id or key is taken: ${err.detail ?? err.message}`), { exitCode: 1 }); // unique_violation
    throw err;
  }
}

/** The app fields given as options, as the config file spells them. */
function fieldsOf(given) {
  const out = {};
  for (const [key, field] of FIELDS) {
    const value = given[camel(field.column.replaceAll('_', '-'))];
    if (value === undefined) continue;
    out[key] = parseValue(key, field, value);
  }
  return out;
}

function parseValue(key, field, value) {
  if (typeof value === 'boolean' || key === 'appId' || key === 'key') return value;
  if (value === NONE && field.default === null) return null;
  if (field.json !== undefined) {
    try {
      return JSON.parse(value);
    } catch {
      throw new UsageError(`--${field.column.replaceAll('_', '-')} must be JSON: ${field.json}`);
    }
  }
  // Number('') and Number(' ') are 0: blank text is no number.
  const number = value.trim() === '' ? NaN : Number(value);
  const problem = checkOption(field.column.replaceAll('_', '-'), field.number, number, value);
  if (problem !== undefined) throw new UsageError(field.default === null ? `${problem}, or ${NONE}` : problem);
  return number;
}

function describe(key, field) {
  if (key === 'appId') return 'the app id (add: made up when not given)';
  if (key === 'key') return 'the app key, public (add: made up when not given)';
  if (field.json !== undefined) return `JSON: ${field.json}${field.default === null ? ` (or ${NONE})` : ''}`;
  return `${key}${field.default === null ? ` (or ${NONE})` : ''}; default ${field.default === null ? NONE : field.default}`;
}

function randomId() {
  return String(100000 + (randomBytes(4).readUInt32BE() % 900000));
}

function randomSecret() {
  return randomBytes(24).toString('base64url');
}

function print(text) {
  process.stdout.write(text);
}
