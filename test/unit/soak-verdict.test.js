// The soak's verdict on made-up runs, so each criterion is shown to fail when
// it should, and its default size on made-up machines. No processes: fast.
import { expect } from 'chai';
import { judge } from '../../scripts/soak/verdict.js';
import { slopePerHour } from '../../scripts/soak/slope.js';
import { machineDefaults, CONNECTIONS_PER_CORE } from '../../scripts/soak/machine.js';

const MiB = 1048576;

describe('soak verdict', () => {
  const worker = (t, heap, fds) => ({ worker: 1, pid: 7, rssBytes: heap * 2, heapUsedBytes: heap, fds, connections: 100, loopP99Ms: 1, loopMaxMs: 2 });
  const run = (heapAt, fdsAt, extra = {}) => ({
    samples: Array.from({ length: 360 }, (_, i) => ({
      t: i * 10,
      primary: { rssBytes: 80 * MiB, heapUsedBytes: 20 * MiB, channels: 100, historyBytes: 0 },
      workers: [worker(i * 10, heapAt(i * 10), fdsAt(i * 10))]
    })),
    reports: { ws: { lost: 0, unrecoverable: 0, seqGaps: 0, outOfOrder: 0, received: 10, expected: 10 } },
    logs: [],
    killedPids: new Set(),
    primaryAlive: true,
    warmupS: 600,
    slots: 1,
    ...extra
  });

  it('fits a slope per hour', () => {
    expect(slopePerHour([[0, 1], [1800, 2], [3600, 3]])).to.be.closeTo(2, 1e-9);
  });

  it('passes a flat hour', () => {
    expect(judge(run(() => 50 * MiB, () => 120)).ok).to.equal(true);
  });

  it('fails a heap that grows 40 MiB an hour, and fds that grow', () => {
    const v = judge(run((t) => 50 * MiB + (t / 3600) * 40 * MiB, (t) => 120 + t / 10));
    expect(v.ok).to.equal(false);
    expect(v.failed.join('\n')).to.match(/heap flat/).and.match(/fds flat/);
  });

  it('judges no slope from a run shorter than its window: too short, neither pass nor fail', () => {
    const minute = run((t) => 50 * MiB + t * MiB, (t) => 120 + t, { warmupS: 12 });
    minute.samples = minute.samples.slice(0, 7); // one minute, 10 s apart
    const v = judge(minute);
    expect(v.failed).to.deep.equal([]);
    expect(v.checks.map((c) => c.name).join('\n')).to.not.match(/flat|slopes fitted|primary memory/);
    expect(v.unjudged).to.have.length(1);
    expect(v.unjudged[0]).to.match(/too short to judge \(48 s after the warm-up, 600 s needed\)/);
    // The same growth over a window long enough is judged, and fails.
    expect(judge(run((t) => 50 * MiB + t * MiB, (t) => 120 + t, { warmupS: 12 })).failed.join('\n')).to.match(/heap flat/);
  });

  it('fails on loss, disorder and a restart nobody asked for', () => {
    const v = judge(
      run(() => 50 * MiB, () => 120, {
        reports: { ws: { lost: 3, unrecoverable: 1, reconnects: 5, seqGaps: 1, outOfOrder: 2, received: 7, expected: 10 } },
        logs: [{ msg: 'worker died', workerPid: 99, signal: 'SIGSEGV' }]
      })
    );
    expect(v.failed.map((f) => f.split(':')[0])).to.have.members(['lost = 0 (ws)', 'every recovery recovered (ws)', 'no seq gap (ws)', 'out of order = 0 (ws)', 'no restart but the killed']);
  });

  it('fails when a slot ends with two workers (one the supervisor lost track of)', () => {
    const r = run(() => 50 * MiB, () => 120);
    const last = r.samples.at(-1);
    last.workers = [...last.workers, { ...last.workers[0], pid: 8 }];
    expect(judge(r).failed.map((f) => f.split(':')[0])).to.deep.equal(['one worker per slot at the end']);
  });

  it('across a Redis restart excuses recoveries answered in the new epoch, not other refusals, and needs the new epoch delivered', () => {
    const held = { lost: 40, seqGaps: 0, outOfOrder: 0, received: 10, expected: 50, reconnects: 5 };
    const excused = judge(run(() => 50 * MiB, () => 120, { redisRestarts: 1, reports: { ws: { ...held, unrecoverable: 3, epochChanged: 3, seqRestarts: 7 } } }));
    expect(excused.failed).to.deep.equal([]);
    const v = judge(run(() => 50 * MiB, () => 120, { redisRestarts: 1, reports: { ws: { ...held, unrecoverable: 4, epochChanged: 3, seqRestarts: 0 } } }));
    expect(v.failed.map((f) => f.split(':')[0])).to.have.members(['every recovery recovered (ws)', 'the new epoch reached the subscribers (ws)']);
    // Without a Redis restart an epoch change is a loss like any other.
    expect(judge(run(() => 50 * MiB, () => 120, { reports: { ws: { ...held, lost: 0, unrecoverable: 3, epochChanged: 3 } } })).ok).to.equal(false);
  });
});

describe('soak size', () => {
  const GiB = 1024 ** 3;
  const machine = (cores, available, hardFiles) => machineDefaults({ cores, snapshot: { memory: { available }, openFiles: { soft: 1024, hard: hardFiles } } });

  it('gives one worker per core and connections by the core', () => {
    expect(machine(2, 22 * GiB, 20000)).to.include({ workers: 2, connections: 2 * CONNECTIONS_PER_CORE, sseStreams: 1000 });
    expect(machine(8, 64 * GiB, 1048576)).to.include({ workers: 8, connections: 8 * CONNECTIONS_PER_CORE });
  });

  it('holds fewer where memory or the open-files limit would not hold them', () => {
    // Both ends of each connection, 13 KiB each, in three quarters of 256 MiB.
    expect(machine(2, 256 * 1024 ** 2, 20000).connections).to.equal(7561);
    // 2 workers x (2048 - 1024 headroom) x 0.8.
    expect(machine(2, 22 * GiB, 2048).connections).to.equal(1638);
  });
});
