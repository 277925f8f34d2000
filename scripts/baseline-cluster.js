#!/usr/bin/env node
// Baseline for the benchmarks: the gateway's own worker code behind Node's
// built-in cluster (round-robin accept in the primary) instead of the sticky
// primary. Workers call startWorker() and listen on the shared port
// themselves; the primary relays publishes with the gateway's PrimaryRelay,
// so what differs from the gateway is only how connections reach a worker.
// GET /stats is on --metrics-host:--metrics-port, as the gateway's.
//
//   node scripts/baseline-cluster.js [gateway flags: --port, --workers, --ping-interval, ...]
import cluster from 'node:cluster';

if (cluster.isPrimary) {
  await primary();
} else {
  const { startWorker } = await import('../lib/worker/index.js');
  const { whenStarted } = await import('../lib/core/ipc.js');
  whenStarted((config, n) => startWorker(config, n).server.listen(config.port, config.host));
}

async function primary() {
  const { parseCommandLine, exitOnUsageError } = await import('../lib/config/cli.js');
  const { options, workerConfig } = await import('../lib/config/options.js');
  const { PrimaryRelay } = await import('../lib/primary/relay.js');
  const { MemoryEngine } = await import('../lib/engines/memory.js');
  const { clusterStats } = await import('../lib/primary/cluster-stats.js');
  const { Message } = await import('../lib/core/ipc.js');
  const config = await parseCommandLine({ argv: process.argv.slice(2), table: options, usage: 'baseline-cluster [options]' }).catch(
    exitOnUsageError
  );

  const relay = new PrimaryRelay({ engine: new MemoryEngine(config), onPublish() {} });
  const view = clusterStats(relay);
  const { default: http } = await import('node:http');
  http
    .createServer((req, res) => {
      // As the gateway: 503 until the workers' first figures are in.
      const stats = view.latest();
      res.writeHead(stats ? 200 : 503, { 'Content-Type': 'application/json' }).end(JSON.stringify(stats ?? { error: 'starting' }));
    })
    .listen(config.metricsPort, config.metricsHost);
  cluster.schedulingPolicy = cluster.SCHED_RR;
  // The gateway's workers run with --expose-gc for the periodic GC; so do these.
  const execArgv = ['--expose-gc'];
  if (config.maxOldSpaceSize) execArgv.push(`--max-old-space-size=${config.maxOldSpaceSize}`);
  if (config.maxSemiSpaceSize) execArgv.push(`--max-semi-space-size=${config.maxSemiSpaceSize}`);
  cluster.setupPrimary({ args: [], execArgv }); // the configuration goes over IPC, as the gateway's

  let listening = 0;
  for (let n = 1; n <= config.workers; n++) {
    const worker = cluster.fork();
    worker.on('message', (msg) => {
      if (msg?.type === Message.START) worker.send({ type: Message.START, config: workerConfig(config), worker: n });
      else if (msg?.type === Message.READY) relay.attach(worker);
      else if (msg?.type === Message.BATCH) relay.receive(worker, msg.ops);
    });
    worker.on('listening', () => {
      if (++listening === config.workers) console.log(JSON.stringify({ msg: 'baseline ready', port: config.port, workers: config.workers }));
    });
    worker.on('exit', (code, signal) => {
      console.error(`worker ${n} exited (${code ?? signal}); a baseline does not restart workers`);
      process.exit(1);
    });
  }
}
