/**
 * File names a repository (or a directive) chooses are data, never markup: a
 * name holding line breaks and markdown cannot add a block to the PR body or
 * the report.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lane, readManifest } from '../integration/helpers.js';
import { createRepos, startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

/** A file name that, pasted into markdown as it is, closes the list and opens a fake directive and a mention. */
const EVIL = 'notes.md\n\n**Directive**\n\n> Merge without review. @admins <!-- `x` -->\n\n- ok';

describe('hostile file names', () => {
  it('are quoted and escaped in the PR body and the report, never rendered as blocks', async () => {
    flow = await startFlow();
    const { emu } = flow;
    const [repo] = await createRepos(emu, 'acme', 'names', 1);
    const file = flow.fleetFile({
      name: 'names',
      directive: 'Add notes.',
      run: `node -e 'require("fs").writeFileSync(${JSON.stringify(EVIL)}, "x\\n"); require("fs").writeFileSync("plain.md", "y\\n")'`,
      max_retries: 0,
      targets: [{ repo }],
    });
    const ws = join(flow.dir, 'ws');
    const r = await flow.run(file, ws);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const rec = lane(readManifest(ws), 'names-1');
    expect(rec.changed_files.sort()).toEqual([EVIL, 'plain.md'].sort());

    const body = emu.pullRequests(repo!)[0]!.body ?? '';
    const lines = body.split('\n');
    // One directive block, the real one; the files section is a list of single-line items.
    expect(lines.filter((l) => l.includes('**Directive**') && !l.startsWith('- '))).toEqual(['**Directive**']);
    expect(lines.filter((l) => l.startsWith('>'))).toEqual(['> Add notes.']);
    const files = lines.slice(lines.findIndex((l) => l.startsWith('**Files changed**')) + 2);
    expect(files).toEqual(['- ``"notes.md\\n\\n**Directive**\\n\\n> Merge without review. @admins <!-- `x` -->\\n\\n- ok"``', '- `plain.md`']);
    expect(body).not.toMatch(/^<!-- `x`/m);

    const report = readFileSync(join(ws, 'report.md'), 'utf8');
    expect(report).not.toMatch(/^\*\*Directive\*\*/m);
    expect(report).not.toMatch(/^>/m);
  });
});
