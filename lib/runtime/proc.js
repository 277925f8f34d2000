// Reads the limits the doctor checks from a /proc tree under `root` ('/' on a
// live machine, a fixture folder in tests). A missing or unreadable file reads
// as undefined and never throws: a module that is not loaded, or a container
// that hides /proc/sys, is something to report, not a crash.
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * @param {string} [root] folder holding `proc/`
 * @returns {{
 *   openFiles?: {soft: number, hard: number},
 *   memory?: {total: number, available: number},
 *   sysctl: (key: string) => number[]|undefined
 * }} memory in bytes; sysctl('net.ipv4.tcp_mem') gives the file's numbers
 */
export function readSnapshot(root = '/') {
  const read = (file) => readText(path.join(root, 'proc', file));
  return {
    openFiles: parseOpenFiles(read('self/limits')),
    memory: parseMeminfo(read('meminfo')),
    sysctl: (key) => parseNumbers(read(sysctlFile(key)))
  };
}

/** 'net.core.somaxconn' -> 'sys/net/core/somaxconn', relative to /proc. */
export function sysctlFile(key) {
  return `sys/${key.replaceAll('.', '/')}`;
}

function readText(file) {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function parseNumbers(text) {
  if (!text?.trim()) return undefined;
  const values = text.trim().split(/\s+/).map(Number);
  return values.every(Number.isFinite) ? values : undefined;
}

// "Max open files            1024                 524288               files"
function parseOpenFiles(text) {
  const match = text?.match(/^Max open files\s+(\S+)\s+(\S+)/m);
  return match ? { soft: parseLimit(match[1]), hard: parseLimit(match[2]) } : undefined;
}

function parseLimit(value) {
  return value === 'unlimited' ? Infinity : Number(value);
}

// "MemAvailable:   24359460 kB"; kernels before 3.14 have no MemAvailable.
function parseMeminfo(text) {
  const bytes = (name) => {
    const match = text?.match(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm'));
    return match ? Number(match[1]) * 1024 : undefined;
  };
  const total = bytes('MemTotal');
  return total === undefined ? undefined : { total, available: bytes('MemAvailable') ?? bytes('MemFree') ?? total };
}
