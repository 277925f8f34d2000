// Runs bin/loadgen as a user does, for the tests that drive it.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const LOADGEN = fileURLToPath(new URL('../../bin/loadgen.js', import.meta.url));

/** Resolves {code, stdout, stderr, report (parsed stdout), ms}. */
export async function spawnLoadgen(args) {
  const started = Date.now();
  const proc = spawn(process.execPath, [LOADGEN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => (stdout += d));
  proc.stderr.on('data', (d) => (stderr += d));
  const [code] = await once(proc, 'exit');
  let report;
  try {
    report = JSON.parse(stdout);
  } catch {}
  return { code, stdout, stderr, report, ms: Date.now() - started };
}
