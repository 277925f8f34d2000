// relay: publishes per second through the primary and its CPU per publish,
// isolated from WebSocket work: scripts/bench-relay.js drives the real
// PrimaryRelay with synthetic publisher workers, batched and unbatched.
// `publishes/s` counts what reached the subscribed worker; `sequenced/s` what
// the primary stamped, which runs ahead when that worker cannot keep up.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { track } from '../children.js';
import { runResult } from '../result.js';

const SCRIPT = fileURLToPath(new URL('../../bench-relay.js', import.meta.url));

export async function relay(opts) {
  const proc = track(spawn(process.execPath, [SCRIPT, '--seconds', String(opts.relaySeconds), '--json', '-'], { stdio: ['ignore', 'pipe', 'inherit'] }));
  let stdout = '';
  proc.stdout.on('data', (d) => (stdout += d));
  await once(proc, 'exit');
  // The script prints its summary, then the JSON: the JSON is the last {...} block.
  const json = stdout.slice(stdout.indexOf('\n{') + 1);
  let measured;
  try {
    measured = JSON.parse(json);
  } catch {
    return [runResult({ scenario: 'relay', variant: 'primary relay', short: `bench-relay printed no JSON: ${stdout.slice(-300)}` })];
  }
  return ['batched', 'unbatched'].map((mode) =>
    runResult({
      scenario: 'relay',
      variant: `primary relay, ${mode}`,
      short: measured[mode].publishesPerSec > 0 ? undefined : 'nothing was relayed',
      figures: {
        publishesPerSec: measured[mode].publishesPerSec,
        sequencedPerSec: measured[mode].sequencedPerSec,
        primaryCpuUsPerPublish: measured[mode].primaryCpuUsPerPublish
      }
    })
  );
}
