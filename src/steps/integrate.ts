/**
 * Wave integration into one release branch (issue 9, "One repository, many tasks"). With `integrate:` in the fleet
 * file, after every wave each repository's completed lane branches are merged into its integration branch one at a
 * time, in lane order (never an octopus merge). A conflict holds that lane (its dependents wait) and not the others.
 * Each merged lane's checks, and the seam of every soft edge (`soft_depends_on`), then run on the integrated tree;
 * a lane whose check or seam fails is held too and the wave is integrated again without it. Only a verified
 * integration is pushed, and lanes of later waves start from it. At the end the last verified integration becomes
 * the release branch, the full checks run on it (the global seam gate), and one PR carries the whole fleet.
 *
 * A re-run integrates again on top of what the integration branch already holds: a lane already merged is not
 * merged twice.
 */
import { createHash } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { IntegrateSpec } from '../core/fleet-file.js';
import { newLaneRecord, type IntegrationRecord, type LaneRecord, type SeamResult } from '../core/model.js';
import { codeSpan, escapeCell, pathSpan } from '../core/markdown.js';
import type { LaneSpec } from '../core/model.js';
import { reviewBodyLines } from '../core/report.js';
import type { CloneResult } from '../ports.js';
import { gist, type LaneContext } from './lane/index.js';

/** The branch a lane of `repo` starts from: the repository's integration branch once a wave was verified there. */
export function integratedBase(records: readonly IntegrationRecord[], repo: string): string | undefined {
  const r = records.find((x) => x.repo === repo);
  return r?.head && r.head !== r.base_commit ? r.branch : undefined;
}

/**
 * Whether a lane has a change to integrate: completed with a pushed commit, or unchanged since the last sweep with
 * one (an incremental sweep integrates it again, which finds it already in the integration branch, so later waves
 * build on the integration and not on the bare base); of a target tried several ways, the pick only.
 */
export function integrable(rec: LaneRecord): boolean {
  if ((rec.status !== 'completed' && rec.status !== 'unchanged') || !rec.commit || !rec.branch || rec.phase === 'no-op' || rec.phase === 'dry-run')
    return false;
  return !rec.strategy || rec.strategy.picked === true;
}

interface RepoState {
  record: IntegrationRecord;
  dir: string;
  /** A lane of the repository, for the forge's calls (its clone URL, its base). */
  spec: LaneSpec;
  /** Where the integration branch is on the remote: the lease of the next push. */
  remote: string | null;
  /** Lanes merged in some wave, in order. */
  merged: string[];
  /** Why this repository's integration stopped (git or the forge failed): every later lane of this run is held. */
  broken?: string;
}

type Pass = {
  order: string[];
  /** The integration's head after each merge of `order`: the points a failing check is bisected over. */
  heads: string[];
  already: string[];
  held: { lane: string; conflicts: string[]; reason: string }[];
  seams: SeamResult[];
  failing: Map<string, string>;
  head: string;
};

export class Integration {
  private readonly repos = new Map<string, RepoState>();
  /** Checks run so far in this job: each in a folder of its own (check). */
  private checks = 0;
  /**
   * What went wrong with the integration itself rather than with a lane (git failed, a push was refused): lanes held
   * for these reasons may go in when it is tried again, so on Actions the integrate job fails and can be re-run.
   */
  readonly problems: string[] = [];
  /** Earlier jobs' records of repositories this job could not open, as this job leaves them (a release that failed). */
  private readonly unopened = new Map<string, IntegrationRecord>();

  /**
   * `prior`: what earlier jobs integrated (on GitHub Actions each wave's integration is its own job, and a fleet
   * deeper than the wave jobs goes on in a new run): each repository goes on from its record.
   */
  constructor(
    private readonly ctx: LaneContext,
    private readonly specs: ReadonlyMap<string, LaneSpec>,
    private readonly spec: IntegrateSpec,
    private readonly prior: readonly IntegrationRecord[] = [],
  ) {}

  private name(template: string): string {
    return template.replaceAll('{name}', this.ctx.file.name);
  }

  /** Every repository's record: those this process integrated, and those earlier jobs did that it has not touched. */
  records(): IntegrationRecord[] {
    const opened = [...this.repos.values()].map((s) => s.record);
    return [...this.prior.filter((p) => !this.repos.has(p.repo)).map((p) => this.unopened.get(p.repo) ?? p), ...opened];
  }

  /** Integrates the completed lanes of `laneIds` (one wave); returns their records with `integration` set. */
  async afterWave(wave: number, laneIds: readonly string[], records: ReadonlyMap<string, LaneRecord>): Promise<LaneRecord[]> {
    const out: LaneRecord[] = [];
    const byRepo = new Map<string, string[]>();
    for (const id of [...laneIds].sort()) {
      const rec = records.get(id);
      if (!rec || !integrable(rec)) continue;
      const repo = this.specs.get(id)!.repo;
      byRepo.set(repo, [...(byRepo.get(repo) ?? []), id]);
    }
    // A dry run pushes nothing, the integration branch included.
    if (this.ctx.dryRun) return out;
    for (const [repo, ids] of byRepo) {
      try {
        const state = await this.open(repo, this.specs.get(ids[0]!)!);
        if (state.broken) throw new Error(state.broken);
        out.push(...(await this.integrateWave(state, wave, ids, records)));
      } catch (err) {
        // One repository's integration failing (git, the network, an interrupt) holds its lanes, never the run.
        const reason = `the integration of ${repo} failed: ${(err as Error).message}`;
        this.problems.push(reason);
        const state = this.repos.get(repo);
        if (state) {
          state.broken ??= reason;
          state.record.waves.push({ wave, order: [], already: [], held: ids.map((lane) => ({ lane, conflicts: [], reason })), seams: [], head: null });
        }
        for (const id of ids) {
          const next = { ...records.get(id)!, integration: { state: 'held' as const, wave, merge_commit: null, conflicts: [], reason } };
          this.ctx.onUpdate(next, `held out of the integration: ${reason}`);
          out.push(next);
        }
      }
    }
    return out;
  }

  private async open(repo: string, spec: LaneSpec): Promise<RepoState> {
    const known = this.repos.get(repo);
    if (known) return known;
    const { ctx } = this;
    // A readable name and a hash (two repositories never share a folder), made afresh: a resumed run or a second run
    // in the same workspace finds the folder of the last one.
    const slug = `${repo.replace(/[^A-Za-z0-9._-]+/g, '_').slice(-60)}-${createHash('sha256').update(repo).digest('hex').slice(0, 8)}`;
    const dir = join(ctx.root, 'integration', slug);
    const branch = this.name(this.spec.branch);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const repoDir = join(dir, 'repo');
    const cloned = await ctx.workspace.clone(ctx.forge.cloneUrl(spec), repoDir, {
      base: spec.base,
      branch,
      env: ctx.forge.gitEnv(),
      timeoutMs: ctx.file.git_timeout_minutes * 60_000,
    });
    // A re-run goes on from what the integration branch already holds.
    if (cloned.remote_branch_commit) await ctx.workspace.reset(repoDir, cloned.remote_branch_commit);
    const state: RepoState = { dir: repoDir, spec, remote: cloned.remote_branch_commit, merged: [], record: this.openRecord(repo, branch, cloned) };
    // What earlier runs merged is in the tree: their seams with this run's lanes are checked like any other.
    if (cloned.remote_branch_commit) state.merged.push(...(await this.mergedBefore(repoDir, cloned.base_commit, cloned.remote_branch_commit)));
    this.repos.set(repo, state);
    return state;
  }

  /**
   * The repository's record as this job starts: an earlier job's goes on (its waves, the base it started from), at
   * the head the forge has now (the branch is the truth; a record only says what was verified when it was written).
   */
  private openRecord(repo: string, branch: string, cloned: CloneResult): IntegrationRecord {
    const fresh: IntegrationRecord = {
      repo,
      branch,
      base_branch: cloned.base_branch,
      base_commit: cloned.base_commit,
      head: cloned.remote_branch_commit ?? cloned.base_commit,
      waves: [],
      release: null,
    };
    const prior = this.prior.find((p) => p.repo === repo && p.branch === branch);
    if (!prior) return fresh;
    // An integration branch gone from the forge leaves nothing to build on: later waves start from the base again.
    if (!cloned.remote_branch_commit) return { ...fresh, waves: [...prior.waves] };
    // A branch moved since the last job verified it holds what nobody verified (someone pushed to it): nothing is
    // built on it.
    if (prior.head && cloned.remote_branch_commit !== prior.head) {
      throw new Error(
        `${branch} is at ${cloned.remote_branch_commit.slice(0, 12)}, not at ${prior.head.slice(0, 12)}, where the integration of an earlier wave left it (someone pushed to it): nothing is merged onto it`,
      );
    }
    return { ...prior, base_branch: cloned.base_branch, waves: [...prior.waves], head: cloned.remote_branch_commit };
  }

  /** The lanes of this fleet an earlier run merged into the integration branch, read from the merge commits' trailers. */
  private async mergedBefore(dir: string, base: string, head: string): Promise<string[]> {
    const lanes: string[] = [];
    // Only the integration's own first-parent history (not the base branch's), and only Fleet's merge commits: a
    // commit of the base whose message mimics the trailers says nothing.
    for (const message of await this.ctx.workspace.commitMessages(dir, `${base}..${head}`, 10_000)) {
      if (!message.startsWith('Integrate lane ') || !message.includes(`\nFleet-Id: ${this.ctx.file.name}\n`)) continue;
      const lane = /\nFleet-Lane: (\S+)\n/.exec(message)?.[1];
      if (lane && this.specs.has(lane) && !lanes.includes(lane)) lanes.push(lane);
    }
    return lanes.reverse();
  }

  /**
   * One wave of one repository: merge, check, and while a check or seam fails, merge again without the lane that
   * broke it (each pass holds at least one lane, so it ends); push what is verified.
   */
  private async integrateWave(state: RepoState, wave: number, ids: string[], records: ReadonlyMap<string, LaneRecord>): Promise<LaneRecord[]> {
    const before = state.record.head!;
    const failed = new Map<string, string>();
    // The checks and seams that failed stay on record, whichever pass ran them.
    const failedSeams: SeamResult[] = [];
    let pass = await this.pass(state, wave, ids, records, failed);
    while (pass.failing.size) {
      failedSeams.push(...pass.seams.filter((x) => !x.ok));
      for (const [lane, why] of pass.failing) failed.set(lane, why);
      pass = await this.pass(state, wave, ids, records, failed);
    }
    const held = [...pass.held, ...[...failed].map(([lane, reason]) => ({ lane, conflicts: [], reason }))];
    let head = pass.head;
    if (head !== before) {
      const pushed = await this.ctx.workspace.push(
        state.dir,
        state.record.branch,
        head,
        state.remote,
        this.ctx.forge.gitEnv(),
        this.ctx.file.git_timeout_minutes * 60_000,
      );
      if (pushed.ok) state.remote = head;
      else {
        // Not on the forge, not verified for anyone: the wave's merges are held.
        const reason = `the integration branch could not be pushed: ${gist(pushed.detail) || pushed.reason}`;
        this.problems.push(`${state.record.repo}: ${reason}`);
        for (const lane of pass.order) held.push({ lane, conflicts: [], reason });
        pass = { ...pass, order: [] };
        await this.ctx.workspace.reset(state.dir, before);
        head = before;
      }
    }
    state.record.head = head;
    for (const id of [...pass.order, ...pass.already]) if (!state.merged.includes(id)) state.merged.push(id);
    state.record.waves.push({
      wave,
      order: pass.order,
      already: pass.already,
      held,
      seams: [...failedSeams, ...pass.seams],
      head: head === before ? null : head,
    });
    const out: LaneRecord[] = [];
    for (const id of ids) {
      const rec = records.get(id)!;
      const h = held.find((x) => x.lane === id);
      const integration = h
        ? { state: 'held' as const, wave, merge_commit: null, conflicts: h.conflicts, reason: h.reason }
        : {
            state: 'merged' as const,
            wave,
            merge_commit: pass.already.includes(id) ? null : head,
            conflicts: [],
            reason: pass.already.includes(id) ? 'already in the integration branch' : null,
          };
      const next = { ...rec, integration };
      this.ctx.onUpdate(next, h ? `held out of the integration: ${h.reason}` : `integrated into ${state.record.branch}`);
      out.push(next);
    }
    return out;
  }

  /** Merges the wave's lanes (but `without`) one at a time onto the last verified integration, then runs checks and seams. */
  private async pass(
    state: RepoState,
    wave: number,
    ids: string[],
    records: ReadonlyMap<string, LaneRecord>,
    without: ReadonlyMap<string, string>,
  ): Promise<Pass> {
    const { ctx } = this;
    const ws = ctx.workspace;
    await ws.reset(state.dir, state.record.head!);
    const result: Pass = { order: [], heads: [], already: [], held: [], seams: [], failing: new Map(), head: state.record.head! };
    for (const id of ids) {
      if (without.has(id)) continue;
      if (ctx.signal?.aborted) throw new Error('the run was interrupted');
      const rec = records.get(id)!;
      // The integration has one base: a lane started from another branch (its default, where others name a base) would
      // bring that branch's history in with it.
      if (rec.base_branch && rec.base_branch !== state.record.base_branch && rec.base_branch !== state.record.branch) {
        result.held.push({
          lane: id,
          conflicts: [],
          reason: `it started from ${rec.base_branch}, and the integration of ${state.record.repo} is based on ${state.record.base_branch ?? 'another branch'}: give the lanes of one repository the same base:`,
        });
        continue;
      }
      // A lane that started from the integration branch started from the verified integration, or from something
      // pushed onto the branch since: its change is judged against that commit, which nobody verified.
      if (rec.base_branch === state.record.branch && rec.base_commit !== state.record.head) {
        result.held.push({
          lane: id,
          conflicts: [],
          reason: `it started from ${(rec.base_commit ?? 'nothing').slice(0, 12)} on ${state.record.branch}, not from the verified integration ${state.record.head!.slice(0, 12)} (someone pushed to the branch)`,
        });
        continue;
      }
      const fetched = await ws.fetchBranch(
        state.dir,
        ctx.forge.cloneUrl(this.specs.get(id)!),
        rec.branch!,
        ctx.forge.gitEnv(),
        ctx.file.git_timeout_minutes * 60_000,
      );
      if (fetched !== rec.commit) {
        result.held.push({
          lane: id,
          conflicts: [],
          reason: `${rec.branch} is at ${fetched ? fetched.slice(0, 12) : 'nothing'}, not at the lane's commit ${rec.commit!.slice(0, 12)}`,
        });
        continue;
      }
      if (await ws.isAncestor(state.dir, rec.commit!, result.head)) {
        result.already.push(id);
        continue;
      }
      const spec = this.specs.get(id)!;
      const merged = await ws.merge(
        state.dir,
        rec.commit!,
        `Integrate lane ${id}: ${spec.title}\n\nFleet-Id: ${ctx.file.name}\nFleet-Lane: ${id}\nFleet-Wave: ${wave + 1}\n`,
      );
      if (!merged.ok) {
        // Paths are the lanes' text: one line each, so a name cannot carry a line (a workflow command) into a log.
        result.held.push({
          lane: id,
          conflicts: merged.conflicts,
          reason: `merging it into ${state.record.branch} conflicts in ${merged.conflicts
            .slice(0, 5)
            .map((c) => JSON.stringify(c).slice(1, -1))
            .join(', ')}${merged.conflicts.length > 5 ? ', …' : ''}`,
        });
        continue;
      }
      result.order.push(id);
      result.heads.push(merged.commit);
      result.head = merged.commit;
    }
    if (!result.order.length) return result;
    const log = join(state.dir, '..', `wave-${wave + 1}.log`);
    // Each merged lane's own checks on the integrated tree, each distinct check once however many lanes share it.
    const byCheck = new Map<string, string[]>();
    for (const id of result.order) for (const check of this.specs.get(id)!.checks) byCheck.set(check, [...(byCheck.get(check) ?? []), id]);
    for (const [check, lanes] of byCheck) {
      const r = await this.check(state, check, log, result.head);
      for (const id of lanes) result.seams.push({ lanes: [id], check, ok: r.ok, detail: r.detail });
      if (!r.ok)
        for (const [lane, why] of await this.blame(state, check, lanes, result, log, r.detail)) if (!result.failing.has(lane)) result.failing.set(lane, why);
    }
    // Every soft edge with an end merged now and the other merged now or before: a seam to check.
    const inTree = new Set([...state.merged, ...result.order, ...result.already]);
    for (const id of [...inTree].sort()) {
      for (const other of this.specs.get(id)?.soft_depends_on ?? []) {
        const resolved = this.memberInTree(other, inTree);
        if (!resolved || (!result.order.includes(id) && !result.order.includes(resolved))) continue;
        const checks = this.spec.seam_checks.length
          ? this.spec.seam_checks
          : [...new Set([...this.specs.get(id)!.checks, ...this.specs.get(resolved)!.checks])];
        for (const check of checks) {
          const r = await this.check(state, check, log, result.head);
          result.seams.push({ lanes: [id, resolved], check, ok: r.ok, detail: r.detail });
          // The lane that declared the edge is the one held: it was written to fit the other.
          const blamed = result.order.includes(id) ? id : resolved;
          if (!r.ok && !result.failing.has(blamed))
            result.failing.set(blamed, `the seam with ${id === blamed ? resolved : id} fails \`${check}\` on the integrated tree: ${r.detail}`);
        }
      }
    }
    return result;
  }

  /**
   * Which lane broke a check that fails on the integrated tree. A check several lanes share (a fleet-level `checks:`)
   * says nothing about which of them broke it, so the wave's merges are bisected: the first merge after which it
   * fails is the culprit, found in log2(merges) runs. The search starts at the first lane that has the check: before
   * its merge a lane's own check has nothing to test. A check every merged lane shares that fails from the first
   * merge on is run once more on the last verified integration: failing there too, it was broken before this wave,
   * and every lane that has it is held for that.
   */
  private async blame(state: RepoState, check: string, lanes: string[], pass: Pass, log: string, detail: string | null): Promise<Map<string, string>> {
    const start = pass.order.indexOf(lanes[0]!);
    const fails = async (i: number) => !(await this.check(state, check, log, i < 0 ? state.record.head! : pass.heads[i]!)).ok;
    // heads[last] fails; find the first index from `start` that does (a check that fails once broken stays broken).
    let lo = start - 1;
    let hi = pass.order.length - 1;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (await fails(mid)) hi = mid;
      else lo = mid;
    }
    let out: Map<string, string>;
    if (hi === 0 && lanes.length === pass.order.length && pass.order.length > 1 && (await fails(-1))) {
      out = new Map(
        lanes.map((id) => [id, `the check \`${check}\` fails on the last verified integration already, before any lane of this wave is merged: ${detail}`]),
      );
    } else {
      const culprit = pass.order[hi]!;
      const alone = lanes.length === 1 || hi === start;
      out = new Map([
        [
          culprit,
          alone && lanes.includes(culprit)
            ? `its check \`${check}\` fails on the integrated tree: ${detail}`
            : `the check \`${check}\` fails on the integrated tree from its merge on (bisected over the wave's ${pass.order.length} merges): ${detail}`,
        ],
      ]);
    }
    return out;
  }

  /** A soft edge may name a target tried several ways: its pick, if that is in the tree. */
  private memberInTree(id: string, inTree: ReadonlySet<string>): string | undefined {
    if (inTree.has(id)) return id;
    return [...inTree].find((x) => this.specs.get(x)?.strategy?.group === id);
  }

  /**
   * Runs one check on the integrated tree at `head`, in a copy of the integration made for it and removed after it. A
   * check is code from the lanes: in the integration working copy itself it could rewrite the objects the next merge
   * reads (and get files no fence allows onto the branch), or plant files where Fleet writes its logs. The sandbox
   * confines it to the copy.
   */
  private async check(state: RepoState, check: string, log: string, head: string): Promise<{ ok: boolean; detail: string | null }> {
    const { ctx } = this;
    // A folder of its own per check: as root the sandbox gives each folder a user and a HOME of its own (laneUser,
    // privateHomes), so what one check leaves in its HOME (a program on PATH, a shell profile) steers no later check,
    // bisection or release gate. One path for all of them had them share both.
    const copy = join(state.dir, '..', `check-${++this.checks}`);
    await ctx.workspace.copyAt(state.dir, head, copy);
    const env = {
      ...ctx.env,
      FLEET_ID: ctx.fleet_id,
      FLEET_NAME: ctx.file.name,
      FLEET_REPO: state.record.repo,
      FLEET_BRANCH: state.record.branch,
      FLEET_WORKSPACE: ctx.root,
    };
    try {
      const r = await ctx.exec.run(check, {
        cwd: copy,
        env,
        timeoutMs: ctx.file.timeout_minutes * 60_000,
        logFile: log,
        isolation: ctx.file.isolation,
        confine: { workspace: ctx.root, lane: copy },
      });
      if (ctx.signal?.aborted) throw new Error('the run was interrupted');
      if (r.exitCode === 0 && !r.timedOut) return { ok: true, detail: null };
      return { ok: false, detail: r.timedOut ? 'timed out' : `exit ${r.exitCode ?? r.signal}${gist(r.tail) ? `: ${gist(r.tail)}` : ''}` };
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  }

  /**
   * The end of the fleet: for each repository whose integration moved, the release branch at the last verified
   * integration, the global seam gate (the full checks) on it, and one PR for the whole fleet (a draft when the gate
   * failed).
   */
  async release(records: ReadonlyMap<string, LaneRecord>): Promise<void> {
    // A repository an earlier job integrated and this one has not touched (none of its lanes in the last wave) is
    // released too.
    for (const prior of this.prior) {
      if (this.repos.has(prior.repo) || !prior.head || prior.head === prior.base_commit) continue;
      const spec = [...this.specs.values()].find((l) => l.repo === prior.repo);
      if (!spec) continue;
      try {
        await this.open(prior.repo, spec);
      } catch (err) {
        this.unopened.set(prior.repo, {
          ...prior,
          release: this.failedRelease(prior.release, `the integration branch could not be read: ${(err as Error).message}`),
        });
      }
    }
    for (const state of this.repos.values()) {
      try {
        await this.releaseRepo(state, records);
      } catch (err) {
        state.record.release = this.failedRelease(state.record.release, (err as Error).message);
      }
    }
  }

  private failedRelease(release: IntegrationRecord['release'], detail: string): NonNullable<IntegrationRecord['release']> {
    const out = release ?? { branch: this.name(this.spec.release), commit: null, gate: [], ok: false, pr_url: null, pr_number: null };
    return { ...out, ok: false, gate: [...out.gate, { lanes: [], check: 'release', ok: false, detail }] };
  }

  private async releaseRepo(state: RepoState, records: ReadonlyMap<string, LaneRecord>): Promise<void> {
    const { ctx } = this;
    {
      const head = state.record.head;
      if (!head || head === state.record.base_commit || ctx.dryRun) return;
      await ctx.workspace.reset(state.dir, head);
      const checks = this.spec.checks ?? [...new Set(state.merged.flatMap((id) => this.specs.get(id)!.checks))];
      const gate: SeamResult[] = [];
      for (const check of checks) {
        const r = await this.check(state, check, join(state.dir, '..', 'release.log'), head);
        gate.push({ lanes: [...state.merged], check, ok: r.ok, detail: r.detail });
      }
      const ok = gate.every((g) => g.ok);
      const branch = this.name(this.spec.release);
      const releaseSpec: LaneSpec = { ...state.spec, id: '_release', branch, title: this.spec.title ?? `${ctx.file.name}: integrated`, strategy: undefined };
      const release: NonNullable<IntegrationRecord['release']> = { branch, commit: null, gate, ok, pr_url: null, pr_number: null };
      state.record.release = release;
      // The release branch moves only forward from what Fleet put there: a commit someone pushed onto it is never lost.
      const lease = await ctx.workspace.fetchBranch(
        state.dir,
        ctx.forge.cloneUrl(state.spec),
        branch,
        ctx.forge.gitEnv(),
        ctx.file.git_timeout_minutes * 60_000,
      );
      if (lease && lease !== head && !(await ctx.workspace.isAncestor(state.dir, lease, head))) {
        release.ok = false;
        gate.push({
          lanes: [],
          check: `push ${branch}`,
          ok: false,
          detail: `${branch} holds ${lease.slice(0, 12)}, which the integration does not contain (someone pushed to it): nothing was overwritten`,
        });
        return;
      }
      const pushed =
        lease === head
          ? { ok: true as const }
          : await ctx.workspace.push(state.dir, branch, head, lease, ctx.forge.gitEnv(), ctx.file.git_timeout_minutes * 60_000);
      if (!pushed.ok) {
        release.ok = false;
        gate.push({ lanes: [], check: `push ${branch}`, ok: false, detail: gist(pushed.detail) || pushed.reason });
        return;
      }
      release.commit = head;
      const rec = {
        ...newLaneRecord({ repo: state.record.repo, lane: '_release', wave: null, branch, depends_on: [] }),
        base_branch: state.record.base_branch,
        base_commit: state.record.base_commit,
        commit: head,
      };
      try {
        const published = await ctx.forge.publish({
          lane: releaseSpec,
          record: rec,
          title: releaseSpec.title,
          body: this.releaseBody(state, records, ok),
          draft: !ok || ctx.file.pr.draft,
          labels: ctx.file.pr.labels,
          reviewers: ctx.file.pr.reviewers,
          team_reviewers: ctx.file.pr.team_reviewers,
          assignees: ctx.file.pr.assignees,
        });
        release.pr_url = published.pr_url;
        release.pr_number = published.pr_number;
        // Opening it again does not make an existing PR a draft: a gate that failed now must show.
        if (!ok && published.updated && published.pr_number !== null) await ctx.forge.setDraft(releaseSpec, published.pr_number, true);
      } catch (err) {
        release.ok = false;
        gate.push({ lanes: [], check: 'open the pull request', ok: false, detail: (err as Error).message });
      }
    }
  }

  /** The one PR's body: the gate, then a section per integrated lane (what it did, its findings, its follow-ups). */
  private releaseBody(state: RepoState, records: ReadonlyMap<string, LaneRecord>, ok: boolean): string {
    const out = [
      `This PR integrates the lanes of the Fleet **${escapeCell(this.ctx.file.name)}** in ${codeSpan(state.record.repo)}, merged wave by wave into ${codeSpan(state.record.branch)}.`,
      '',
      ok ? '**Global seam gate**: every check passed on this branch.' : '**Global seam gate failed**: this PR is a draft until a person looks.',
      ...(state.record.release?.gate ?? []).map((g) => `- ${codeSpan(g.check)}: ${g.ok ? 'passed' : `failed (${escapeCell(g.detail ?? '')})`}`),
    ];
    const held = state.record.waves.flatMap((w) => w.held);
    if (held.length) out.push('', `**Held out** (${held.length}): ${held.map((h) => `${codeSpan(h.lane)} (${escapeCell(h.reason)})`).join('; ')}`);
    for (const id of state.merged) {
      const rec = records.get(id);
      const spec = this.specs.get(id)!;
      out.push(
        '',
        `### ${codeSpan(id)}: ${escapeCell(spec.title)}`,
        '',
        spec.directive
          .trim()
          .split('\n')
          .map((l) => `> ${l}`)
          .join('\n'),
      );
      if (rec?.changed_files.length)
        out.push(
          '',
          `Files (${rec.changed_files.length}): ${rec.changed_files.slice(0, 20).map(pathSpan).join(', ')}${rec.changed_files.length > 20 ? ', …' : ''}`,
        );
      if (rec?.review) out.push(...reviewBodyLines(rec.review));
    }
    return out.join('\n');
  }
}
