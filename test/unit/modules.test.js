// Every module under lib/ loads: each named import resolves to an export of
// the module it names. The linter reads files one at a time and cannot see
// an import whose export moved to another module; a gateway that imports it
// dies at start.
import { expect } from 'chai';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const LIB = fileURLToPath(new URL('../../lib/', import.meta.url));
// Modules that run on import, elsewhere than in a Node test: the admin page's script (a browser's), a worker's entry (the primary's child) and the webhook sender's (a thread of the primary).
const RUN_ON_IMPORT = new Set(['admin/admin.js', 'worker/main.js', 'webhooks/thread.js']);

describe('lib/ modules', () => {
  const files = readdirSync(LIB, { recursive: true })
    .filter((file) => file.endsWith('.js'))
    .map((file) => file.split(path.sep).join('/'))
    .filter((file) => !RUN_ON_IMPORT.has(file));

  it('finds the modules', () => {
    expect(files.length).to.be.above(100);
  });

  for (const file of files) {
    it(`loads ${file}`, async () => {
      await import(pathToFileURL(path.join(LIB, file)).href);
    });
  }
});
