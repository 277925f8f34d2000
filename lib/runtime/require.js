// CommonJS packages (ws, pino, prom-client, sticky-session) are loaded with
// require, not import. Node's ES module loader parses every CommonJS file
// once more to find its named exports and keeps what it built: through
// import, ws alone (a dozen files) cost each process ~5 MB before its first
// client.
import { createRequire } from 'node:module';

export const require = createRequire(import.meta.url);
