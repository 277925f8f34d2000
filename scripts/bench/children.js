// Every process the benchmark starts is registered here and killed, with its
// own children, when the benchmark exits for any reason short of SIGKILL.
import { treeOf } from './proc-sampler.js';

const tracked = new Set();

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    process.exitCode = 130;
    process.exit();
  });
}
process.once('exit', () => {
  for (const proc of tracked) killTree(proc.pid);
});

/** Kills `proc` and its descendants when the benchmark exits, unless it exited first. */
export function track(proc) {
  tracked.add(proc);
  proc.once('exit', () => tracked.delete(proc));
  return proc;
}

/** SIGKILLs a process and every descendant it has now. */
export function killTree(pid) {
  for (const each of treeOf(pid)) {
    try {
      process.kill(each, 'SIGKILL');
    } catch {}
  }
}

/** Sends a forked child one command; resolves with its answer, rejects if it exits first. */
export function askChild(proc, message) {
  return new Promise((resolve, reject) => {
    const exited = (code) => reject(new Error(`${proc.spawnfile} exited (${code})`));
    proc.once('exit', exited);
    proc.once('message', (answer) => {
      proc.off('exit', exited);
      resolve(answer);
    });
    proc.send(message);
  });
}
