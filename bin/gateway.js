#!/usr/bin/env node
// The gateway's command line: `gateway [options]` starts the primary, which
// forks the workers; `gateway doctor ...` checks this machine's limits.
import '../lib/runtime.js'; // first: an unsupported Node stops here, with one line
import { parseCommandLine, exitOnUsageError } from '../lib/cli.js';
import { options, checkCombinations } from '../lib/config.js';

const argv = process.argv.slice(2);

if (argv[0] === 'doctor') {
  const { main } = await import('../lib/doctor/cli.js');
  process.exitCode = await main(argv.slice(1));
} else {
  const config = await parseCommandLine({
    argv,
    table: options,
    usage: 'gateway [options]',
    envPrefix: 'GATEWAY',
    epilogue: 'Every flag can also be set as GATEWAY_<FLAG> (dashes as underscores). `gateway doctor --help` checks this machine.'
  })
    .then(checkCombinations)
    .catch(exitOnUsageError);
  const { startPrimary } = await import('../lib/primary/index.js');
  startPrimary(config);
}
