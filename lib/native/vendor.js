// The client's dependencies, served to browsers beside /client.js: the
// client imports them by their package names, which a page maps to these
// paths with an import map (see the README). Loaded only by a client that
// uses them (encoding 'msgpack', a delta subscription).
import { dirname, join } from 'node:path';
import { require } from '../runtime/require.js';

const FOSSIL = require.resolve('fossil-delta');
// The package's ES module build: index.mjs and the modules it imports, relative to it.
const MSGPACK_ESM = join(dirname(dirname(require.resolve('@msgpack/msgpack'))), 'dist.esm');
const MSGPACK_PART = /^\/vendor\/msgpack\/((?:utils\/)?[A-Za-z0-9]+\.mjs)$/;

/** @returns {string|undefined} the file a /vendor/ path serves */
export function vendorFile(path) {
  if (path === '/vendor/fossil-delta.js') return FOSSIL;
  const part = MSGPACK_PART.exec(path);
  return part === null ? undefined : join(MSGPACK_ESM, part[1]);
}
