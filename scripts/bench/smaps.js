// A process's memory as the kernel sums it in /proc/<pid>/smaps_rollup: RSS
// counts the pages of Node's executable that every process shares; private
// is what this process alone holds (what one more worker costs).
import { readFileSync } from 'node:fs';

/** @returns {{rssBytes: number, privateBytes: number}} */
export function smapsOf(pid) {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kB = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  return { rssBytes: kB('Rss'), privateBytes: kB('Private_Dirty') + kB('Private_Clean') };
}
