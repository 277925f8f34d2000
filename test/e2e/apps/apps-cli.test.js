// `gateway apps add|set`: a limit's text is checked by the same rule as a
// numeric flag's, before the apps table is reached (the URL below refuses
// connections, so a value that got through would exit 1, not 2).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const GATEWAY = fileURLToPath(new URL('../../../bin/gateway.js', import.meta.url));
const NOWHERE = 'postgres://127.0.0.1:1/apps';

function apps(args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [GATEWAY, 'apps', ...args, '--apps-database', NOWHERE], (err, stdout, stderr) => resolve({ code: err?.code ?? 0, stderr }));
  });
}

describe('gateway apps: numeric fields', function () {
  this.timeout(20000);

  for (const action of [['add'], ['set', '--id', 'app-1']]) {
    for (const [value, why] of [
      ['', 'must be a number, got ""'],
      [' ', 'must be a number'],
      ['-1', 'must be at least 0'],
      ['1.5', 'must be an integer'],
      ['ten', 'must be a number'],
      ['2e9', 'must be at most 1000000000']
    ]) {
      it(`${action[0]} refuses --max-connections ${JSON.stringify(value)} with one line and exit 2`, async () => {
        const { code, stderr } = await apps([...action, '--max-connections', value]);
        assert.equal(code, 2);
        assert.equal(stderr.trimEnd().split('\n').length, 1, stderr);
        assert.match(stderr, new RegExp(`^error: --max-connections ${why}.*\\(an integer from 0 to 1000000000\\), or none\\n$`));
      });
    }
  }

  it('names the lower bound of a limit that cannot be 0', async () => {
    const { code, stderr } = await apps(['add', '--max-event-batch-size', '0']);
    assert.equal(code, 2);
    assert.equal(stderr, 'error: --max-event-batch-size must be at least 1, got 0 (an integer from 1 to 1000000000)\n');
  });

  it('lets a valid value through to the table (which refuses the connection here: exit 1)', async () => {
    const { code, stderr } = await apps(['set', '--id', 'app-1', '--max-connections', '500']);
    assert.equal(code, 1);
    assert.match(stderr, /ECONNREFUSED/);
  });
});
