// The client's TypeScript declarations (lib/client/index.d.ts, the package's
// `types`): an application's example compiles against them, and the misuses
// it marks with @ts-expect-error are caught, so the types are neither
// missing nor too loose.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';

const TSC = fileURLToPath(new URL('../../../node_modules/typescript/bin/tsc', import.meta.url));
const PROJECT = fileURLToPath(new URL('../../fixtures/types/tsconfig.json', import.meta.url));

describe('client TypeScript declarations', function () {
  it('type-check an example with tsc --noEmit', async () => {
    const result = await promisify(execFile)(process.execPath, [TSC, '--noEmit', '-p', PROJECT]).catch((err) => err);
    expect(result.stdout, result.stdout).to.equal('');
    expect(result.code ?? 0).to.equal(0);
  });
});
