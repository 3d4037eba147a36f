/**
 * The discovery relay between waves (issue 9), pure: what a lane left for later lanes (facts worth knowing: an
 * existing helper, a config file, a trap), read from the file it was given (FLEET_DISCOVERIES) or from a
 * "Discoveries" section of the agent's final answer, and the relay a later lane receives: deduplicated, each
 * discovery cut to a size, the whole within a budget, most-cited first and then newest.
 *
 * Discoveries are text other agents wrote. They reach a later lane as notes inside a fenced block, introduced as notes
 * and not instructions; what a lane may change is still its fence.
 */
import * as z from 'zod';

export const RELAY_DEFAULTS = { item_chars: 300, max_chars: 4000, per_lane: 20, scope: 'fleet' as 'fleet' | 'repository' };

/** The most of a discoveries file (or answer) Fleet reads. */
export const MAX_DISCOVERIES_BYTES = 64 * 1024;

/**
 * Discoveries written as text: one per line, a leading list marker ("- ", "* ", "1. ") dropped; blank lines and
 * "#" comment lines are not discoveries. Each is cut to `itemChars`, and a lane keeps at most `perLane`, duplicates
 * dropped.
 */
export function parseDiscoveries(text: string, itemChars = RELAY_DEFAULTS.item_chars, perLane = RELAY_DEFAULTS.per_lane): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/^\s*(?:[-*+]|\d+[.)])\s+/, '').trim();
    if (!line || line.startsWith('#')) continue;
    const cut = cutTo(oneLine(line), itemChars);
    const key = discoveryKey(cut);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(cut);
    if (out.length >= perLane) break;
  }
  return out;
}

/**
 * The "Discoveries" section of an agent's final answer: the list under a heading (or a line) "Discoveries", up to the
 * next heading or the end. Empty when the answer has none.
 */
export function answerDiscoveries(answer: string, itemChars = RELAY_DEFAULTS.item_chars, perLane = RELAY_DEFAULTS.per_lane): string[] {
  const lines = answer.split(/\r?\n/);
  let start = -1;
  for (let i = lines.length - 1; i >= 0; i--) {
    if (/^\s*(?:#{1,6}\s*)?\**\s*discoveries\s*:?\s*\**\s*:?\s*$/i.test(lines[i]!)) {
      start = i + 1;
      break;
    }
  }
  if (start < 0) return [];
  const section: string[] = [];
  for (const line of lines.slice(start)) {
    if (/^\s*#{1,6}\s/.test(line)) break;
    // Only list items: prose after the list is the answer going on, not a discovery.
    if (/^\s*(?:[-*+]|\d+[.)])\s+/.test(line)) section.push(line);
    else if (line.trim() && section.length) break;
  }
  return parseDiscoveries(section.join('\n'), itemChars, perLane);
}

/** What a lane left, as the relay reads it. */
export interface DiscoveryEntry {
  lane: string;
  repo: string;
  wave: number;
  /** When the lane ended (ISO); newer first among discoveries cited as often. */
  ended_at: string | null;
  discoveries: string[];
}

export interface RelayItem {
  text: string;
  /** The lanes that left it, in the order first seen. */
  lanes: string[];
  /** The latest wave that left it. */
  wave: number;
}

export interface RelayLimits {
  max_chars: number;
  scope: 'fleet' | 'repository';
}

/**
 * The relay a lane of `wave` in `repo` receives: every discovery of the lanes of earlier waves (of its repository only
 * when the scope says so), one per wording, most-cited first, then newest (later wave, later end), then in the order
 * written; kept while the whole stays within `max_chars` (a discovery that does not fit is left out and the next tried).
 */
export function buildRelay(entries: readonly DiscoveryEntry[], wave: number, repo: string, limits: RelayLimits): RelayItem[] {
  const byKey = new Map<string, RelayItem & { ended: string; order: number }>();
  for (const e of entries) {
    if (e.wave >= wave || (limits.scope === 'repository' && e.repo !== repo)) continue;
    for (const text of e.discoveries) {
      const key = discoveryKey(text);
      const seen = byKey.get(key);
      const ended = e.ended_at ?? '';
      if (!seen) {
        byKey.set(key, { text, lanes: [e.lane], wave: e.wave, ended, order: byKey.size });
        continue;
      }
      if (!seen.lanes.includes(e.lane)) seen.lanes.push(e.lane);
      if (e.wave > seen.wave || (e.wave === seen.wave && ended > seen.ended)) {
        seen.wave = e.wave;
        seen.ended = ended;
      }
    }
  }
  const ranked = [...byKey.values()].sort(
    (a, b) => b.lanes.length - a.lanes.length || b.wave - a.wave || (a.ended < b.ended ? 1 : a.ended > b.ended ? -1 : 0) || a.order - b.order,
  );
  const out: RelayItem[] = [];
  let used = 0;
  for (const item of ranked) {
    if (used + item.text.length > limits.max_chars) continue;
    used += item.text.length;
    out.push({ text: item.text, lanes: item.lanes, wave: item.wave });
  }
  return out;
}

/** The relay as a lane reads it: a markdown list, each with the lanes that left it. */
export function renderRelay(items: readonly RelayItem[]): string {
  return items.map((i) => `- ${i.text} (from ${i.lanes.join(', ')})`).join('\n');
}

/** A relay file a lane job downloads: what one lane left (on GitHub Actions, the relay travels as these). */
export const RelayFile = z.strictObject({
  lane: z.string(),
  discoveries: z.array(z.string().max(10_000)).max(100),
});
export type RelayFile = z.infer<typeof RelayFile>;

function oneLine(s: string): string {
  return s
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

function cutTo(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** The same discovery with other case, spacing or a final full stop is the same discovery. */
function discoveryKey(s: string): string {
  return s
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .replace(/[.!\s]+$/, '')
    .trim();
}
