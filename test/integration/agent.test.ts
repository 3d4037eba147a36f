/**
 * Agent lanes: the directive becomes a prompt for a headless coding agent (the
 * fake Claude Code in test/support), routed to the top-K personas.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo, FAKE_AGENTS, readRemoteFile, remoteBranches } from '../support/repos.js';
import { fleet, lane, readManifest, removeDir, runArgs, sharedFile, tempDir, walkFiles, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

const personas = [
  { name: 'docs-writer', description: 'Writes clear documentation.', applies_to: ['**/*.md'], prompt: 'Prefer short sentences.' },
  { name: 'js-dev', applies_to: ['**/*.js'] },
  { name: 'security', keywords: ['credential', 'secret'] },
  { name: 'editor', keywords: ['readme'] },
];

describe('agent lanes', () => {
  it('the claude preset edits README as the agent does; routing and the prompt are written per lane', async () => {
    const web = await createRepo(dir, 'web', { 'README.md': '# web\n', 'app.js': 'x\n' }, { clone: false });
    const api = await createRepo(dir, 'api', { 'README.md': '# api\n', 'docs/use.md': 'use\n' }, { clone: false });
    const record = sharedFile(join(dir, 'received-prompt.txt'));
    sharedFile(`${record}.argv.json`);
    const file = writeFleetFile(dir, {
      name: 'agents',
      directive: 'Add a Support section to the README.\nKeep it short.',
      agent: { preset: 'claude', command: join(FAKE_AGENTS, 'fake-claude'), personas, top_k: 2 },
      owns: ['README.md', 'docs/**'],
      max_retries: 0,
      max_parallel: 1,
      targets: [{ repo: './web.git' }, { repo: './api.git' }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir, env: { FAKE_AGENT_RECORD: record } });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const m = readManifest(ws);
    for (const [id, repo, title] of [
      ['web', web, '# web'],
      ['api', api, '# api'],
    ] as const) {
      const l = lane(m, id);
      expect(l).toMatchObject({ status: 'completed', phase: 'pushed', changed_files: ['README.md'] });
      expect(await readRemoteFile(repo.remote, `fleet/agents/${id}`, 'README.md')).toBe(`${title}\nfake-claude: Add a Support section to the README.\n`);
      expect(await remoteBranches(repo.remote)).toEqual([`fleet/agents/${id}`, 'main']);

      const routing = JSON.parse(readFileSync(join(ws, 'lanes', id, 'agent-routing.json'), 'utf8'));
      expect(routing.k).toBe(2);
      expect(routing.work_item).toEqual({ repo: `./${id}.git`, lane: id, title: `agents: ${id}` });
      // docs-writer matches README.md (2), editor the keyword "readme" (1); js-dev and security score 0.
      expect(routing.selected).toEqual(['docs-writer', 'editor']);
      expect(l.routing).toEqual(['docs-writer', 'editor']);
      expect(routing.all_scores.map((s: { agent: string; score: number }) => [s.agent, s.score])).toEqual([
        ['docs-writer', 2],
        ['editor', 1],
        ['js-dev', 0],
        ['security', 0],
      ]);

      const prompt = readFileSync(join(ws, 'lanes', id, 'prompt-1.md'), 'utf8');
      expect(prompt).toContain('## Directive\n\nAdd a Support section to the README.\nKeep it short.');
      expect(prompt).toContain(`- Lane: \`${id}\``);
      expect(prompt).toContain(`- Branch: \`fleet/agents/${id}\``);
      expect(prompt).toContain('### docs-writer');
      expect(prompt).toContain('Prefer short sentences.');
      expect(prompt).toContain('### editor');
      expect(prompt).not.toContain('### js-dev');
      expect(prompt).toMatch(/- `README\.md`\n- `docs\/\*\*`/);
    }
    // The agent got the prompt file's content as its -p argument ("$(cat …)" drops the final newline); the record is the last lane's.
    const prompts = ['web', 'api'].map((id) => readFileSync(join(ws, 'lanes', id, 'prompt-1.md'), 'utf8').trimEnd());
    expect(prompts).toContain(readFileSync(record, 'utf8'));
    const argv = JSON.parse(readFileSync(`${record}.argv.json`, 'utf8'));
    expect(argv).toEqual(expect.arrayContaining(['-p', '--output-format', 'json', '--permission-mode', 'acceptEdits']));
    // The agent's JSON result is in the lane log.
    expect(readFileSync(join(ws, lane(m, 'api').log!), 'utf8')).toMatch(/"type":"result","subtype":"success"/);
  });

  it('an agent that fails is retried with the failure fed back into the prompt', async () => {
    await createRepo(dir, 'one', { 'README.md': '# one\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'agentfail',
      directive: 'Edit the README.',
      agent: { preset: 'claude', command: join(FAKE_AGENTS, 'fake-claude') },
      max_retries: 1,
      targets: [{ repo: './one.git' }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir, env: { FAKE_AGENT_EXIT: '5' } });
    expect(r.code).toBe(1);
    const l = lane(readManifest(ws), 'one');
    expect(l.error?.class).toBe('directive-failed');
    expect(l.retry_count).toBe(1);
    expect(existsSync(join(ws, 'lanes', 'one', 'prompt-2.md'))).toBe(true);
    const second = readFileSync(join(ws, 'lanes', 'one', 'prompt-2.md'), 'utf8');
    expect(second).toContain('## Previous attempt');
    expect(second).toContain('failing on purpose (exit 5)');
    expect(readFileSync(join(ws, 'lanes', 'one', 'prompt-1.md'), 'utf8')).not.toContain('## Previous attempt');
  });

  it('the command preset with the edit agent, and the codex preset', async () => {
    const a = await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    const b = await createRepo(dir, 'b', { 'README.md': '# b\n' }, { clone: false });
    const cmd = writeFleetFile(dir, {
      name: 'cmd',
      directive: 'Write `NOTES.md` with a hello.',
      agent: { preset: 'command', command: `node ${join(FAKE_AGENTS, 'edit-agent.mjs')} --prompt-file {prompt_file}` },
      max_retries: 0,
      targets: [{ repo: './a.git' }],
    });
    const r1 = await fleet(runArgs(cmd, join(dir, 'ws1')), { cwd: dir });
    expect(r1.code, r1.stdout).toBe(0);
    expect(await readRemoteFile(a.remote, 'fleet/cmd/a', 'NOTES.md')).toBe('edit-agent: Write `NOTES.md` with a hello.\n');
    const codex = writeFleetFile(
      dir,
      {
        name: 'cdx',
        directive: 'Touch the README.',
        agent: { preset: 'codex', command: join(FAKE_AGENTS, 'fake-codex') },
        max_retries: 0,
        targets: [{ repo: './b.git' }],
      },
      'codex.yml',
    );
    const r2 = await fleet(runArgs(codex, join(dir, 'ws2')), { cwd: dir });
    expect(r2.code, r2.stdout).toBe(0);
    expect(lane(readManifest(join(dir, 'ws2')), 'b').changed_files).toEqual(['README.md']);
    expect(await readRemoteFile(b.remote, 'fleet/cdx/b', 'README.md')).toMatch(/^# b\n.*Touch the README\./s);
  });
});

describe('agent command templates and untrusted prompts', () => {
  it('a template with {prompt} is refused before anything runs, even behind a comment that would flip the quoting', async () => {
    await createRepo(dir, 'one', { 'README.md': '# one\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'inject',
      directive: 'Say hi. x $(touch PWNED_PROMPT) `touch PWNED_TICK` y',
      agent: { preset: 'command', command: "true # the agent's flags follow\nprintf %s {prompt} > /dev/null" },
      max_retries: 0,
      targets: [{ repo: './one.git' }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toContain(`${file}: agent.command: {prompt} is not a placeholder`);
    expect(r.stderr).toContain('{prompt_file}');
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(ws)).toBe(false);
    for (const where of [dir, join(dir, 'one')]) expect(existsSync(join(where, 'PWNED_PROMPT')) || existsSync(join(where, 'PWNED_TICK'))).toBe(false);
  });

  it('placeholders reach the agent through the environment, whatever the template quotes or comments', async () => {
    const a = await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'vars',
      directive: 'Write `NOTES.md`. $(touch PWNED_DIRECTIVE)',
      agent: {
        preset: 'command',
        // A quote inside a comment used to flip the scanner's quoting state for the rest of the template.
        command: `printf '%s|%s|%s' {repo} "{lane}" '{branch}' > ../vars.txt # don't split it\nnode ${join(FAKE_AGENTS, 'edit-agent.mjs')} --prompt-file {prompt_file} --record ../prompt.txt`,
      },
      max_retries: 0,
      targets: [{ repo: './a.git' }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const l = lane(readManifest(ws), 'a');
    expect(l.changed_files).toEqual(['NOTES.md']);
    expect(await readRemoteFile(a.remote, 'fleet/vars/a', 'NOTES.md')).toBe('edit-agent: Write `NOTES.md`. $(touch PWNED_DIRECTIVE)\n');
    expect(readFileSync(join(ws, 'lanes', 'a', 'vars.txt'), 'utf8')).toBe('./a.git|a|fleet/vars/a');
    expect(readFileSync(join(ws, 'lanes', 'a', 'prompt.txt'), 'utf8')).toBe(readFileSync(join(ws, 'lanes', 'a', 'prompt-1.md'), 'utf8'));
    expect(walkFiles(dir).filter((f) => f.includes('PWNED'))).toEqual([]);
  });
});
