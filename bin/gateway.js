#!/usr/bin/env node
// The gateway's command line: `gateway [options]` starts the primary, which
// forks the workers; `gateway doctor ...` checks this machine's limits;
// `gateway apps ...` manages the Pusher apps table.
import '../lib/runtime/node-version.js'; // first: an unsupported Node stops here, with one line
import { exitOnUsageError } from '../lib/config/cli.js';
import { gatewayConfig } from '../lib/config/file.js';

const argv = process.argv.slice(2);

if (argv[0] === 'doctor') {
  const { main } = await import('../lib/doctor/cli.js');
  process.exitCode = await main(argv.slice(1));
} else if (argv[0] === 'apps') {
  const { main } = await import('../lib/primary/apps-cli.js');
  process.exitCode = await main(argv.slice(1));
} else {
  const config = await gatewayConfig(argv).catch(exitOnUsageError);
  const { startPrimary } = await import('../lib/primary/index.js');
  startPrimary(config);
}
