/**
 * The local forge: targets are git repositories on disk (working copies or
 * bare), or git URLs the machine can reach. There are no pull requests and no
 * CI: a lane's checkpoint is its pushed branch, and "merge" is a fast-forward
 * of the base branch, only when the fleet's merge policy asks for it.
 */
import { homedir, tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { existsSync, lstatSync, statSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { LaneSpec } from '../core/model.js';
import type { CiConclusion, LaneRecord } from '../core/model.js';
import type { CiVerdict, CloseResult, Forge, ForgeCapabilities, MergeResult, PrView, PublishInput, PublishResult, TargetCheck } from '../ports.js';
import { mapLimit } from '../util/pool.js';
import { Git } from '../workspace/git/git.js';
import { gitDirOf, isLocalRemote, normalizeRemote, readGitFile, readHead, readRef } from '../workspace/git/refs.js';
import { redact } from '../util/secrets.js';
import { privateTmp } from '../workspace/private-tmp.js';
import { quoted } from '../core/text.js';

/**
 * The local forge's own git: it reads the targets and moves their branches (a merge, a deleted lane branch), and makes
 * no commit, so Fleet's default identity and no signing; the process's launcher shells.
 */
const git = new Git();

export interface LocalForgeOptions {
  /** Relative target paths resolve against this folder (the fleet file's folder). */
  baseDir: string;
  /** Where owner/repo targets live locally: <reposRoot>/<owner>/<repo>[.git]. */
  reposRoot?: string;
}

export class LocalForge implements Forge {
  readonly kind = 'local' as const;
  // No CI and no pull requests on repositories on disk: a lane's own checks are its CI, its pushed branch its outcome.
  readonly capabilities: ForgeCapabilities = { ci: 'lane-checks', pullRequests: false, verifiedBy: 'local-git' };
  private readonly urls = new Map<string, string>();
  /** By repository: a working copy's default branch, when it is not the branch checked out there (lanes clone it, not HEAD). */
  private readonly bases = new Map<string, string>();

  constructor(private readonly opts: LocalForgeOptions) {}

  /** Where a target's repository is, or why it cannot be found. */
  locate(lane: Pick<LaneSpec, 'repo' | 'repo_kind'>): { url: string } | { reason: string; detail: string } {
    if (lane.repo_kind === 'url') return { url: lane.repo };
    if (lane.repo_kind === 'path') {
      const raw = lane.repo.startsWith('~') ? join(homedir(), lane.repo.slice(1)) : lane.repo;
      return { url: isAbsolute(raw) ? raw : resolve(this.opts.baseDir, raw) };
    }
    if (!this.opts.reposRoot) {
      return {
        reason: 'not-found',
        detail: `${lane.repo} is a GitHub name; in local mode pass --repos-root DIR holding ${lane.repo}, or write a path (./…)`,
      };
    }
    const base = join(this.opts.reposRoot, lane.repo);
    const found = [base, `${base}.git`].find((p) => existsSync(p));
    return found ? { url: found } : { reason: 'not-found', detail: `no repository at ${base}[.git]` };
  }

  async checkTargets(lanes: readonly LaneSpec[]): Promise<TargetCheck[]> {
    return mapLimit(lanes, 16, async (lane): Promise<TargetCheck> => {
      // One target git cannot read (a URL that does not answer, a broken repository) is excluded, never the whole fleet.
      try {
        return await this.checkTarget(lane);
      } catch (err) {
        const why = redact(((err as Error).message ?? String(err)).split('\n').filter(Boolean).slice(-2).join(' '));
        return { lane: lane.id, repo: lane.repo, ok: false, reason: 'unreachable', detail: why };
      }
    });
  }

  private async checkTarget(lane: LaneSpec): Promise<TargetCheck> {
    const where = this.locate(lane);
    if ('reason' in where) return { lane: lane.id, repo: lane.repo, ok: false, reason: where.reason, detail: where.detail };
    const url = where.url;
    if (lane.repo_kind !== 'url') {
      // The common case in one git call: a repository with HEAD on a branch that has a commit.
      const quick = lane.base ? null : await defaultBranchOnDisk(url);
      if (quick) {
        const chosen = checkoutDefault(url, quick);
        if ('problem' in chosen) return { lane: lane.id, repo: lane.repo, ok: false, reason: 'no-base-branch', detail: chosen.problem };
        this.urls.set(lane.id, url);
        if (chosen.branch !== quick.branch) this.bases.set(url, chosen.branch);
        return { lane: lane.id, repo: lane.repo, ok: true, clone_url: url, default_branch: chosen.branch, base_commit: chosen.commit };
      }
      const kind = await git.isGitRepo(url);
      if (kind === 'not-found') return { lane: lane.id, repo: lane.repo, ok: false, reason: 'not-found', detail: `${url} does not exist` };
      if (kind === 'not-a-repository') {
        return {
          lane: lane.id,
          repo: lane.repo,
          ok: false,
          reason: 'not-a-repository',
          detail: `${url} is not a git repository (run git init there, or fix the path)`,
        };
      }
      if (!(await git.hasCommits(url))) return { lane: lane.id, repo: lane.repo, ok: false, reason: 'empty', detail: `${url} has no commits yet` };
    }
    // The base commit comes from the same ls-remote that finds the branch (incremental sweeps compare it).
    const head = lane.base ? null : await git.defaultBranchHead(url);
    const branch = lane.base ?? head?.branch;
    if (!branch) {
      const heads = await git.run(['ls-remote', '--heads', '--', normalizeRemote(url)], { cwd: tmpdir() });
      if (!heads.stdout.trim()) return { lane: lane.id, repo: lane.repo, ok: false, reason: 'empty', detail: `${url} has no branches yet` };
      return {
        lane: lane.id,
        repo: lane.repo,
        ok: false,
        reason: 'no-default-branch',
        detail: `HEAD of ${url} is not on a branch (detached), so it has no default branch: set base: for this target`,
      };
    }
    const commit = lane.base ? await git.lsRemoteBranch(url, lane.base) : (head?.commit ?? null);
    if (lane.base && !commit) {
      return { lane: lane.id, repo: lane.repo, ok: false, reason: 'no-base-branch', detail: `${url} has no branch ${lane.base}` };
    }
    this.urls.set(lane.id, url);
    return { lane: lane.id, repo: lane.repo, ok: true, clone_url: url, default_branch: branch, base_commit: commit };
  }

  baseBranch(lane: LaneSpec): string | undefined {
    if (lane.base) return lane.base;
    // Keyed by the repository: the plan checks each repository once, for all of its lanes.
    const where = this.locate(lane);
    return 'url' in where ? this.bases.get(where.url) : undefined;
  }

  cloneUrl(lane: LaneSpec): string {
    const known = this.urls.get(lane.id);
    if (known) return known;
    const where = this.locate(lane);
    if ('reason' in where) throw new Error(`${lane.repo}: ${where.detail}`);
    return where.url;
  }

  async branchHead(lane: LaneSpec, branch: string): Promise<string | null> {
    // A repository on disk is read in place: no ls-remote, so no upload-pack process per question.
    if (lane.repo_kind !== 'url') {
      const dir = this.cloneUrl(lane);
      const fromFiles = readRef(gitDirOf(dir), `refs/heads/${branch}`);
      if (fromFiles !== undefined) return fromFiles;
      const r = await git.run(['rev-parse', '--verify', '--quiet', '--end-of-options', `refs/heads/${branch}^{commit}`], {
        cwd: dir,
        env: { GIT_CEILING_DIRECTORIES: dirname(dir) },
        allowFail: true,
      });
      if (r.code === 0) return r.stdout.trim() || null;
      if (r.code === 1) return null;
    }
    return git.lsRemoteBranch(this.cloneUrl(lane), branch);
  }

  async changedFiles(lane: LaneSpec, base: string, head: string): Promise<string[] | null> {
    const url = this.cloneUrl(lane);
    // A path (or file:// URL) is read in place: a bare repository answers directly, a working copy's objects live under .git.
    // Anything else is fetched into a scratch repository first, removed afterwards.
    const local = /^file:\/\//i.test(url) ? fileURLToPath(url) : isLocalRemote(url) ? normalizeRemote(url) : null;
    // In Fleet's private folder, which isolated directives do not see: it holds the lanes' fetched commits.
    const scratch = local ? null : await mkdtemp(join(privateTmp(), 'forge-'));
    try {
      if (scratch) {
        await git.run(['init', '--quiet', '--bare', '--template=', scratch], { cwd: tmpdir() });
        const f = await git.run(['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--depth=1', '--', url, base, head], {
          cwd: scratch,
          allowFail: true,
          env: this.gitEnv(),
        });
        if (f.code !== 0) return null;
      }
      const r = await git.run(['diff', '--name-only', '-z', '--no-renames', base, head], { cwd: (local ?? scratch)!, allowFail: true });
      if (r.code !== 0) return null;
      return r.stdout.split('\0').filter(Boolean).sort();
    } catch {
      return null; // git could not even start there (the path is gone)
    } finally {
      if (scratch) await rm(scratch, { recursive: true, force: true });
    }
  }

  async publish(_input: PublishInput): Promise<PublishResult> {
    return { pr_url: null, pr_number: null, updated: false };
  }

  async ciConclusion(_lane: LaneSpec, _commit: string): Promise<CiConclusion> {
    return 'none';
  }

  async waitForCi(_lane: LaneSpec, _commit: string, _timeoutMs: number): Promise<CiVerdict> {
    return { conclusion: 'none', failures: '' };
  }

  async setDraft(): Promise<void> {
    // No pull requests locally: nothing to turn into a draft.
  }

  gitEnv(): Record<string, string> {
    return {};
  }

  async isMerged(lane: LaneSpec, record: LaneRecord): Promise<boolean> {
    if (!record.commit || !record.base_branch) return false;
    const base = await this.branchHead(lane, record.base_branch);
    if (!base) return false;
    if (base === record.commit) return true;
    if (lane.repo_kind === 'url') return false;
    const r = await git.run(['merge-base', '--is-ancestor', record.commit, base], { cwd: this.cloneUrl(lane), allowFail: true });
    return r.code === 0;
  }

  async merge(lane: LaneSpec, record: LaneRecord, method: string): Promise<MergeResult> {
    if (!record.commit || !record.base_branch || !record.base_commit) {
      return { status: 'failed', detail: 'nothing to merge: the lane has no commit' };
    }
    if (method !== 'fast-forward' && method !== 'squash') {
      return { status: 'blocked', detail: `the local forge merges by fast-forward only (merge.method ${method} needs GitHub)` };
    }
    if (lane.repo_kind === 'url') return { status: 'blocked', detail: 'the local forge merges only repositories on disk' };
    const repo = this.cloneUrl(lane);
    const kind = await git.isGitRepo(repo);
    if (kind === 'repo') {
      const head = await git.run(['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd: repo, allowFail: true });
      if (head.stdout.trim() === record.base_branch) {
        return { status: 'blocked', detail: `${record.base_branch} is checked out in ${repo}; merge ${record.branch} there yourself` };
      }
    }
    const ff = await git.run(['merge-base', '--is-ancestor', record.base_commit, record.commit], { cwd: repo, allowFail: true });
    if (ff.code !== 0) return { status: 'blocked', detail: `${record.commit.slice(0, 12)} does not descend from ${record.base_branch}` };
    // update-ref with the old value is a compare-and-swap: it fails if the base moved since the lane cloned it.
    const upd = await git.run(['update-ref', `refs/heads/${record.base_branch}`, record.commit, record.base_commit], { cwd: repo, allowFail: true });
    if (upd.code !== 0) return { status: 'blocked', detail: `${record.base_branch} moved since the lane started; re-run the lane` };
    return { status: 'merged', detail: `${record.base_branch} fast-forwarded to ${record.commit.slice(0, 12)}` };
  }

  /**
   * No pull requests here: the lane's pushed branch stands for one (`state: branch`), `merged` once its head is in
   * the base branch (Fleet's fast-forward `merge`, or a person's merge), and still `merged` after the branch was
   * deleted when the lane's commit is in the base. `mergeable`: the base is an ancestor of the branch, so the
   * fast-forward `merge` makes can apply (it also needs the base where the lane found it). No CI (`none`), no
   * reviews; the age is the branch head's commit date. Repositories given by URL answer what `ls-remote` can say.
   */
  async readPr(lane: LaneSpec, record: LaneRecord): Promise<PrView | null> {
    const branch = record.branch ?? lane.branch;
    const base = record.base_branch ?? lane.base ?? null;
    const head = await this.branchHead(lane, branch);
    const baseHead = base ? await this.branchHead(lane, base) : null;
    const dir = lane.repo_kind === 'url' ? null : this.cloneUrl(lane);
    const inBase = async (commit: string): Promise<boolean> =>
      baseHead !== null && (baseHead === commit || (dir !== null && (await git.isAncestor(dir, commit, baseHead))));
    const view = (state: PrView['state'], sha: string | null): PrView => ({
      number: null,
      url: null,
      state,
      draft: false,
      ci: 'none',
      review: null,
      mergeable: null,
      mergeable_state: null,
      created_at: null,
      head_branch: branch,
      head_sha: sha,
      base_branch: base,
      marked: true,
      branch_head: head,
    });
    if (!head) return record.commit && (await inBase(record.commit)) ? view('merged', record.commit) : null;
    if (await inBase(head)) return { ...view('merged', head), created_at: dir ? await commitDate(dir, head) : null };
    const ff = dir && baseHead ? await git.isAncestor(dir, baseHead, head) : null;
    return {
      ...view('branch', head),
      mergeable: ff,
      mergeable_state: ff === null ? null : ff ? 'fast-forward' : 'diverged',
      created_at: dir ? await commitDate(dir, head) : null,
    };
  }

  /**
   * Locally the branch is the change: closing deletes it from the repository on disk (`update-ref -d` against the
   * lane's commit, so a branch that moved meanwhile is never deleted). A branch merged into its base is left; so is
   * a branch checked out in a working copy, and one in a repository given by URL.
   */
  async closePr(lane: LaneSpec, record: LaneRecord, opts: { deleteBranch: boolean }): Promise<CloseResult> {
    const branch = record.branch ?? lane.branch;
    const out: CloseResult = { status: 'none', detail: '', pr_number: null, pr_url: null, pr_state: null, branch_deleted: false, branch_head: null };
    let view: PrView | null;
    try {
      view = await this.readPr(lane, record);
    } catch (err) {
      return { ...out, status: 'failed', detail: redact((err as Error).message) };
    }
    if (!view || view.branch_head === null) {
      return view?.state === 'merged'
        ? { ...out, status: 'merged', detail: `${branch} is merged into ${view.base_branch} and gone` }
        : { ...out, detail: `no branch ${branch}: nothing to close` };
    }
    out.branch_head = view.branch_head;
    if (view.state === 'merged') return { ...out, status: 'merged', detail: `${branch} is merged into ${view.base_branch}: left as it is` };
    if (!opts.deleteBranch) return { ...out, detail: `no pull requests locally: ${branch} kept` };
    const short = (sha: string | null) => (sha ? sha.slice(0, 12) : 'none');
    if (!record.commit || view.branch_head !== record.commit) {
      return { ...out, status: 'blocked', detail: `${branch} left: it is at ${short(view.branch_head)}, not at the lane's commit ${short(record.commit)}` };
    }
    if (lane.repo_kind === 'url')
      return { ...out, status: 'blocked', detail: `the local forge deletes branches only in repositories on disk: delete ${branch} yourself` };
    const repo = this.cloneUrl(lane);
    if ((await git.isGitRepo(repo)) === 'repo') {
      const checkedOut = await git.run(['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd: repo, allowFail: true });
      if (checkedOut.stdout.trim() === branch) return { ...out, status: 'blocked', detail: `${branch} is checked out in ${repo}: delete it there yourself` };
    }
    // With the old value, update-ref is a compare-and-delete: it fails if the branch moved since it was read.
    const del = await git.run(['update-ref', '-d', `refs/heads/${branch}`, record.commit], { cwd: repo, allowFail: true });
    if (del.code !== 0) return { ...out, status: 'blocked', detail: `${branch} moved while it was being deleted: left` };
    return {
      ...out,
      status: 'closed',
      branch_deleted: true,
      branch_head: null,
      detail: `${branch} deleted (no pull requests locally: the branch was the change)`,
    };
  }
}

/** The committer date of `rev` in the repository at `dir`, as an ISO time; null when git cannot say. */
async function commitDate(dir: string, rev: string): Promise<string | null> {
  const r = await git.run(['show', '-s', '--format=%cI', '--end-of-options', rev], {
    cwd: dir,
    env: { GIT_CEILING_DIRECTORIES: dirname(dir) },
    allowFail: true,
  });
  const t = Date.parse(r.stdout.trim());
  return r.code === 0 && !Number.isNaN(t) ? new Date(t).toISOString() : null;
}

/**
 * The default branch of a repository on disk whose HEAD is on a branch with a
 * commit, in one git call; null for anything else (the careful path then
 * tells missing, not-a-repository, empty and detached apart).
 */
async function defaultBranchOnDisk(p: string): Promise<{ branch: string; commit: string } | null> {
  let abs: string;
  try {
    abs = await realpath(p);
  } catch {
    return null;
  }
  const fromFiles = defaultBranchFromFiles(abs);
  if (fromFiles !== undefined) return fromFiles;
  const r = await git.run(['rev-parse', '--is-bare-repository', '--is-inside-work-tree', '--show-prefix', 'HEAD^{commit}', '--symbolic-full-name', 'HEAD'], {
    cwd: abs,
    env: { GIT_CEILING_DIRECTORIES: dirname(abs) },
    allowFail: true,
  });
  if (r.code !== 0) return null;
  const [bare, inside, prefix, commit, ref] = r.stdout.split('\n');
  const top = bare === 'true' || (inside === 'true' && prefix === '');
  if (!top || !commit || !/^[0-9a-f]{40,64}$/.test(commit) || !ref?.startsWith('refs/heads/')) return null;
  return { branch: ref.slice('refs/heads/'.length), commit };
}

/**
 * The branch a lane of a working copy starts from. A working copy's HEAD is whatever its owner has checked out (a
 * WIP branch, a review); the repository's default branch is the one its remote's HEAD names (origin/HEAD, set by
 * `git clone`), and the lane starts from the local branch of that name. A working copy with no origin/HEAD (no
 * remote, or one added by hand) has nothing else to go by: the branch checked out, which `base:` overrides. A bare
 * repository's HEAD is its default branch, as on a server.
 */
function checkoutDefault(url: string, head: { branch: string; commit: string }): { branch: string; commit: string } | { problem: string } {
  const gitDir = join(url, '.git');
  let originHead: string;
  try {
    if (!statSync(gitDir).isDirectory()) return head; // a linked worktree or submodule: its HEAD, as before
    const symref = join(gitDir, 'refs', 'remotes', 'origin', 'HEAD');
    // A symbolic ref is one short line; anything bigger is not one git wrote.
    if ((lstatSync(symref, { throwIfNoEntry: false })?.size ?? 0) > 4096) return head;
    originHead = readGitFile(symref).trim();
  } catch {
    return head;
  }
  const m = /^ref: refs\/remotes\/origin\/(.+)$/.exec(originHead);
  if (!m || m[1] === head.branch) return head;
  const branch = m[1]!;
  // The file is the checkout owner's (or a hostile repository's): only a name git itself could have written is used,
  // or shown in the command the message suggests.
  if (!isBranchName(branch))
    return {
      problem: `${url}: its origin/HEAD names ${quoted(branch)}, which is no branch name: run \`git remote set-head origin --auto\` there, or set base: for this target`,
    };
  const commit = readRef(gitDir, `refs/heads/${branch}`);
  if (commit) return { branch, commit };
  return {
    problem: `${url} has ${head.branch} checked out, and its default branch ${branch} (origin/HEAD) has no local branch to start from: run \`git branch ${branch} origin/${branch}\` there, or set base: for this target`,
  };
}

/** A branch name as git check-ref-format accepts one (and not HEAD, nor one git would read as an option). */
function isBranchName(name: string): boolean {
  if (name === 'HEAD' || name.startsWith('-') || name.length > 255) return false;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x20\x7f~^:?*[\\]|\.\.|@\{|\/\/|^\/|\/$|\.lock$|\.$|(^|\/)\./.test(name)) return false;
  return name !== '@';
}

/**
 * The same answer read from the repository's files, with no git process, for the plain case: the top of a
 * working copy (a .git folder) or a bare repository (its config says `bare = true` under [core]), owned by
 * this user (git refuses others' without safe.directory), with HEAD on a branch whose ref names a commit.
 * Undefined when the files cannot say so; then git is asked. A ref naming an object the repository lacks is
 * not looked for: the lane's clone fails on it and says so.
 */
function defaultBranchFromFiles(abs: string): { branch: string; commit: string } | null | undefined {
  // Synchronous reads, as git/refs.ts's readRef: a handful of small files, once per target.
  try {
    const dotGit = lstatSync(join(abs, '.git'), { throwIfNoEntry: false });
    let gitDir: string;
    if (dotGit) {
      if (!dotGit.isDirectory()) return undefined; // a `gitdir:` file (a linked worktree, a submodule): git knows
      gitDir = join(abs, '.git');
    } else {
      if (!isBareConfig(readGitFile(join(abs, 'config')))) return undefined;
      gitDir = abs;
    }
    const top = statSync(gitDir);
    if (top.uid !== process.getuid?.() || !statSync(join(gitDir, 'objects')).isDirectory() || !statSync(join(gitDir, 'refs')).isDirectory()) return undefined;
    const head = readHead(gitDir);
    if (!head?.commit) return undefined;
    return { branch: head.ref.slice('refs/heads/'.length), commit: head.commit };
  } catch {
    return undefined;
  }
}

/** `bare = true` in the [core] section of a git config file, in the form git writes it. */
function isBareConfig(text: string): boolean {
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const header = /^\[([^\]]*)\]$/.exec(line);
    if (header) section = header[1]!.trim().toLowerCase();
    else if (section === 'core' && /^bare\s*=\s*true$/i.test(line)) return true;
  }
  return false;
}
