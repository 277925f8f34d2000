// POST /api/<method> on a gateway: the status and the parsed answer.
import { writeFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { API_KEY } from './client-helpers.js';

/** The namespaces the server API tests run with, both engines. */
export const NAMESPACES = {
  historySize: 3,
  namespaces: [
    { name: 'chat', historySize: 200, historyTtl: 600, presence: true, joinLeave: true },
    { name: 'prices', historySize: 1, latest: true, clientPublish: false },
    { name: 'inbox', historySize: 50, publishHook: false }
  ]
};

/** @returns {Promise<{status: number, body: object}>} */
export async function api(gw, method, params = {}, { body = JSON.stringify(params), port = gw.port } = {}) {
  const res = await fetch(`http://127.0.0.1:${port}/api/${method}`, { method: 'POST', headers: { Authorization: `Bearer ${API_KEY}` }, body });
  return { status: res.status, body: await res.json() };
}

/** The result of a call that must succeed. */
export async function result(gw, method, params) {
  const { status, body } = await api(gw, method, params);
  if (status !== 200) throw new Error(`${method} answered ${status}: ${JSON.stringify(body)}`);
  return body.result;
}

/** Writes a --config file in a fresh temp folder. @returns {string} its path */
export function configFile(content) {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'gateway-config-')), 'gateway.json');
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}
