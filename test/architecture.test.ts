/**
 * The layering docs/design.md ("Layers") states, read from the imports of src/: "entrypoints → session → steps →
 * ports ← adapters; core depends on nothing". Fails on any edge the design forbids, on a top-level folder the design
 * does not name, and on any import cycle, each named by file.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve('src');

/** What each layer may import, besides itself. `util` is shared plumbing (fs, pools, secrets) any layer may use. */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  util: ['core'],
  ports: ['core'],
  steps: ['core', 'ports', 'util'],
  github: ['core', 'ports', 'util'],
  // What every runner uses to work on a clone: git, exec, the sandbox, the launcher, the workspace.
  workspace: ['core', 'ports', 'util'],
  // The local forge and artifact store, on git repositories on disk.
  local: ['core', 'ports', 'util', 'workspace'],
  // The session builder: credentials, forge, workspace, commit setup, withheld environment, close and interrupts, for
  // every entrypoint; the one place that knows every adapter.
  session: ['core', 'ports', 'util', 'github', 'local', 'workspace'],
  cli: ['core', 'ports', 'util', 'steps', 'session', 'github', 'local', 'workspace'],
  actions: ['core', 'ports', 'util', 'steps', 'session', 'github', 'local', 'workspace'],
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Every relative import and re-export of every source file (types included: a type import is still a dependency). */
function imports(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const file of sources(SRC)) {
    const text = readFileSync(file, 'utf8');
    const to = [...text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'(\.[^']+)'/gm)].map((m) =>
      relative(SRC, resolve(dirname(file), m[1]!.replace(/\.js$/, '.ts'))),
    );
    out.set(relative(SRC, file), to);
  }
  return out;
}

const layerOf = (file: string) => (file.includes('/') ? file.split('/')[0]! : file.replace(/\.ts$/, ''));

/** The files of each cycle, named by its two smallest members, found with Tarjan's strongly connected components. */
function cycles(graph: Map<string, string[]>): string[] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const found: string[] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) found.push(scc.sort().slice(0, 2).join(' -> '));
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return found.sort();
}

describe('the layers of src/ (docs/design.md)', () => {
  const graph = imports();

  it('every import goes where the design lets it', () => {
    const forbidden: string[] = [];
    for (const [from, tos] of graph) {
      for (const to of tos) {
        const a = layerOf(from);
        const b = layerOf(to);
        if (a !== b && !ALLOWED[a]?.includes(b)) forbidden.push(`${from} -> ${to}`);
      }
    }
    expect([...new Set(forbidden)].sort()).toEqual([]);
  });

  it('the pure core imports no Node.js module that does I/O, and no package but zod, minimatch and yaml', () => {
    const io: string[] = [];
    for (const file of sources(join(SRC, 'core'))) {
      for (const m of readFileSync(file, 'utf8').matchAll(/^\s*import\b[^'"]*?from\s+'([^.][^']*)'/gm)) {
        if (!/^(zod|minimatch|yaml|node:(path|crypto|util))$/.test(m[1]!)) io.push(`${relative(SRC, file)}: ${m[1]}`);
      }
    }
    expect(io).toEqual([]);
  });

  it('no import cycle', () => {
    expect(cycles(graph)).toEqual([]);
  });
});
