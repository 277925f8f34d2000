import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { optionsTable } from '../scripts/options-table.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('holds the options table exactly as lib/config.js defines it', () => {
    const [, table] = /<!-- options-table[^>]*-->\n([^]*?)\n<!-- \/options-table -->/.exec(readme);
    expect(table).to.equal(optionsTable());
  });

  it('starts with the install-and-start and the test commands', () => {
    const firstScreen = readme.split('\n').slice(0, 15).join('\n');
    expect(firstScreen).to.include('npm ci && npm start');
    expect(firstScreen).to.include('npm test');
  });
});
