/**
 * The real Claude Code CLI (the version pinned in package.json) in the wave legs of the reusable workflow, against the
 * model-API emulator (test/support/model-api/): the review path (a lens, the dispositions, a fix round) and the
 * strategies path (each strategy its own agent run, the pick compared in the leg), as a GitHub user runs them.
 *
 * What reaches the legs is only what reaches them on GitHub: the key as the workflow's `anthropic-api-key` secret, and
 * the model API's address in the fleet file's `agent.env` (a caller of a reusable workflow cannot set the environment
 * of its jobs: https://docs.github.com/en/actions/sharing-automations/reusing-workflows#limitations). The CLI is the
 * one installed in node_modules (`install: false`, `command`): its install on a leg is test/actions-e2e/agents.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  reviewPanel,
  startModelApi,
  textOf,
  workingDirectory,
  type Conversation,
  type MessagesRequest,
  type ModelApi,
  type Turn,
} from '../support/model-api/index.js';
import type { RunSummary } from '../support/actions-runner/index.js';
import { artifactsOf, CONTROL_REPO, dispatchFleet, explain, reportArtifact, startWorld, type World } from './world.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 400_000 });

const CLAUDE = resolve('node_modules/.bin/claude');

let w: World;
let api: ModelApi;
let runId: number;
let s: RunSummary;

/** The text Fleet handed this run (the prompt file), as the CLI sent it. */
const asked = (req: MessagesRequest) => textOf(req.messages[0]?.content);
const at = (req: MessagesRequest, file: string) => `${workingDirectory(req)}/${file}`;
const edit = (from: string, to: string): Conversation['turns'] => [
  (req): Turn => ({ blocks: [{ tool: 'Read', input: { file_path: at(req, 'src/app.js') } }] }),
  (req): Turn => ({ blocks: [{ tool: 'Edit', input: { file_path: at(req, 'src/app.js'), old_string: from, new_string: to } }] }),
  { blocks: [{ text: 'Done.' }] },
];

beforeAll(async () => {
  api = await startModelApi();
  // Registered first: every run's prompt quotes the directive, so the workers' conversations match last.
  reviewPanel(api, (req) => asked(req as MessagesRequest));
  api.converse({ name: 'fix', match: '## Review findings to fix', turns: edit('BUG', 'OK') });
  api.converse({ name: 'minimal', match: 'STRATEGY-MINIMAL', turns: edit('value = 1;', 'value = 10;') });
  api.converse({
    name: 'rewrite',
    match: 'STRATEGY-REWRITE',
    turns: edit('export const value = 1;\n', 'export const value = 10;\nexport const other = 20;\n'),
  });
  api.converse({ name: 'worker', match: 'Set the value.', turns: edit('= 1;', '= BUG;') });

  w = await startWorld({
    fleetFile: {
      name: 'real',
      forge: 'github',
      directive: 'Set the value.',
      agent: { preset: 'claude', command: CLAUDE, install: false, env: { ANTHROPIC_BASE_URL: api.url } },
      owns: ['src/**'],
      max_retries: 0,
      review: { lenses: ['correctness'], rounds: 2 },
      speculative: { pick: 'smallest-green-diff' },
      targets: [
        { repo: 'acme/svc' },
        {
          repo: 'acme/spec',
          strategies: [
            { label: 'minimal', directive: 'Change the value only. STRATEGY-MINIMAL' },
            { label: 'rewrite', directive: 'Rewrite the file. STRATEGY-REWRITE' },
          ],
        },
      ],
    },
  });
  for (const name of ['svc', 'spec'])
    await w.emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n`, 'src/app.js': 'export const value = 1;\n' } });
  w.runner.setSecret(CONTROL_REPO, 'ANTHROPIC_API_KEY', api.key);
  const r = await dispatchFleet(w, { directive: 'Set the value.' });
  runId = r.runId;
  s = r.s;
});
afterAll(async () => {
  await w?.close();
  await api?.close();
});

const laneOf = (id: string) => reportArtifact(w, runId).manifest.lanes.find((l) => l.lane === id)!;

describe('the real Claude Code in the legs of the reusable workflow', () => {
  it('reviews a lane: the lens finds the marker, the worker accepts it and fixes it, the next round is clear, the PR holds the fix', () => {
    const l = laneOf('svc');
    expect(l, explain(s)).toMatchObject({ status: 'completed', phase: 'pr-open', changed_files: ['src/app.js'] });
    expect(l.review?.verdict).toBe('clear');
    expect(l.review?.rounds.map((x) => x.verdict)).toEqual(['fix', 'clear']);
    expect(l.review?.findings).toEqual([expect.objectContaining({ severity: 'high', file: 'src/app.js', disposition: 'ACCEPT', status: 'fixed' })]);
    expect(execFileSync('git', ['--git-dir', join(w.emu.reposDir, 'acme/svc.git'), 'show', 'fleet/real/svc:src/app.js'], { encoding: 'utf8' })).toBe(
      'export const value = OK;\n',
    );
    // The panel's spending is the CLI's own, read from its results in the leg.
    expect(l.review?.usage.cost_usd).toBeGreaterThan(0);
    expect(api.of('dispositions').length).toBe(1);
  });

  it('runs each strategy as its own agent run in one leg and opens a PR for the smaller green change only', () => {
    expect(laneOf('spec.minimal')).toMatchObject({ status: 'completed', phase: 'pr-open', strategy: { picked: true } });
    expect(laneOf('spec.rewrite')).toMatchObject({ status: 'completed', strategy: { picked: false } });
    expect(w.emu.pullRequests('acme/spec').map((p) => p.headRef)).toEqual(['fleet/real/spec/minimal']);
    expect(api.of('minimal').length).toBe(3);
    expect(api.of('rewrite').length).toBe(3);
  });

  it('every model request came from a leg with the secret as its key, and the key reaches no artifact or log unmasked', () => {
    const messages = api.requests.filter((r) => r.path.startsWith('/v1/messages'));
    expect(messages.length).toBeGreaterThan(10);
    expect(messages.every((r) => r.headers['x-api-key'] === '<the key>')).toBe(true);
    for (const job of s.jobs) expect(job.log, job.name).not.toContain(api.key);
    for (const artifact of artifactsOf(w, runId).values()) expect(w.services.artifactContent(artifact.id)!.includes(api.key), artifact.name).toBe(false);
  });
});
