// The live status page (lib/status/index.html), served by the primary's
// operator listener rather than the public port: it shows worker pids, memory
// and traffic, which strangers on the internet have no business reading. The
// page's "Try it" client connects to the public port, which it learns here.
import { readFileSync } from 'node:fs';

const PLACEHOLDER = '<meta name="gateway" content="{}">';

/**
 * @param {{port: number, path: string, tls: boolean}} gateway where the public port is
 * @returns {Buffer} the page
 */
export function statusPage(gateway) {
  const html = readFileSync(new URL('../status/index.html', import.meta.url), 'utf8');
  const content = JSON.stringify(gateway).replaceAll('"', '&quot;');
  return Buffer.from(html.replace(PLACEHOLDER, `<meta name="gateway" content="${content}">`));
}
