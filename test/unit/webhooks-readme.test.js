// The README's webhook verification example, run as written (extracted from
// the README into a module): it accepts what the gateway signs and refuses
// forged, tampered and missing signatures.
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { signatureOf } from '../../lib/webhooks/sign.js';

const SECRET = 'webhook-secret-that-is-long-enough-0123456789';

describe("README: the webhook signature check", () => {
  let verifyWebhook;
  let dir;
  before(async () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const block = [...readme.matchAll(/```js\n([^]*?)```/g)].map((m) => m[1]).find((code) => code.includes('export function verifyWebhook'));
    expect(block, 'the example in the README').to.be.a('string');
    dir = mkdtempSync(path.join(os.tmpdir(), 'readme-webhook-'));
    const file = path.join(dir, 'verify.mjs');
    writeFileSync(file, block);
    ({ verifyWebhook } = await import(pathToFileURL(file).href));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const body = Buffer.from('{"timeMs":1764000000000,"events":[{"name":"channel_occupied","channel":"chat:42"}]}');

  it("accepts the gateway's signature of the raw body", () => {
    expect(verifyWebhook(body, signatureOf(SECRET, body), SECRET)).to.equal(true);
    expect(verifyWebhook(body.toString(), signatureOf(SECRET, body), SECRET)).to.equal(true);
  });

  it('refuses a signature made with another key, a tampered body, a missing, truncated or malformed header', () => {
    expect(verifyWebhook(body, signatureOf('another-secret-that-is-long-enough-012345', body), SECRET)).to.equal(false);
    const tampered = Buffer.from(body.toString().replace('42', '43'));
    expect(verifyWebhook(tampered, signatureOf(SECRET, body), SECRET)).to.equal(false);
    expect(verifyWebhook(body, undefined, SECRET)).to.equal(false);
    expect(verifyWebhook(body, '', SECRET)).to.equal(false);
    expect(verifyWebhook(body, signatureOf(SECRET, body).slice(0, -2), SECRET)).to.equal(false);
    expect(verifyWebhook(body, signatureOf(SECRET, body).toUpperCase(), SECRET)).to.equal(false);
    expect(verifyWebhook(body, ['sha256=', 'x'], SECRET)).to.equal(false);
  });
});
