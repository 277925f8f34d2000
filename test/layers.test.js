// The layering rule (lint-layers.js) and the lint rules: the tree passes
// them, and an import from a higher layer fails, whichever layer plants it.
import { expect } from 'chai';
import { ESLint } from 'eslint';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('lint and layers', function () {
  this.timeout(120000);
  const eslint = new ESLint({ cwd: ROOT });

  /** @returns {Promise<string[]>} the rules a module at `file` with this text breaks */
  async function broken(file, text) {
    const [result] = await eslint.lintText(text, { filePath: `${ROOT}${file}` });
    return result.messages.map((message) => `${message.ruleId}: ${message.message}`);
  }

  it('refuses an import from a higher layer', async () => {
    const planted = [
      ['lib/core/planted.js', "import { relay } from '../worker/relay.js';"],
      ['lib/core/planted.js', "import { members } from '../pusher/members.js';"],
      ['lib/namespaces.js', "import { attachProtocols } from './protocols.js';"],
      ['lib/engines/redis/planted.js', "import { metrics } from '../../worker/metrics.js';"],
      ['lib/engines/planted.js', "import { startPusherWebhooks } from '../pusher/webhooks.js';"],
      ['lib/pusher/planted.js', "import { PrimaryRelay } from '../primary/relay.js';"],
      ['lib/worker/planted.js', "import { PrimaryRelay } from '../primary/relay.js';"]
    ];
    for (const [file, line] of planted) {
      const problems = await broken(file, `${line}\nexport const used = [${line.match(/\{ (\w+) \}/)[1]}];\n`);
      expect(problems, `${file}: ${line}`).to.have.length(1);
      expect(problems[0], `${file}: ${line}`).to.match(/^no-restricted-imports: /);
    }
  });

  it('takes an import from the same or a lower layer', async () => {
    expect(await broken('lib/worker/planted.js', "import { Commands } from '../core/commands.js';\nexport { Commands };\n")).to.deep.equal([]);
    expect(await broken('lib/engines/planted.js', "import { Namespaces } from '../namespaces.js';\nexport { Namespaces };\n")).to.deep.equal([]);
  });

  it('refuses an unused import and an undefined name', async () => {
    expect(await broken('lib/core/planted.js', "import { kTransport } from './symbols.js';\nexport const f = (name) => `${name} ${user}`;\n")).to.deep.equal([
      "no-unused-vars: 'kTransport' is defined but never used.",
      "no-undef: 'user' is not defined."
    ]);
  });

  it('finds nothing to say about the tree', async () => {
    const results = await eslint.lintFiles(['.']);
    const problems = results.flatMap((result) => result.messages.map((message) => `${result.filePath.slice(ROOT.length)}:${message.line} ${message.ruleId}: ${message.message}`));
    expect(problems).to.deep.equal([]);
  });
});
