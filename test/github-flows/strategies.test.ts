/**
 * Speculative strategies on GitHub: only the pick opens a PR, whose body names the other strategies' branches; when a
 * person picks, every green strategy opens a draft PR, and a lane that depends on the target is skipped until then.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lane, readManifest } from '../integration/helpers.js';
import { prsOpened, startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

const STRATEGIES = [
  { label: 'wide', run: 'printf "a\\nb\\nc\\n" > app.txt' },
  { label: 'narrow', run: 'echo a > app.txt' },
  { label: 'broken', run: 'exit 2' },
];

describe('strategies on GitHub', () => {
  it('only the pick opens a PR; the others stay as branches, named in its body', async () => {
    flow = await startFlow();
    const { emu, dir } = flow;
    await emu.createRepo({ owner: 'acme', name: 'svc', files: { 'README.md': '# svc\n' } });
    const file = flow.fleetFile({
      name: 'spec',
      directive: 'Write the app.',
      run: 'true',
      max_retries: 0,
      speculative: { pick: 'smallest-green-diff' },
      targets: [{ repo: 'acme/svc', strategies: STRATEGIES }],
    });
    const r = await flow.run(file, join(dir, 'ws'));
    expect(r.code).toBe(1);
    const m = readManifest(join(dir, 'ws'));
    expect(lane(m, 'svc.narrow')).toMatchObject({ status: 'completed', phase: 'pr-open', strategy: { picked: true } });
    expect(lane(m, 'svc.wide')).toMatchObject({ status: 'completed', phase: 'pushed', pr_number: null, strategy: { picked: false } });
    const prs = emu.pullRequests('acme/svc');
    expect(prs).toHaveLength(1);
    expect(prs[0]).toMatchObject({ draft: false, headRef: 'fleet/spec/svc/narrow' });
    expect(prs[0]!.body).toContain('**Strategy** `narrow`. Picked among the strategies: smallest green diff: narrow changes 1 line in 1 file (2 of 3 green).');
    expect(prs[0]!.body).toContain('The other strategies stay as branches:\n- `fleet/spec/svc/wide` (wide: green)');
    expect(await emu.branchSha('acme/svc', 'fleet/spec/svc/wide')).not.toBeNull();
    expect(prsOpened(emu)).toBe(1);
    emu.assertNoViolations();
  });

  it('a person picks: every green strategy opens a draft, and the dependent waits for a person', async () => {
    flow = await startFlow();
    const { emu, dir } = flow;
    for (const name of ['svc', 'app']) await emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } });
    const file = flow.fleetFile({
      name: 'spec',
      directive: 'Write the app.',
      run: 'true',
      max_retries: 0,
      speculative: { pick: 'person' },
      targets: [
        { repo: 'acme/svc', strategies: STRATEGIES },
        { repo: 'acme/app', depends_on: ['svc'], run: 'echo x > X.md' },
      ],
    });
    await flow.run(file, join(dir, 'ws'));
    const m = readManifest(join(dir, 'ws'));
    expect(
      emu
        .pullRequests('acme/svc')
        .map((p) => [p.headRef, p.draft])
        .sort(),
    ).toEqual([
      ['fleet/spec/svc/narrow', true],
      ['fleet/spec/svc/wide', true],
    ]);
    expect(lane(m, 'svc.wide').strategy).toMatchObject({ picked: null, reason: 'a person picks: every strategy with a change opened a draft PR' });
    expect(lane(m, 'app')).toMatchObject({ status: 'skipped', error: { class: 'dependency-failed' } });
    expect(emu.pullRequests('acme/app')).toEqual([]);
    emu.assertNoViolations();
  });
});
