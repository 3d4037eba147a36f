/**
 * What a lane's directive runs as: the lane's own `run:`, or the fleet's agent with the worker prompt (its personas
 * routed from the files the lane may touch), and the environment every directive, check and agent run of the lane
 * is given (FLEET_* and, for an agent, its CLI, credentials and state).
 */
import { join } from 'node:path';
import { agentCommand, renderWorkerPrompt, type AgentInvocation } from '../../core/agent.js';
import { matchesAny } from '../../core/glob.js';
import type { LaneSpec } from '../../core/model.js';
import { routePersonas, type Routing } from '../../core/routing.js';
import type { LaneCaps } from '../../core/spend.js';
import { writeFileAtomic, writeJsonAtomic } from '../../util/fs.js';
import { agentStateEnv } from '../agent-state.js';
import type { LaneContext } from './context.js';
import { discoveriesPath, issuePath, laneDir, relayPath } from './layout.js';

export function runsAgent(ctx: LaneContext, lane: LaneSpec): boolean {
  return lane.run === undefined && ctx.file.agent !== undefined;
}

/** What every agent run of the lane adds to its environment: the leg's CLI and credentials, and the lane's own agent state. */
export async function agentRunEnv(ctx: LaneContext, laneFolder: string): Promise<Record<string, string>> {
  return { ...ctx.agentEnv, ...(await agentStateEnv(laneFolder, ctx.file.agent!, { ...ctx.env, ...ctx.agentEnv })) };
}

export function laneEnv(ctx: LaneContext, lane: LaneSpec, attempt: number, feedback: string | undefined, base: string): Record<string, string> {
  return {
    ...ctx.env,
    FLEET_ID: ctx.fleet_id,
    FLEET_NAME: ctx.file.name,
    FLEET_DIRECTIVE: lane.directive,
    FLEET_REPO: lane.repo,
    FLEET_LANE: lane.id,
    FLEET_BRANCH: lane.branch,
    FLEET_BASE_BRANCH: base,
    FLEET_WORKSPACE: ctx.root,
    FLEET_LANE_DIR: laneDir(ctx.root, lane.id),
    FLEET_ATTEMPT: String(attempt),
    FLEET_FEEDBACK: feedback ?? '',
    FLEET_DRY_RUN: ctx.dryRun ? '1' : '0',
    ...(lane.issue ? { FLEET_ISSUE: String(lane.issue.number), FLEET_ISSUE_SLOT: lane.issue.slot ?? '', FLEET_ISSUE_FILE: issuePath(ctx.root, lane.id) } : {}),
    ...(ctx.file.relay !== false ? { FLEET_DISCOVERIES: discoveriesPath(ctx.root, lane.id), FLEET_RELAY: relayPath(ctx.root, lane.id) } : {}),
  };
}

/**
 * The command of a directive attempt or a review fix round: the lane's `run:`, or the agent with the worker prompt
 * written to `opts.file` (with the previous attempt's failure, or the review findings to fix).
 */
export async function directiveCommand(
  ctx: LaneContext,
  lane: LaneSpec,
  routing: Routing | null,
  opts: { file: string; feedback?: string; findings?: string; relay?: string; caps?: LaneCaps },
): Promise<AgentInvocation> {
  // A lane-level run: wins over the fleet's agent, so one odd repository can be scripted.
  if (lane.run !== undefined || !ctx.file.agent) return { command: lane.run!, env: {} };
  const agent = ctx.file.agent;
  const personas = (routing?.selected ?? []).map((name) => agent.personas.find((p) => p.name === name)).filter((p) => p !== undefined);
  const prompt = renderWorkerPrompt({
    directive: lane.directive,
    repo: lane.repo,
    lane: lane.id,
    branch: lane.branch,
    owns: lane.owns,
    never: lane.never,
    personas,
    feedback: opts.feedback,
    findings: opts.findings,
    relay: opts.relay,
    discoveries: ctx.file.relay !== false,
    title: lane.title,
    issue: lane.issue,
  });
  await writeFileAtomic(opts.file, prompt);
  return agentCommand(agent, { prompt_file: opts.file, repo: lane.repo, lane: lane.id, branch: lane.branch }, opts.caps);
}

/** The agent's personas for this lane, chosen once before its first attempt and kept in the lane folder. */
export async function route(ctx: LaneContext, lane: LaneSpec, repoDir: string, dir: string): Promise<Routing> {
  const agent = ctx.file.agent!;
  // Before the agent runs, the files a lane will touch are best known from its scope: the tracked files inside owns.
  let files: string[] = [];
  if (lane.owns.length) files = (await ctx.workspace.listFiles(repoDir)).filter((f) => matchesAny(f, lane.owns));
  const routing = routePersonas({
    personas: agent.personas,
    k: agent.top_k,
    fallback: agent.fallback,
    changed_files: files,
    title: lane.title,
    body: lane.directive,
    repo: lane.repo,
    lane: lane.id,
  });
  await writeJsonAtomic(join(dir, 'agent-routing.json'), routing);
  return routing;
}
