// `gateway doctor`: checks this machine's limits against N connections over W
// workers, prints OK/WARN/FAIL per limit with the fix, and resolves to the
// exit code: 1 when a limit would stop N connections, else 0 (2 for bad flags).
import { parseCommandLine, exitOnUsageError } from '../config/cli.js';
import { options as gatewayOptions } from '../config/options.js';
import { readSnapshot } from '../runtime/proc.js';
import { checkLimits, UNCAPPED_PER_WORKER } from './limits.js';
import { formatReport } from './format.js';
import { Status } from './status.js';

const options = {
  connections: {
    type: 'number',
    integer: true,
    min: 1,
    max: 1e9,
    defaultDescription: `${UNCAPPED_PER_WORKER} × --workers`,
    describe: 'connections to check for, over all workers'
  },
  workers: gatewayOptions.workers,
  backlog: gatewayOptions.backlog,
  balance: gatewayOptions.balance,
  root: { type: 'string', default: '/', describe: 'folder holding the proc/ tree to read (tests point it at fixtures)' },
  json: { type: 'boolean', default: false, describe: 'print the results as JSON' }
};

/**
 * @param {string[]} argv the arguments after `doctor`
 * @returns {Promise<number>} the exit code
 */
export async function main(argv) {
  const { connections, workers, backlog, balance, root, json } = await parseCommandLine({
    argv,
    table: options,
    usage: 'gateway doctor [options]',
    epilogue: 'Exits 1 when a limit would stop the connections, 0 otherwise. sudo scripts/tune.sh applies the sysctl fixes.'
  }).catch(exitOnUsageError);
  const target = { connections: connections ?? UNCAPPED_PER_WORKER * workers, workers, backlog, balance };
  const results = checkLimits(readSnapshot(root), target);
  const failed = results.some((r) => r.status === Status.FAIL);
  process.stdout.write(json ? `${JSON.stringify({ ...target, ok: !failed, limits: results }, null, 2)}\n` : formatReport(results, target));
  return failed ? 1 : 0;
}
