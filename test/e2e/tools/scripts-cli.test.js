// Every script under scripts/ answers --help with its usage (exit 0), and an
// unknown flag with one line naming it, then the usage (exit 2), before it
// starts anything: never parseArgs' stack trace. The scripts' own parsing is
// one helper (scripts/harness/args.js); baseline-cluster.js takes the
// gateway's flags and answers as the gateway does (lib/config/cli.js).
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const DIR = fileURLToPath(new URL('../../../scripts/', import.meta.url));
const SCRIPTS = readdirSync(DIR).filter((f) => f.endsWith('.js') || f.endsWith('.sh'));
const AT_ONCE = 4;

function run(script, flag) {
  const [command, args] = script.endsWith('.sh') ? ['bash', [DIR + script, flag]] : [process.execPath, [DIR + script, flag]];
  return new Promise((resolve) => {
    execFile(command, args, { timeout: 20000 }, (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
  });
}

/** Runs every script with `flag`, AT_ONCE at a time: their answers by script. */
async function everyScript(flag) {
  const answers = new Map();
  let next = 0;
  const lane = async () => {
    while (next < SCRIPTS.length) {
      const script = SCRIPTS[next++];
      answers.set(script, await run(script, flag));
    }
  };
  await Promise.all(Array.from({ length: AT_ONCE }, lane));
  return answers;
}

describe('every script under scripts/ answers --help and an unknown flag', function () {
  this.timeout(120000);

  it('finds the scripts', () => {
    expect(SCRIPTS).to.include.members(['bench.js', 'bench-peer.js', 'soak.js', 'baseline-ws.js', 'tune.sh']);
  });

  it('--help: the usage on stdout, exit 0', async () => {
    for (const [script, { code, stdout, stderr }] of await everyScript('--help')) {
      expect(code, `${script}: ${stderr}`).to.equal(0);
      expect(stdout, script).to.match(/^usage: /i);
      expect(stderr, script).to.not.match(/^\s+at /m);
    }
  });

  it('an unknown flag: one line naming it, the usage, exit 2', async () => {
    for (const [script, { code, stdout, stderr }] of await everyScript('--no-such-flag')) {
      expect(code, `${script}: ${stdout}${stderr}`).to.equal(2);
      const [first, ...rest] = stderr.split('\n');
      expect(first, script).to.include('--no-such-flag');
      expect(stderr, script).to.not.match(/^\s+at /m);
      if (script === 'baseline-cluster.js') expect(rest[0], script).to.include('--help');
      else expect(rest[0], script).to.match(/^usage: /i);
    }
  });
});
