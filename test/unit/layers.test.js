// The layering rule (scripts/lint/layers.js) and the lint rules: the tree passes
// them, and an import from a higher layer fails, whichever layer plants it.
import { expect } from 'chai';
import { ESLint } from 'eslint';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

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
      ['lib/core/namespaces.js', "import { attachProtocols } from '../wiring/ways-in.js';"],
      ['lib/engines/redis/planted.js', "import { metrics } from '../../session/metrics.js';"],
      ['lib/session/planted.js', "import { WorkerRelay } from '../worker/relay.js';"],
      ['lib/transport/planted.js', "import { Connections } from '../native/connections.js';"],
      ['lib/native/planted.js', "import { Apps } from '../pusher/apps.js';"],
      ['lib/pusher/planted.js', "import { Connections } from '../native/connections.js';"],
      ['lib/native/planted.js', "import { protocolWaysIn } from '../wiring/ways-in.js';"],
      ['lib/engines/planted.js', "import { startPusherWebhooks } from '../pusher/webhooks.js';"],
      ['lib/pusher/planted.js', "import { PrimaryRelay } from '../primary/relay.js';"],
      ['lib/worker/planted.js', "import { PrimaryRelay } from '../primary/relay.js';"],
      ['lib/protocol/planted.js', "import { Namespaces } from '../core/namespaces.js';"],
      ['lib/runtime/planted.js', "import { Sessions } from '../session/sessions.js';"],
      ['lib/protocol/planted.js', "import { createHash } from 'node:crypto';"]
    ];
    for (const [file, line] of planted) {
      const problems = await broken(file, `${line}\nexport const used = [${line.match(/\{ (\w+) \}/)[1]}];\n`);
      expect(problems, `${file}: ${line}`).to.have.length(1);
      expect(problems[0], `${file}: ${line}`).to.match(/^no-restricted-imports: /);
    }
  });

  it('takes an import from the same or a lower layer', async () => {
    expect(await broken('lib/worker/planted.js', "import { Commands } from '../core/commands.js';\nexport { Commands };\n")).to.deep.equal([]);
    expect(await broken('lib/engines/planted.js', "import { Namespaces } from '../core/namespaces.js';\nexport { Namespaces };\n")).to.deep.equal([]);
    expect(await broken('lib/pusher/planted.js', "import { Sessions } from '../session/sessions.js';\nexport { Sessions };\n")).to.deep.equal([]);
    expect(await broken('lib/pusher/planted.js', "import { WebhookQueue } from '../webhooks/queue.js';\nexport { WebhookQueue };\n")).to.deep.equal([]);
    expect(await broken('lib/protocol/planted.js', "import { MAX_HELD } from './limits.js';\nimport { ErrorCode } from '../core/errors.js';\nexport { MAX_HELD, ErrorCode };\n")).to.deep.equal([]);
  });

  it('refuses an unused import and an undefined name', async () => {
    expect(await broken('lib/core/planted.js', "import { kTransport } from './symbols.js';\nexport const f = (name) => `${name} ${user}`;\n")).to.deep.equal([
      "no-unused-vars: 'kTransport' is defined but never used.",
      "no-undef: 'user' is not defined."
    ]);
  });

  it('finds every named import of the tests, scripts and bin among the exports of the module it names', () => {
    // ESLint's core rules do not resolve imports: a module moved or an export
    // renamed would otherwise show only when the file runs. (lib/ is loaded
    // whole by modules.unit.test.js.)
    const problems = [];
    for (const file of ['test', 'scripts', 'bin'].flatMap((dir) => sources(path.join(ROOT, dir)))) {
      for (const [, list, from] of readFileSync(file, 'utf8').matchAll(/^import \{([^}]*)\} from '(\.[^']+)'/gm)) {
        const target = path.resolve(path.dirname(file), from);
        const exported = existsSync(target) ? exportsOf(target) : new Set();
        if (exported.has('*')) continue;
        for (const name of list.split(',').map((entry) => entry.trim().split(/\s+as\s+/)[0])) {
          if (name !== '' && !exported.has(name)) problems.push(`${file.slice(ROOT.length)}: ${name} from ${from}`);
        }
      }
    }
    expect(problems).to.deep.equal([]);
  });

  it('finds nothing to say about the tree', async () => {
    const results = await eslint.lintFiles(['.']);
    const problems = results.flatMap((result) => result.messages.map((message) => `${result.filePath.slice(ROOT.length)}:${message.line} ${message.ruleId}: ${message.message}`));
    expect(problems).to.deep.equal([]);
  });
});

/** @returns {string[]} the .js files under `dir` */
function sources(dir) {
  return readdirSync(dir, { recursive: true })
    .filter((name) => name.endsWith('.js') && !name.split(path.sep).includes('node_modules'))
    .map((name) => path.join(dir, name));
}

const exportsByFile = new Map();

/** @returns {Set<string>} the names a module exports ('*' when it re-exports a whole module) */
function exportsOf(file) {
  if (exportsByFile.has(file)) return exportsByFile.get(file);
  const text = readFileSync(file, 'utf8');
  const names = new Set();
  for (const [, name] of text.matchAll(/^export (?:async )?(?:const|let|class|function\*?) (\w+)/gm)) names.add(name);
  for (const [, list] of text.matchAll(/^export \{([^}]*)\}/gm)) {
    for (const entry of list.split(',')) {
      const [name, alias] = entry.trim().split(/\s+as\s+/);
      if (name) names.add(alias ?? name);
    }
  }
  if (/^export \* from/m.test(text)) names.add('*');
  exportsByFile.set(file, names);
  return names;
}
