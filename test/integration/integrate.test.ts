/**
 * Wave integration into one release branch, locally (issue 9): eight lanes of one repository over three waves, merged
 * into the integration branch one at a time after each wave; a conflict holds one lane (its dependent is skipped) and
 * not the others; a failed seam holds the lane that declared the soft edge; later waves start from the integration;
 * at the end the release branch carries the last verified integration and passed the global gate. A re-run merges
 * nothing twice.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commitToRemote, createRepo, readRemoteFile, remoteBranches } from '../support/repos.js';
import { processSandbox } from '../../src/workspace/sandbox.js';
import { fleet, lane, readManifest, removeDir, runArgs, tempDir, writeFleetFile } from './helpers.js';

const isRoot = process.getuid?.() === 0;
const canIsolate = process.platform === 'linux' && (await processSandbox()).kind !== 'none';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

const w = (path: string, text: string) => `mkdir -p "$(dirname ${path})" && printf '%s\\n' "${text}" > ${path}`;

const FLEET = {
  name: 'int',
  directive: 'Build the feature.',
  run: 'true',
  checks: ['test -f README.md'],
  max_retries: 0,
  integrate: { seam_checks: ['! grep -rq INCOMPATIBLE src/cli'] },
  targets: [
    // Wave 1: api and ui share src/routes.txt but a soft edge lets them run side by side; their merges conflict.
    { repo: './mono.git', lane: 'api', owns: ['src/api/**', 'src/routes.txt'], run: `${w('src/api/index.txt', 'api')} && echo api >> src/routes.txt` },
    {
      repo: './mono.git',
      lane: 'ui',
      owns: ['src/ui/**', 'src/routes.txt'],
      soft_depends_on: ['api'],
      run: `${w('src/ui/index.txt', 'ui')} && echo ui >> src/routes.txt`,
    },
    { repo: './mono.git', lane: 'docs', owns: ['docs/**'], run: w('docs/guide.md', 'guide') },
    { repo: './mono.git', lane: 'lib', owns: ['src/lib/**'], run: w('src/lib/util.txt', 'v1') },
    // Wave 2: svc builds on lib (it reads lib's file from the integration); cli's seam with svc fails; widget waits for ui.
    {
      repo: './mono.git',
      lane: 'svc',
      owns: ['src/svc/**'],
      depends_on: ['lib'],
      run: 'mkdir -p src/svc && echo "uses $(cat src/lib/util.txt)" > src/svc/main.txt',
    },
    { repo: './mono.git', lane: 'cli', owns: ['src/cli/**'], depends_on: ['lib'], soft_depends_on: ['svc'], run: w('src/cli/main.txt', 'INCOMPATIBLE') },
    { repo: './mono.git', lane: 'widget', owns: ['src/widget/**'], depends_on: ['ui'], run: w('src/widget/w.txt', 'w') },
    // Wave 3: app builds on svc.
    { repo: './mono.git', lane: 'app', owns: ['src/app/**'], depends_on: ['svc'], run: 'mkdir -p src/app && cp src/svc/main.txt src/app/main.txt' },
  ],
};

const gitOut = (...args: string[]) => execFileSync('git', ['--git-dir', join(dir, 'mono.git'), ...args], { encoding: 'utf8' });

describe('wave integration', () => {
  it('eight lanes over three waves: one conflict, one failed seam, a release branch through the gate; a re-run merges nothing twice', async () => {
    await createRepo(dir, 'mono', { 'README.md': '# mono\n', 'src/routes.txt': 'home\n' }, { clone: false });
    const file = writeFleetFile(dir, FLEET);
    // A dry run integrates nothing: no integration or release branch appears.
    const dry = await fleet([...runArgs(file, join(dir, 'ws0')), '--dry-run'], { cwd: dir });
    expect(await remoteBranches(join(dir, 'mono.git'))).toEqual(['main']);
    // Without an integration to build on, app finds no svc in its base: a dry run shows that too (exit 1).
    expect(dry.code).toBe(1);
    expect(lane(readManifest(join(dir, 'ws0')), 'app')).toMatchObject({ status: 'failed', error: { class: 'directive-failed' } });
    expect(readManifest(join(dir, 'ws0')).integration![0]?.waves ?? []).toEqual([]);
    const r = await fleet(runArgs(file, join(dir, 'ws1')), { cwd: dir });
    expect(r.code).toBe(1);
    const m = readManifest(join(dir, 'ws1'));
    expect(m.waves.map((x) => x.lanes)).toEqual([['api', 'docs', 'lib', 'ui'], ['cli', 'svc', 'widget'], ['app']]);
    const integ = m.integration![0]!;
    expect(integ.branch).toBe('fleet/int/_integration');
    expect(integ.waves[0]).toMatchObject({ wave: 0, order: ['api', 'docs', 'lib'], held: [{ lane: 'ui', conflicts: ['src/routes.txt'] }] });
    expect(lane(m, 'ui').integration).toMatchObject({ state: 'held', conflicts: ['src/routes.txt'] });
    expect(lane(m, 'widget')).toMatchObject({ status: 'skipped', error: { class: 'dependency-failed' } });
    expect(lane(m, 'widget').error!.message).toContain('dependency "ui" is held out of the integration');
    // The failed seam is on record; the wave was integrated again without the lane that declared the edge.
    expect(integ.waves[1]!.order).toEqual(['svc']);
    expect(integ.waves[1]!.held).toEqual([
      { lane: 'cli', conflicts: [], reason: expect.stringContaining('the seam with svc fails `! grep -rq INCOMPATIBLE src/cli`') },
    ]);
    expect(integ.waves[1]!.seams).toContainEqual({ lanes: ['cli', 'svc'], check: '! grep -rq INCOMPATIBLE src/cli', ok: false, detail: 'exit 1' });
    expect(integ.waves[2]!.order).toEqual(['app']);
    // Later waves started from the integration: svc read lib's file, app read svc's.
    expect(lane(m, 'svc').base_branch).toBe('fleet/int/_integration');
    expect(await readRemoteFile(join(dir, 'mono.git'), 'fleet/int/svc', 'src/svc/main.txt')).toBe('uses v1\n');
    // The release: the last verified integration, through the global gate (every lane's checks).
    expect(integ.release).toMatchObject({ branch: 'fleet/int/_release', ok: true, gate: [{ check: 'test -f README.md', ok: true }] });
    expect(integ.release!.commit).toBe(integ.head);
    const files = gitOut('ls-tree', '-r', '--name-only', 'fleet/int/_release').trim().split('\n');
    expect(files).toEqual(['README.md', 'docs/guide.md', 'src/api/index.txt', 'src/app/main.txt', 'src/lib/util.txt', 'src/routes.txt', 'src/svc/main.txt']);
    // One merge commit per lane, two parents each: never an octopus.
    const merges = gitOut('log', '--merges', '--format=%P', 'fleet/int/_release').trim().split('\n');
    expect(merges).toHaveLength(5);
    for (const parents of merges) expect(parents.split(' ')).toHaveLength(2);
    const report = readFileSync(join(dir, 'ws1', 'report.md'), 'utf8');
    expect(report).toContain('### Integration');
    expect(report).toContain('- Wave 1: merged `api` → `docs` → `lib`; held `ui`: merging it into fleet/int/\\_integration conflicts in src/routes.txt.');
    expect(report).toContain('- Wave 2: merged `svc`; held `cli`: the seam with svc fails');
    expect(report).toContain('seams `cli`↔`svc` failed.');
    expect(report).toMatch(/- Release `fleet\/int\/_release` at `[0-9a-f]{12}`: global seam gate passed \(`test -f README\.md` passed\)\./);

    // Someone pushes a fix onto the release branch; then a re-run in the same workspace: what is merged stays merged
    // once, and the release branch is not moved back over the person's commit.
    const fix = await commitToRemote(join(dir, 'mono.git'), 'fleet/int/_release', { 'FIX.md': 'by a person\n' });
    const again = await fleet(runArgs(file, join(dir, 'ws1')), { cwd: dir });
    expect(again.code, again.stderr).toBe(1);
    const m2 = readManifest(join(dir, 'ws1'));
    expect(m2.integration![0]!.waves[0]).toMatchObject({ order: [], already: ['api', 'docs', 'lib'] });
    expect(gitOut('log', '--merges', '--format=%P', 'fleet/int/_integration').trim().split('\n')).toHaveLength(5);
    expect(gitOut('rev-parse', 'fleet/int/_release').trim()).toBe(fix);
    expect(m2.integration![0]!.release).toMatchObject({
      ok: false,
      gate: expect.arrayContaining([expect.objectContaining({ check: 'push fleet/int/_release', detail: expect.stringContaining('nothing was overwritten') })]),
    });
  });

  it.runIf(isRoot && canIsolate)('as root, each integration check has a user and a HOME of its own: what one leaves there reaches no later check', async () => {
    // Issue 28, second pass: every check of a repository's integration ran in one folder, so as one user with one
    // HOME: a program or profile one check left there steered the later checks, bisection and the release gate.
    await createRepo(dir, 'mono', { 'README.md': '# mono\n' }, { clone: false });
    const check = '[ -z "$(ls -A "$HOME")" ] || { echo "HOME holds: $(ls -A "$HOME")"; exit 1; }; touch "$HOME/left-by-$$"';
    const file = writeFleetFile(dir, {
      name: 'homes',
      directive: 'd',
      max_retries: 0,
      isolation: 'required',
      integrate: {},
      targets: [
        { repo: './mono.git', lane: 'one', owns: ['x/**'], run: 'mkdir -p x && echo x > x/a', checks: [check] },
        { repo: './mono.git', lane: 'two', owns: ['y/**'], depends_on: ['one'], run: 'mkdir -p y && echo y > y/a', checks: [check] },
      ],
    });
    const r = await fleet(runArgs(file, join(dir, 'ws')), { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const m = readManifest(join(dir, 'ws'));
    expect(lane(m, 'one').integration).toMatchObject({ state: 'merged' });
    expect(lane(m, 'two').integration).toMatchObject({ state: 'merged' });
    expect(readFileSync(join(dir, 'ws', 'report.md'), 'utf8')).not.toMatch(/HOME holds: left-by/);
  });

  it('a check runs in a copy of its own: wrecking its .git changes nothing Fleet merges or pushes; names Fleet force-moves are refused', async () => {
    await createRepo(dir, 'mono', { 'README.md': '# mono\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'int',
      directive: 'd',
      run: 'true',
      max_retries: 0,
      integrate: {},
      targets: [
        // Its check passes in the lane, and wrecks .git (objects, HEAD) wherever the integration runs it.
        {
          repo: './mono.git',
          lane: 'evil',
          owns: ['x/**'],
          run: 'mkdir -p x && echo x > x/a',
          checks: ['case "$PWD" in */integration/*) rm -rf .git/objects/* && echo junk > .git/HEAD;; esac; true'],
        },
        { repo: './mono.git', lane: 'after', owns: ['y/**'], depends_on: ['evil'], run: 'mkdir -p y && echo y > y/a' },
      ],
    });
    const r = await fleet(runArgs(file, join(dir, 'ws')), { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    const m = readManifest(join(dir, 'ws'));
    expect(lane(m, 'evil').integration).toMatchObject({ state: 'merged' });
    expect(lane(m, 'after').integration).toMatchObject({ state: 'merged', wave: 1 });
    expect(gitOut('ls-tree', '-r', '--name-only', 'fleet/int/_release').trim().split('\n')).toEqual(['README.md', 'x/a', 'y/a']);
    expect(readFileSync(join(dir, 'ws', 'report.md'), 'utf8')).toContain('### Integration');

    const bad = writeFleetFile(
      dir,
      {
        name: 'int',
        directive: 'd',
        run: 'true',
        checkpoint: 'merged',
        integrate: { branch: 'main', release: 'main' },
        targets: [
          { repo: './mono.git', base: 'main' },
          { repo: './mono.git', lane: 'next', base: 'next', owns: ['n/**'] },
          { repo: './mono.git', lane: 'more', base: 'next', owns: ['m/**'] },
        ],
      },
      'bad.yml',
    );
    const refused = await fleet(['plan', bad], { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('integrate.branch: "main" must contain {name}');
    expect(refused.stderr).toContain('integrate.release: the release branch must differ from the integration branch');
    expect(refused.stderr).toContain('checkpoint: checkpoint: merged waits for a lane to reach its base branch');
    expect(refused.stderr).toContain('the lanes of ./mono.git name different bases (main: mono; next: next, more): its integration branch has one base');
  });

  it('a check every lane shares that fails on the integrated tree is bisected to the lane that broke it; the others are merged', async () => {
    await createRepo(dir, 'mono', { 'README.md': '# mono\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'bis',
      directive: 'd',
      max_retries: 0,
      // Passes in every lane alone: b and c do not fit together, and c is merged after b.
      checks: ['! (test -f src/b.txt && test -f src/c.txt)'],
      integrate: {},
      targets: ['a', 'b', 'c', 'd'].map((x) => ({ repo: './mono.git', lane: x, owns: [`src/${x}.txt`], run: `mkdir -p src && echo ${x} > src/${x}.txt` })),
    });
    const r = await fleet(runArgs(file, join(dir, 'ws')), { cwd: dir });
    expect(r.code, r.stderr).toBe(1);
    const integ = readManifest(join(dir, 'ws')).integration![0]!;
    expect(integ.waves[0]!.order).toEqual(['a', 'b', 'd']);
    expect(integ.waves[0]!.held).toEqual([
      { lane: 'c', conflicts: [], reason: expect.stringContaining("fails on the integrated tree from its merge on (bisected over the wave's 4 merges)") },
    ]);
    expect(gitOut('ls-tree', '-r', '--name-only', 'fleet/bis/_release').trim().split('\n')).toEqual(['README.md', 'src/a.txt', 'src/b.txt', 'src/d.txt']);
  });

  it('a shared check that fails on the integration before any merge holds every lane that has it, saying so', async () => {
    await createRepo(dir, 'mono', { 'README.md': '# mono\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'pre',
      directive: 'd',
      max_retries: 0,
      // Passes in a lane, fails wherever the integration runs it, whatever is merged.
      checks: ['test "$FLEET_BRANCH" != fleet/pre/_integration'],
      integrate: {},
      targets: ['a', 'b'].map((x) => ({ repo: './mono.git', lane: x, owns: [`${x}.txt`], run: `echo ${x} > ${x}.txt` })),
    });
    const r = await fleet(runArgs(file, join(dir, 'ws')), { cwd: dir });
    expect(r.code, r.stderr).toBe(1);
    const m = readManifest(join(dir, 'ws'));
    for (const id of ['a', 'b'])
      expect(lane(m, id).integration).toMatchObject({
        state: 'held',
        reason: expect.stringContaining('fails on the last verified integration already, before any lane of this wave is merged'),
      });
    expect(m.integration![0]!.release).toBeNull();
  });

  it('an incremental sweep whose first wave is unchanged starts the later waves from the integration, not the bare base', async () => {
    await createRepo(dir, 'mono', { 'README.md': '# mono\n' }, { clone: false });
    const lib = { repo: './mono.git', lane: 'lib', owns: ['lib/**'], run: 'mkdir -p lib && echo v1 > lib/util.txt' };
    const svc = {
      repo: './mono.git',
      lane: 'svc',
      owns: ['svc/**'],
      depends_on: ['lib'],
      run: 'mkdir -p svc && echo "uses $(cat lib/util.txt)" > svc/main.txt',
    };
    const spec = { name: 'inc', directive: 'd', max_retries: 0, integrate: {}, targets: [lib, svc] };
    const file = writeFleetFile(dir, spec);
    const first = await fleet(runArgs(file, join(dir, 'ws1')), { cwd: dir });
    expect(first.code, first.stderr).toBe(0);
    // The directive of svc changes; lib's does not, and its base has not moved: lib does not run again.
    const changed = writeFleetFile(dir, { ...spec, targets: [lib, { ...svc, run: svc.run.replace('"uses', '"now uses') }] }, 'changed.yml');
    const second = await fleet([...runArgs(changed, join(dir, 'ws2')), '--since', join(dir, 'ws1', 'fleet-status.json')], { cwd: dir });
    expect(second.code, second.stderr).toBe(0);
    const m = readManifest(join(dir, 'ws2'));
    expect(lane(m, 'lib')).toMatchObject({ status: 'unchanged', integration: { state: 'merged', reason: 'already in the integration branch' } });
    expect(m.integration![0]!.waves[0]).toMatchObject({ order: [], already: ['lib'] });
    expect(lane(m, 'svc').base_branch).toBe('fleet/inc/_integration');
    expect(await readRemoteFile(join(dir, 'mono.git'), 'fleet/inc/_release', 'svc/main.txt')).toBe('now uses v1\n');
  });

  it('an unchanged lane held again in the next sweep still blocks its dependent', async () => {
    await createRepo(dir, 'mono', { 'README.md': '# mono\n', 'routes.txt': 'home\n' }, { clone: false });
    const api = { repo: './mono.git', lane: 'api', owns: ['api/**', 'routes.txt'], run: 'mkdir -p api && echo api > api/x && echo api >> routes.txt' };
    const lib = {
      repo: './mono.git',
      lane: 'lib',
      owns: ['lib/**', 'routes.txt'],
      soft_depends_on: ['api'],
      run: 'mkdir -p lib && echo v1 > lib/util.txt && echo lib >> routes.txt',
    };
    const svc = {
      repo: './mono.git',
      lane: 'svc',
      owns: ['svc/**'],
      depends_on: ['lib'],
      run: 'mkdir -p svc && echo "uses $(cat lib/util.txt)" > svc/main.txt',
    };
    const file = writeFleetFile(dir, { name: 'inc', directive: 'd', max_retries: 0, integrate: {}, targets: [api, lib, svc] });
    await fleet(runArgs(file, join(dir, 'ws1')), { cwd: dir });
    expect(lane(readManifest(join(dir, 'ws1')), 'lib').integration).toMatchObject({ state: 'held', conflicts: ['routes.txt'] });
    // The next sweep: lib did not change, so it does not run; integrated again, it conflicts again.
    const second = await fleet([...runArgs(file, join(dir, 'ws2')), '--since', join(dir, 'ws1', 'fleet-status.json')], { cwd: dir });
    expect(second.code).toBe(1);
    const m = readManifest(join(dir, 'ws2'));
    expect(lane(m, 'lib')).toMatchObject({ status: 'unchanged', integration: { state: 'held' } });
    expect(lane(m, 'svc')).toMatchObject({ status: 'skipped', error: { class: 'dependency-failed' } });
  });

  it("a lane started from another base than its repository's integration is held, saying which", async () => {
    await createRepo(dir, 'mono', { 'README.md': '# mono\n' }, { clone: false });
    await commitToRemote(join(dir, 'mono.git'), 'dev', { 'DEV.md': 'dev\n' });
    const file = writeFleetFile(dir, {
      name: 'two',
      directive: 'd',
      max_retries: 0,
      integrate: {},
      targets: [
        { repo: './mono.git', lane: 'a', owns: ['a.txt'], run: 'echo a > a.txt' },
        { repo: './mono.git', lane: 'b', base: 'dev', owns: ['b.txt'], run: 'echo b > b.txt' },
      ],
    });
    const r = await fleet(runArgs(file, join(dir, 'ws')), { cwd: dir });
    expect(r.code, r.stderr).toBe(1);
    const m = readManifest(join(dir, 'ws'));
    expect(lane(m, 'a').integration).toMatchObject({ state: 'merged' });
    expect(lane(m, 'b').integration).toMatchObject({
      state: 'held',
      reason: 'it started from dev, and the integration of ./mono.git is based on main: give the lanes of one repository the same base:',
    });
    expect(gitOut('ls-tree', '-r', '--name-only', 'fleet/two/_release').trim().split('\n')).toEqual(['README.md', 'a.txt']);
  });

  it('bisects a check only some lanes have from the first of them, and checks the next check on the whole tree again', async () => {
    await createRepo(dir, 'mono', { 'README.md': '# mono\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'part',
      directive: 'd',
      max_retries: 0,
      integrate: {},
      targets: [
        // a has no check; b, c and d share one that c breaks together with b; d also checks its own file.
        { repo: './mono.git', lane: 'a', owns: ['a.txt'], run: 'echo a > a.txt' },
        ...['b', 'c'].map((x) => ({
          repo: './mono.git',
          lane: x,
          owns: [`${x}.txt`],
          run: `echo ${x} > ${x}.txt`,
          checks: ['! (test -f b.txt && test -f c.txt)'],
        })),
        { repo: './mono.git', lane: 'd', owns: ['d.txt'], run: 'echo d > d.txt', checks: ['! (test -f b.txt && test -f c.txt)', 'test -f d.txt'] },
      ],
    });
    const r = await fleet(runArgs(file, join(dir, 'ws')), { cwd: dir });
    expect(r.code, r.stderr).toBe(1);
    const integ = readManifest(join(dir, 'ws')).integration![0]!;
    // Bisected from b (a has not the check): c's merge breaks it. d's own check ran on the tree at its head, not where the bisect left it.
    expect(integ.waves[0]!.order).toEqual(['a', 'b', 'd']);
    expect(integ.waves[0]!.held).toEqual([
      { lane: 'c', conflicts: [], reason: expect.stringContaining("fails on the integrated tree from its merge on (bisected over the wave's 4 merges)") },
    ]);
  });

  it("a push of the integration branch the forge refuses holds the wave's lanes with the reason; the run goes on", async () => {
    await createRepo(dir, 'mono', { 'README.md': '# mono\n' }, { clone: false });
    // The forge refuses the integration branch (a branch protection rule, say), nothing else.
    const hook = join(dir, 'mono.git', 'hooks', 'pre-receive');
    mkdirSync(dirname(hook), { recursive: true });
    writeFileSync(hook, '#!/bin/sh\nwhile read old new ref; do case "$ref" in */_integration) echo "protected: $ref" >&2; exit 1;; esac; done\n', {
      mode: 0o755,
    });
    const file = writeFleetFile(dir, {
      name: 'ref',
      directive: 'd',
      max_retries: 0,
      integrate: {},
      targets: [
        { repo: './mono.git', lane: 'lib', owns: ['lib.txt'], run: 'echo v1 > lib.txt' },
        { repo: './mono.git', lane: 'svc', owns: ['svc.txt'], depends_on: ['lib'], run: 'cp lib.txt svc.txt' },
      ],
    });
    const r = await fleet(runArgs(file, join(dir, 'ws')), { cwd: dir });
    expect(r.code, r.stderr).toBe(1);
    const m = readManifest(join(dir, 'ws'));
    expect(lane(m, 'lib').integration).toMatchObject({ state: 'held', reason: expect.stringContaining('the integration branch could not be pushed') });
    expect(lane(m, 'svc')).toMatchObject({ status: 'skipped', error: { class: 'dependency-failed' } });
    expect(await remoteBranches(join(dir, 'mono.git'))).not.toContain('fleet/ref/_integration');
  });

  it('a conflicting path with a line break in its name is quoted on one line in the reason', async () => {
    await createRepo(dir, 'mono', { 'README.md': '# mono\n' }, { clone: false });
    const nasty = 'printf \'%s\\n\' "$FLEET_LANE" > "$(printf \'x\\n::error::forged\')"';
    const file = writeFleetFile(dir, {
      name: 'nl',
      directive: 'd',
      max_retries: 0,
      integrate: {},
      targets: [
        { repo: './mono.git', lane: 'a', owns: ['**'], run: nasty },
        { repo: './mono.git', lane: 'b', owns: ['**'], soft_depends_on: ['a'], run: nasty },
      ],
    });
    const r = await fleet(runArgs(file, join(dir, 'ws')), { cwd: dir });
    expect(r.code, r.stderr).toBe(1);
    const b = lane(readManifest(join(dir, 'ws')), 'b');
    expect(b.integration).toMatchObject({ state: 'held', conflicts: ['x\n::error::forged'] });
    expect(b.integration!.reason).toContain('conflicts in x\\n::error::forged');
    expect(b.integration!.reason).not.toContain('\n');
  });
});
