/**
 * The discovery relay, the lane's side: before it runs, the lane receives what lanes of earlier waves left (FLEET_RELAY
 * and its agent prompt); when it ends, it leaves what it found for later waves (its discoveries file, and an agent's
 * "Discoveries" answer), scrubbed of the credentials it was handed.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { agentAnswer } from '../../core/agent.js';
import { answerDiscoveries, buildRelay, MAX_DISCOVERIES_BYTES, parseDiscoveries, renderRelay } from '../../core/relay.js';
import { readUntrustedText, writeFileAtomic } from '../../util/fs.js';
import { runsAgent } from './directive.js';
import { discoveriesPath, relayPath } from './layout.js';
import { scrub } from './secrets.js';
import type { LaneRun } from './state.js';

/** Writes the relay of earlier waves where the lane reads it (FLEET_RELAY, and the agent prompt), and clears a stale discoveries file. */
export async function receiveRelay(run: LaneRun): Promise<void> {
  const { ctx, lane } = run;
  const relay = ctx.file.relay;
  if (relay === false) return;
  await rm(discoveriesPath(ctx.root, lane.id), { force: true });
  const items = run.rec.wave !== null && ctx.relayEntries ? buildRelay(ctx.relayEntries(), run.rec.wave, lane.repo, relay) : [];
  run.relayText = renderRelay(items);
  await writeFileAtomic(relayPath(ctx.root, lane.id), run.relayText ? `${run.relayText}\n` : '');
  if (items.length) run.rec.relay = { items: items.length, from: [...new Set(items.flatMap((i) => i.lanes))] };
}

/**
 * What the lane left for later lanes: its discoveries file, and for an agent lane the "Discoveries" section of its
 * last answer. Never fails the lane: a file it cannot read says nothing.
 */
export async function leaveDiscoveries(run: LaneRun): Promise<void> {
  const { ctx, lane } = run;
  const relay = ctx.file.relay;
  if (relay === false || !run.cloned) return;
  const fromFile = parseDiscoveries(await readUntrustedText(discoveriesPath(ctx.root, lane.id), MAX_DISCOVERIES_BYTES), relay.item_chars);
  let fromAnswer: string[] = [];
  if (runsAgent(ctx, lane) && run.rec.log) {
    const log = await readUntrustedText(join(ctx.root, run.rec.log), MAX_DISCOVERIES_BYTES * 4, { tail: true });
    fromAnswer = answerDiscoveries(agentAnswer(ctx.file.agent!.preset, log).text, relay.item_chars);
  }
  const all = parseDiscoveries([...fromFile, ...fromAnswer].map((d) => scrub(d, ctx.neverInChange)).join('\n'), relay.item_chars);
  if (all.length) run.rec.discoveries = all;
}
