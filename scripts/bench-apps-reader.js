#!/usr/bin/env node
// The apps table beside a reader, loopback only, bounded in time: a throwaway
// PostgreSQL with the table (made by the gateway under test, one app in it),
// then another session holding a read transaction on it for --hold-s seconds
// (a pg_dump, a report, a forgotten BEGIN). Meanwhile, for this tree and,
// with --old DIR, another checkout's, one after the other: how long a gateway
// takes from spawn to ready, how long `gateway apps list` takes, and, with the
// gateway's sessions cut (its reconnect), how long another session's UPDATE
// of the table takes (given up at the hold's end). Every wait is bounded by
// the hold: a figure equal to it means "blocked until the reader left".
//
//   node scripts/bench-apps-reader.js [--old DIR] [--hold-s 15] [--json scripts/results/apps-reader.json]
import '../lib/runtime/node-version.js';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { scriptArgs } from './harness/args.js';
import { startGateway } from './harness/gateway.js';
import { PostgresServer } from './harness/postgres.js';

const { values } = scriptArgs({
  usage: '[--old DIR] [--hold-s 15] [--json scripts/results/apps-reader.json]',
  options: { old: { type: 'string', default: '' }, 'hold-s': { type: 'string', default: '15' }, json: { type: 'string', default: 'scripts/results/apps-reader.json' } }
});
const holdMs = Number(values['hold-s']) * 1000;
if (!(holdMs >= 1000 && holdMs <= 60000)) throw new Error('--hold-s 1..60');
const run = promisify(execFile);
const trees = [{ label: 'gateway', root: fileURLToPath(new URL('..', import.meta.url)) }];
if (values.old !== '') trees.push({ label: 'old gateway', root: path.resolve(values.old) });

const results = [];
for (const tree of trees) results.push(await measure(tree));
console.table(results);
writeFileSync(values.json, `${JSON.stringify({ at: new Date().toISOString(), holdMs, results }, null, 2)}\n`);

async function measure({ label, root }) {
  const bin = path.join(root, 'bin/gateway.js');
  const pg = await PostgresServer.start();
  const env = { GATEWAY_APPS_DATABASE: pg.url };
  try {
    const first = await startGateway(['--workers', '1'], { env, gateway: bin });
    await first.stop();
    await pg.query("INSERT INTO gateway_apps (id, key, secret) VALUES ('reader', 'reader-key', 'a-database-secret-0123456789')");
    let gw;
    const startMs = await underReader(pg, async () => {
      gw = await startGateway(['--workers', '1'], { env, gateway: bin, timeout: holdMs + 10000 });
    });
    const listMs = await underReader(pg, () => run(process.execPath, [bin, 'apps', 'list', '--apps-database', pg.url], { timeout: holdMs + 10000 }));
    let write;
    const writeMs = await underReader(pg, async () => {
      // Every session but this one and the reader's: the gateway's, which reconnects (a first retry after 250 ms).
      await pg.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND state <> 'idle in transaction'");
      await new Promise((resolve) => setTimeout(resolve, 1000));
      write = await pg.query(`SET statement_timeout = ${holdMs}; UPDATE gateway_apps SET enabled = false WHERE id = 'reader'`).then(
        () => 'committed',
        (err) => err.message
      );
    }, 1000);
    await gw.stop();
    const ms = (v) => Math.round(v);
    return { label, holdMs, startMs: ms(startMs), listMs: ms(listMs), otherWriteMs: ms(writeMs), otherWrite: write };
  } finally {
    await pg.remove();
  }
}

/**
 * ms `step` took while another session held a read transaction on the table,
 * released once the step is done or after the hold, whichever comes first.
 * @param {number} [less] ms of the step that are not the figure (a wait it makes on purpose)
 */
async function underReader(pg, step, less = 0) {
  const reader = await pg.holdRead('gateway_apps');
  const timer = setTimeout(() => reader.release(), holdMs);
  const started = performance.now();
  try {
    await step();
    return performance.now() - started - less;
  } finally {
    clearTimeout(timer);
    await reader.release().catch(() => {});
  }
}
