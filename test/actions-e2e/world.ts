/**
 * The real chain on an emulated GitHub: Fleet published as a repository of
 * the emulator (action.yml, dist/, the reusable workflow, tagged v1), a
 * control repository holding a caller copied from workflows-templates/ and a
 * fleet file, target repositories, and the workflow runner that runs it all.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { stringify } from 'yaml';
import { repoWith, startActions, type Actions } from '../actions-runner/helpers.js';
import type { Manifest } from '../../src/core/model.js';
import type { ActionsServicesOptions, ArtifactRecord } from '../support/actions-services/index.js';
import type { RunSummary } from '../support/actions-runner/index.js';
import type { RunnerOptions } from '../support/actions-runner/index.js';
import type { EmulatorOptions } from '../support/github-emulator/index.js';

const ROOT = join(import.meta.dirname, '..', '..');
/** The token the caller passes as the `token` secret: a PAT that can push to the targets. */
export const PAT = 'ghp_FleetWorkflowPat0123456789abcdefghijKL';
export const FLEET_REPO = 'acme/fleet';
export const CONTROL_REPO = 'acme/control';

/** Test knobs Fleet reads (no GitHub pacing, fast polling); a real runner has none of them. */
export const KNOBS = { FLEET_GITHUB_PACING_MS: '0', FLEET_GITHUB_POLL_MS: '25', FLEET_GITHUB_CI_GRACE_MS: '250' };

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

/** Fleet as users get it: the files of this checkout that the action and the reusable workflow need. */
export function fleetFiles(): Record<string, string> {
  const files: Record<string, string> = {};
  for (const p of [join(ROOT, 'action.yml'), join(ROOT, '.github/workflows/fleet.yml'), ...filesUnder(join(ROOT, 'dist'))]) {
    if (p.endsWith('licenses.txt')) continue;
    files[relative(ROOT, p)] = readFileSync(p, 'utf8');
  }
  return files;
}

/** A template from workflows-templates/, pointed at the emulated Fleet repository. */
export function template(name: string, fleetRef = 'v1'): string {
  const text = readFileSync(join(ROOT, 'workflows-templates', name), 'utf8');
  const uses = /uses: \S+\/\.github\/workflows\/fleet\.yml@\S+/;
  // The doctor template uses the action itself, not the reusable workflow.
  const action = /uses: your-org\/fleet@\S+/;
  if (!uses.test(text) && !action.test(text)) throw new Error(`${name} uses neither the reusable workflow nor the action`);
  return text.replace(uses, `uses: ${FLEET_REPO}/.github/workflows/fleet.yml@${fleetRef}`).replace(action, `uses: ${FLEET_REPO}@${fleetRef}`);
}

/**
 * A caller without its approval gate: the dispatch template names `fleet-approval`, whose plan is refused unless the
 * environment has required reviewers (gate.test.ts runs it with one); every other test runs the fleet straight through.
 */
export function ungated(caller: string): string {
  const out = caller.replace(/\n *approval-environment: .*\n/, '\n');
  if (out === caller) throw new Error('the caller names no approval-environment');
  return out;
}

export interface World extends Actions {
  /** Writes a file into the control repository (a new commit on main). */
  commitControl(files: Record<string, string>): Promise<void>;
}

export async function startWorld(
  opts: {
    emulator?: EmulatorOptions;
    runner?: Partial<RunnerOptions>;
    fleetFile?: Record<string, unknown>;
    caller?: string;
    services?: ActionsServicesOptions;
  } = {},
): Promise<World> {
  // Responses are checked against GitHub's schemas here too: a job that reads a field the emulator answers wrongly would pass for the wrong reason.
  const a = await startActions({ emulator: { ...opts.emulator }, runner: { extraEnv: KNOBS, ...opts.runner }, services: opts.services });
  a.emu.addToken(PAT, { login: 'platform-bot', type: 'pat', default: 'push' });
  await repoWith(a.emu, FLEET_REPO, fleetFiles());
  const fleetGit = join(a.emu.reposDir, `${FLEET_REPO}.git`);
  execFileSync('git', ['--git-dir', fleetGit, 'tag', 'v1', 'main']);
  // GitHub serves packed repositories; a pack made once keeps every job's checkout of the 9 MB dist/ cheap.
  execFileSync('git', ['--git-dir', fleetGit, 'repack', '-a', '-d', '-q']);
  await repoWith(a.emu, CONTROL_REPO, {
    '.github/workflows/fleet.yml': opts.caller ?? ungated(template('fleet-dispatch.yml')),
    ...(opts.fleetFile ? { 'fleet.yml': stringify(opts.fleetFile) } : {}),
  });
  a.runner.setSecret(CONTROL_REPO, 'FLEET_TOKEN', PAT);
  return {
    ...a,
    // Every answer the jobs read must be one GitHub could give: the emulator's response-schema problems fail the file.
    async close() {
      const problems = a.emu.responseProblems.map((p) => `${p.operationId} ${p.status} ${p.path} ${JSON.stringify(p.errors.slice(0, 3))}`);
      await a.close();
      if (problems.length)
        throw new Error(`the GitHub emulator answered ${problems.length} response(s) GitHub's schema would not allow:\n  ${problems.join('\n  ')}`);
    },
    async commitControl(files) {
      await a.emu.commit({ owner: 'acme', repo: 'control', branch: 'main', files });
    },
  };
}

/** The artifacts of a run, by name (every attempt's). */
export function artifactsOf(w: Actions, runId: number): Map<string, ArtifactRecord> {
  return new Map(w.services.artifacts({ runId }).map((a) => [a.name, a]));
}

/** Unzips an artifact the run uploaded and reads a file of it. */
export function artifactFile(w: Actions, artifact: ArtifactRecord, file: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'artifact-'));
  try {
    writeFileSync(join(dir, 'a.zip'), w.services.artifactContent(artifact.id)!);
    execFileSync('unzip', ['-q', join(dir, 'a.zip'), '-d', join(dir, 'x')]);
    return readFileSync(join(dir, 'x', file), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The manifest and report of a run attempt's `fleet-report.a<N>` artifact. */
export function reportArtifact(w: Actions, runId: number, attempt = 1): { manifest: Manifest; report: string } {
  const a = artifactsOf(w, runId).get(`fleet-report.a${attempt}`);
  if (!a) throw new Error(`run ${runId} has no fleet-report.a${attempt} (it has ${[...artifactsOf(w, runId).keys()].join(', ')})`);
  return { manifest: JSON.parse(artifactFile(w, a, 'fleet-status.json')) as Manifest, report: artifactFile(w, a, 'report.md') };
}

/** A job's log, annotations and conclusion, for an assertion message. */
export function explain(s: RunSummary): string {
  return s.jobs
    .map(
      (j) =>
        `=== ${j.name} (attempt ${j.attempt}): ${j.conclusion}\n${j.annotations.map((x) => `[${x.level}] ${x.message}`).join('\n')}\n${j.log.split('\n').slice(-40).join('\n')}`,
    )
    .join('\n');
}

/** Dispatches the control repository's caller (the dispatch template) and waits for the run. */
export async function dispatchFleet(w: World, inputs: Record<string, string | boolean> = {}): Promise<{ runId: number; s: RunSummary }> {
  const run = await w.runner.dispatch({
    repo: CONTROL_REPO,
    workflow: '.github/workflows/fleet.yml',
    inputs: { directive: 'Apply the fleet.', 'dry-run': false, ...inputs },
  });
  return { runId: run.id, s: await w.runner.finish(run) };
}

/**
 * Waits until `cond` holds (polling), or throws naming what it waited for. The default is generous because a plan
 * job on a 2-core machine running the whole suite has taken over 20 s to reach a gate.
 */
export async function until(cond: () => boolean, what: string, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The plan a run's plan job uploaded (`fleet-plan.a<attempt>`): the manifest with its waves and shards. */
export function planOf(w: Actions, runId: number, attempt = 1): { manifest: Manifest } {
  const a = artifactsOf(w, runId).get(`fleet-plan.a${attempt}`);
  if (!a) throw new Error(`run ${runId} has no fleet-plan.a${attempt}`);
  return JSON.parse(artifactFile(w, a, 'fleet.json')) as { manifest: Manifest };
}

/** The name of the job that runs a lane's shard (`fleet / wave 1 (w0-s2)`). */
export function shardJobName(w: Actions, runId: number, lane: string): string {
  for (const wave of planOf(w, runId).manifest.waves) {
    for (const shard of wave.shards) if (shard.lanes.includes(lane)) return `fleet / wave ${wave.index + 1} (${shard.id})`;
  }
  throw new Error(`lane ${lane} is in no shard`);
}
