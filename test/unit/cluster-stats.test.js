// The message rates of /stats (lib/primary/cluster-stats.js) across a worker's death and birth.
import { expect } from 'chai';
import { rates } from '../../lib/primary/cluster-stats.js';

const figures = (pid, published, delivered) => ({ pid, published, delivered });
const at = (ms, ...workers) => ({ at: ms, byPid: new Map(workers.map((w) => [w.pid, w])) });

describe('cluster stats rates', function () {
  it('counts each live worker from its own last figures', function () {
    const before = at(1000, figures(11, 100, 5000), figures(12, 50, 2000));
    expect(rates(before, [figures(11, 150, 7000), figures(12, 70, 2500)], 2000)).to.deep.equal({ publishedPerSec: 70, deliveredPerSec: 2500 });
  });

  it('does not read a killed worker leaving the totals as a rate of 0', function () {
    const before = at(1000, figures(11, 100, 5000), figures(12, 50, 90000));
    // Worker 12 died; worker 11 went on delivering. Totals fell from 95,000 to 6,000.
    expect(rates(before, [figures(11, 200, 6000)], 2000)).to.deep.equal({ publishedPerSec: 100, deliveredPerSec: 1000 });
  });

  it('counts a new worker from 0, and reports 0 before there is a previous reading', function () {
    const before = at(1000, figures(11, 100, 5000));
    expect(rates(before, [figures(11, 100, 5000), figures(13, 10, 400)], 1500)).to.deep.equal({ publishedPerSec: 20, deliveredPerSec: 800 });
    expect(rates(null, [figures(11, 100, 5000)], 1500)).to.deep.equal({ publishedPerSec: 0, deliveredPerSec: 0 });
  });
});
