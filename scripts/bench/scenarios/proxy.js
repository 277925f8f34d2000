// proxy: handshakes through the gateway's primary with and without
// --proxy-protocol (the primary then reads the PROXY v1 header before it hands
// the socket over), both driven by raw-handshakes.js so the client side is the
// same. Connects per second and CPU per handshake, split primary vs workers.
import { withServer } from '../servers.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { idleCpuRate, busyCpuSince } from '../measure.js';
import { sampleTree } from '../proc-sampler.js';
import { openHandshakes } from '../raw-handshakes.js';
import { expandAddresses } from '../../../lib/loadgen/addresses.js';
import { SOURCES } from '../load.js';
import { runResult } from '../result.js';

export async function proxy(opts) {
  const size = opts.handshakeConnections;
  const results = [];
  for (const withHeader of [false, true]) {
    const variant = withHeader ? 'gateway --proxy-protocol (v1)' : 'gateway';
    const flags = ['--workers', String(opts.workers), ...(withHeader ? ['--proxy-protocol'] : [])];
    results.push(
      await withServer('gateway', flags, async (server) => {
        // /stats on the public port would need a PROXY header too: 'gateway ready' has to do.
        await sleep(1000);
        const idle = await idleCpuRate(server);
        const before = sampleTree(server.pid);
        const run = await openHandshakes({
          port: server.port,
          path: '/ws',
          count: size,
          rate: opts.handshakeRate,
          inFlight: 1000,
          proxy: withHeader,
          sources: expandAddresses([SOURCES])
        });
        const cpu = busyCpuSince(server, before, idle);
        run.close();
        const load = { target: size, open: run.opened, failed: run.failed, seconds: run.seconds };
        if (run.opened < size) return runResult({ scenario: 'proxy', variant, size, short: `opened ${run.opened} of ${size}`, load });
        return runResult({
          scenario: 'proxy',
          variant,
          size,
          figures: {
            connectsPerSec: size / run.seconds,
            cpuUsPerHandshake: cpu.totalUs / size,
            primaryUsPerHandshake: cpu.primaryUs / size,
            workersUsPerHandshake: cpu.workersUs / size
          },
          load
        });
      })
    );
  }
  return results;
}
