/**
 * Top-K persona routing: which specialised agents work on a lane.
 * Pure: the result is written as `agent-routing.json` beside the lane result.
 *
 * A persona scores 2 for each of its `applies_to` globs that matches at least one
 * changed file, and 1 for each of its keywords found (case-insensitive substring)
 * in the lane title and body. The K best positive scores are selected; ties break
 * by name. K = 0 turns routing off and selects every persona.
 */
import type { Persona } from './fleet-file.js';
import { matchesGlob } from './glob.js';

export interface RoutingInput {
  personas: Persona[];
  /** How many personas to select; 0 disables routing (every persona is selected). */
  k: number;
  /** Persona selected when none scores above zero. Ignored unless it names one of `personas`. */
  fallback?: string;
  changed_files: string[];
  title: string;
  body: string;
  repo: string;
  lane: string;
}

export interface PersonaScore {
  agent: string;
  score: number;
  matched_globs: string[];
  matched_keywords: string[];
}

export interface Routing {
  work_item: { repo: string; lane: string; title: string };
  k: number;
  /** Every persona's score, best first, ties by name. */
  all_scores: PersonaScore[];
  selected: string[];
  disabled: boolean;
  fallback_used: boolean;
}

export const GLOB_WEIGHT = 2;
export const KEYWORD_WEIGHT = 1;

function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function scorePersona(persona: Persona, changed_files: readonly string[], text: string): PersonaScore {
  const haystack = text.toLowerCase();
  // A glob or keyword written twice counts once.
  const matched_globs = [...new Set(persona.applies_to)].filter((g) => changed_files.some((f) => matchesGlob(f, g)));
  const seen = new Set<string>();
  const matched_keywords: string[] = [];
  for (const keyword of persona.keywords) {
    const needle = keyword.toLowerCase();
    if (!needle || seen.has(needle)) continue;
    seen.add(needle);
    if (haystack.includes(needle)) matched_keywords.push(keyword);
  }
  return {
    agent: persona.name,
    score: GLOB_WEIGHT * matched_globs.length + KEYWORD_WEIGHT * matched_keywords.length,
    matched_globs,
    matched_keywords,
  };
}

export function routePersonas(input: RoutingInput): Routing {
  const text = `${input.title}\n${input.body}`;
  const all_scores = input.personas
    .map((persona) => scorePersona(persona, input.changed_files, text))
    .sort((a, b) => b.score - a.score || byName(a.agent, b.agent));
  const base = {
    work_item: { repo: input.repo, lane: input.lane, title: input.title },
    k: input.k,
    all_scores,
  };

  if (input.k === 0) {
    // Routing off: every persona works on the lane, in the order the fleet file lists them.
    return { ...base, selected: [...new Set(input.personas.map((x) => x.name))], disabled: true, fallback_used: false };
  }

  const k = Number.isFinite(input.k) ? Math.max(0, Math.floor(input.k)) : all_scores.length;
  const selected = all_scores
    .filter((s) => s.score > 0)
    .slice(0, k)
    .map((s) => s.agent);
  if (selected.length === 0 && input.fallback && input.personas.some((x) => x.name === input.fallback)) {
    return { ...base, selected: [input.fallback], disabled: false, fallback_used: true };
  }
  return { ...base, selected, disabled: false, fallback_used: false };
}
