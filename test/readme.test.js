import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { optionsTable, TABLES } from '../scripts/options-table.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README', () => {
  for (const name of Object.keys(TABLES)) {
    it(`holds the ${name} options table exactly as the code defines it`, () => {
      const found = new RegExp(`<!-- options-table ${name}[^>]*-->\\n([^]*?)\\n<!-- /options-table -->`).exec(readme);
      expect(found, `markers for ${name}`).to.not.equal(null);
      expect(found[1]).to.equal(optionsTable(name));
    });
  }

  it('starts with the install-and-start and the test commands', () => {
    const firstScreen = readme.split('\n').slice(0, 15).join('\n');
    expect(firstScreen).to.include('npm ci && npm start');
    expect(firstScreen).to.include('npm test');
  });
});
