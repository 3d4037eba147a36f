/**
 * The lane-admission rule both drivers apply (src/steps/admission.ts, src/core/admission.ts): a lane starts from the
 * integration of the waves before it, or ends skipped with the reason as its error, in the words both drivers wrote.
 */
import { describe, expect, it } from 'vitest';
import { ceilingReached, notStarted, skippedLane } from '../../src/core/admission.js';
import { type IntegrationRecord, type LaneRecord, type LaneSpec, newLaneRecord } from '../../src/core/model.js';
import type { Clock, Forge } from '../../src/ports.js';
import { type Admission, admit, budgetGate, dependencyGate, startingSpec } from '../../src/steps/admission.js';

const NOW = '2026-01-02T03:04:05.000Z';
const clock: Clock = { now: () => new Date(NOW) };

function spec(id: string, depends_on: string[] = []): LaneSpec {
  return {
    id,
    repo: `org/${id}`,
    repo_kind: 'github',
    title: id,
    directive: 'stamp',
    run: 'true',
    checks: [],
    depends_on,
    owns: [],
    never: [],
    exclusive: false,
    branch: `fleet/t/${id}`,
    base: undefined,
    index: 0,
    review: null,
  } as LaneSpec;
}

const record = (id: string, over: Partial<LaneRecord> = {}): LaneRecord => ({
  ...newLaneRecord({ repo: `org/${id}`, lane: id, wave: 0, branch: `fleet/t/${id}`, depends_on: [] }),
  ...over,
});

/** A forge that says where a branch is, and fails the test on any other call. */
function forgeWithHead(head: string | null): Forge {
  return { kind: 'github', branchHead: async () => head } as unknown as Forge;
}

function admission(over: Partial<Admission> = {}): Admission {
  const lib = spec('lib');
  const app = spec('app', ['lib']);
  return {
    planned: app,
    start: record('app', { wave: 1 }),
    records: new Map([['lib', record('lib', { status: 'completed', phase: 'pushed', commit: 'c'.repeat(40) })]]),
    specs: new Map([
      ['lib', lib],
      ['app', app],
    ]),
    forge: forgeWithHead('c'.repeat(40)),
    checkpoint: 'pushed',
    dryRun: false,
    clock,
    ...over,
  };
}

describe('admit', () => {
  it('starts a lane whose dependency completed and whose branch holds on the forge', async () => {
    expect(await admit(admission())).toEqual({ start: spec('app', ['lib']) });
  });

  it('starts it from its repository’s integration branch once a wave was verified there', async () => {
    const integrated: IntegrationRecord = {
      repo: 'org/app',
      branch: 'fleet/t/integration',
      head: 'h'.repeat(40),
      base_commit: 'b'.repeat(40),
    } as IntegrationRecord;
    const a = admission({ integration: { records: [integrated] } });
    expect(startingSpec(a).base).toBe('fleet/t/integration');
    expect(await admit(a)).toEqual({ start: { ...spec('app', ['lib']), base: 'fleet/t/integration' } });
  });

  it('skips a lane whose dependency failed, with the reason as its error', async () => {
    const a = admission({ records: new Map([['lib', record('lib', { status: 'failed', phase: 'failed', error: { class: 'check-failed', message: 'x' } })]]) });
    const out = await admit(a);
    expect(out).toEqual({
      skipped: skippedLane(
        a.start,
        { class: 'dependency-failed', message: 'dependency "lib" failed (check-failed); this lane was not run against a missing checkpoint' },
        NOW,
      ),
    });
    expect((out as { skipped: LaneRecord }).skipped).toMatchObject({ status: 'skipped', phase: 'skipped', updated_at: NOW, ended_at: NOW });
  });

  it('skips a lane whose dependency’s branch moved on the forge', async () => {
    const skipped = await dependencyGate(admission({ forge: forgeWithHead('d'.repeat(40)) }));
    expect(skipped?.error).toEqual({
      class: 'checkpoint-unmet',
      message: `dependency "lib": fleet/t/lib is at ${'d'.repeat(12)} on the forge, not ${'c'.repeat(12)}`,
    });
  });

  it('skips a lane whose dependency is held out of the integration', async () => {
    const held = record('lib', {
      status: 'completed',
      phase: 'pushed',
      integration: { state: 'held', wave: 0, merge_commit: null, conflicts: [], reason: 'a conflict' },
    });
    const skipped = await dependencyGate(admission({ records: new Map([['lib', held]]) }));
    expect(skipped?.error?.message).toBe('dependency "lib" is held out of the integration (a conflict); this lane was not run against a missing checkpoint');
  });

  it('skips every lane when the integration it would build on left no record, before asking the forge', async () => {
    const a = admission({ integration: { records: [], missing: 'the integration of wave 1 left no record' }, forge: {} as Forge });
    expect(await admit(a)).toEqual({ skipped: skippedLane(a.start, { class: 'checkpoint-unmet', message: 'the integration of wave 1 left no record' }, NOW) });
  });

  it('skips a lane once the fleet spent its ceiling, saying so as a lane would', async () => {
    const a = admission({ budget: { ceiling: 5, spend: { spent: 5 } } });
    expect(budgetGate(admission({ budget: { ceiling: 5, spend: { spent: 4.99 } } }))).toBeUndefined();
    const out = await admit(a);
    expect(out).toEqual({ skipped: ceilingReached(a.start, 5, 5, NOW) });
    expect((out as { skipped: LaneRecord }).skipped.error).toMatchObject({ class: 'budget-exceeded' });
    expect((out as { skipped: LaneRecord }).skipped.error!.message).toMatch(/^not started: /);
  });

  it('a blocked dependency wins over the ceiling: the reason is the dependency', async () => {
    const a = admission({ records: new Map(), budget: { ceiling: 1, spend: { spent: 2 } } });
    expect((await admit(a)) as { skipped: LaneRecord }).toMatchObject({ skipped: { error: { class: 'checkpoint-unmet' } } });
  });
});

describe('the skipped records', () => {
  it('keep the planned record’s fields in their order, so the manifest is written the same', () => {
    const start = record('app');
    expect(Object.keys(notStarted(start, NOW))).toEqual(Object.keys(start));
    expect(notStarted(start, NOW).error).toEqual({ class: 'cancelled', message: 'the run was interrupted before this lane started' });
  });
});
