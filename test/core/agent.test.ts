import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentSchema, type AgentSpec } from '../../src/core/fleet-file.js';
import { agentCommand, renderCommandTemplate, renderWorkerPrompt, shellQuote, type AgentPromptInput, type AgentVars } from '../../src/core/agent.js';
import { runCommand } from '../../src/workspace/exec.js';
import { Git } from '../../src/workspace/git/git.js';
import { FAKE_AGENTS, createRepo, makeTempDir, removeDir } from '../support/repos.js';

const { changedFiles, cloneForLane } = new Git();

let tmp: string;
let n = 0;
const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent-home' };

/** Everything a shell could misread: quotes, substitutions, backticks, newlines, globs, placeholders. */
const NASTY = [
  `it's "quoted" and 'single' and \\"mixed\\"`,
  'subst: $(touch PWNED_SUBST) and ${HOME} and $HOME and $((1+1))',
  'ticks: `touch PWNED_TICK` and \\`escaped\\`',
  "break out: '; touch PWNED_SQ; echo '",
  'break out: "; touch PWNED_DQ; echo "',
  'globs * ? [a-z] ~ ~root !x #not-a-comment & | ; < > ( ) { } {lane} {prompt_file}',
  'backslashes \\ \\\\ \\n \\t %s %d',
  '\ttabs\t and unicode: ünïcødé 日本語 🚀',
  '-n leading dash on a line',
].join('\n');

const agent = (input: Partial<AgentSpec> & Pick<AgentSpec, 'preset'>): AgentSpec => AgentSchema.parse(input);

function promptInput(extra: Partial<AgentPromptInput> = {}): AgentPromptInput {
  return {
    directive: 'Add a changelog entry',
    repo: 'acme/app',
    lane: 'app',
    branch: 'fleet/changelog/app',
    owns: [],
    never: [],
    personas: [],
    title: 'Changelog entry',
    ...extra,
  };
}

async function laneRepo(name: string): Promise<string> {
  const { remote } = await createRepo(tmp, `${name}-${++n}`, { 'README.md': '# app\n', 'src/index.ts': 'export {};\n' }, { clone: false });
  const dir = path.join(tmp, 'lanes', `${name}-${n}`);
  await cloneForLane(remote, dir, { branch: `fleet/t/${name}` });
  return dir;
}

async function noPwned(dir: string): Promise<void> {
  const entries = await readdir(dir);
  expect(entries.filter((e) => e.startsWith('PWNED'))).toEqual([]);
}

beforeAll(async () => {
  tmp = await makeTempDir('fleet-agent-');
});
afterAll(async () => {
  await removeDir(tmp);
});

describe('renderWorkerPrompt', () => {
  it('states the directive, repository, branch, scope and ground rules', () => {
    const p = renderWorkerPrompt(
      promptInput({
        directive: 'Replace `moment` with `date-fns`.\n\nKeep the public API.',
        owns: ['src/**', 'package.json'],
        never: ['src/generated/**'],
      }),
    );
    expect(p.startsWith('# Changelog entry\n')).toBe(true);
    expect(p).toContain('## Directive\n\nReplace `moment` with `date-fns`.\n\nKeep the public API.\n');
    expect(p).toContain('- Repository: `acme/app`');
    expect(p).toContain('- Branch: `fleet/changelog/app`');
    expect(p).toContain('- `src/**`\n- `package.json`');
    expect(p).toContain('You must never change:\n\n- `src/generated/**`\n- `.git`');
    expect(p).not.toContain('whole repository');
    expect(p).toMatch(/Do not commit, push/);
    expect(p).toMatch(/Edit files in the working directory only/);
    expect(p).toMatch(/Keep changes minimal/);
    expect(p).toMatch(/exit with a non-zero status/);
    expect(p).not.toContain('Previous attempt');
    expect(p).not.toContain('## Personas');
    expect(p.endsWith('\n')).toBe(true);
    expect(renderWorkerPrompt(promptInput({ owns: ['src/**'] }))).toBe(renderWorkerPrompt(promptInput({ owns: ['src/**'] })));
  });

  it('says "the whole repository" without owns, and always protects .git', () => {
    const p = renderWorkerPrompt(promptInput());
    expect(p).toContain('anywhere in the whole repository');
    expect(p).toContain('- `.git`');
  });

  it('includes the selected personas and the feedback of a failed attempt', () => {
    const feedback = 'FAIL src/a.test.ts\n```\nexpected 1 to be 2\n```\n';
    const p = renderWorkerPrompt(
      promptInput({
        personas: [
          { name: 'security', description: 'Application security reviewer', prompt: 'Never log secrets.' },
          { name: 'docs', prompt: 'Keep the docs in sync.' },
        ],
        feedback,
      }),
    );
    expect(p).toContain('## Personas');
    expect(p).toContain('### security\n\nApplication security reviewer\n\nNever log secrets.');
    expect(p).toContain('### docs\n\nKeep the docs in sync.');
    expect(p).toContain('The previous attempt failed');
    // The fence is longer than any backtick run in the feedback, so the feedback cannot close it.
    expect(p).toContain('````text\nFAIL src/a.test.ts\n```\nexpected 1 to be 2\n```\n````');
  });

  it('cuts very long feedback to its end', () => {
    const p = renderWorkerPrompt(promptInput({ feedback: 'x'.repeat(100_000) + '\nTHE END' }));
    expect(p.length).toBeLessThan(20_000);
    expect(p).toContain('THE END');
    expect(p).toContain('earlier output cut');
  });
});

describe('command templates', () => {
  const vars = (over: Partial<AgentVars> = {}): AgentVars => ({
    prompt_file: path.join(tmp, "it's a dir", 'prompt "1".md'),
    repo: NASTY,
    lane: "lane'$(touch PWNED_LANE)'",
    branch: 'fleet/x/`touch PWNED_BRANCH`',
    ...over,
  });

  /** Renders a template as the lane does and runs it with the values in its environment. */
  async function runTemplate(template: string, v: AgentVars, name: string, cwd: string) {
    const { command, env } = agentCommand(agent({ preset: 'command', command: template }), v);
    const r = await runCommand(command, { cwd, env: { ...ENV, ...env }, timeoutMs: 10_000, logFile: path.join(tmp, 'logs', `template-${name}.log`) });
    return { r, command };
  }

  it('quotes single words', () => {
    expect(shellQuote('plain-word_1.2/x')).toBe('plain-word_1.2/x');
    expect(shellQuote('')).toBe("''");
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    expect(shellQuote('a b')).toBe("'a b'");
  });

  it('never puts a value into the shell text: placeholders become references to environment variables', () => {
    const line = renderCommandTemplate(`a {repo} "{lane}" '{branch}' $(b {prompt_file}) \`c {repo}\``);
    expect(line).toBe(`a "\${FLEET_REPO}" "\${FLEET_LANE}" ''"\${FLEET_BRANCH}"'' $(b "\${FLEET_PROMPT_FILE}") \`c "\${FLEET_REPO}"\``);
    const { command, env } = agentCommand(agent({ preset: 'command', command: 'my-agent {prompt_file}' }), vars());
    for (const value of Object.values(vars())) expect(command).not.toContain(value);
    expect(env).toEqual({ FLEET_PROMPT_FILE: vars().prompt_file, FLEET_REPO: NASTY, FLEET_LANE: vars().lane, FLEET_BRANCH: vars().branch });
  });

  it('delivers every value byte-identical wherever the placeholder stands, and runs nothing from it', async () => {
    const dir = path.join(tmp, `quoting-${++n}`);
    await mkdir(dir, { recursive: true });
    await mkdir(path.dirname(vars().prompt_file), { recursive: true });
    await writeFile(vars().prompt_file, NASTY);
    const cases: Record<string, string> = {
      bare: 'printf %s {repo} > out.bare',
      double: 'printf %s "{repo}" > out.double',
      single: "printf %s '{repo}' > out.single",
      adjacent: 'printf %s x{repo}y > out.adjacent',
      subst: 'printf %s "$(printf %s {repo})" > out.subst',
      substDouble: 'printf %s "$(printf %s "{repo}")" > out.substDouble',
      substSingle: `printf %s "$(printf %s '{repo}')" > out.substSingle`,
      backtick: 'printf %s "`printf %s {repo}`" > out.backtick',
      mixed: `printf '%s|%s|%s' {lane} "{lane}" 'b={branch}' > out.mixed`,
      file: 'cat {prompt_file} > out.file',
      stdin: 'cat < {prompt_file} > out.stdin',
      fileInSubst: 'printf %s "$(cat {prompt_file})" > out.fileInSubst',
      bareSubst: 'echo $(printf %s {repo}) > /dev/null', // split and globbed, but nothing runs
      bareTicks: 'echo `printf %s {repo}` > /dev/null',
    };
    for (const [name, template] of Object.entries(cases)) {
      const { r, command } = await runTemplate(template, vars(), name, dir);
      expect(r.exitCode, `${name}: ${command}\n${r.tail}`).toBe(0);
    }
    for (const name of ['bare', 'double', 'single', 'subst', 'substDouble', 'substSingle', 'backtick', 'file', 'stdin', 'fileInSubst']) {
      expect(await readFile(path.join(dir, `out.${name}`), 'utf8'), name).toBe(NASTY);
    }
    expect(await readFile(path.join(dir, 'out.adjacent'), 'utf8')).toBe(`x${NASTY}y`);
    expect(await readFile(path.join(dir, 'out.mixed'), 'utf8')).toBe(`${vars().lane}|${vars().lane}|b=${vars().branch}`);
    await noPwned(dir);
    await noPwned(tmp);
  });

  it('a quote inside a # comment does not change how the rest of the template is read', async () => {
    const dir = path.join(tmp, `comment-${++n}`);
    await mkdir(dir, { recursive: true });
    const templates = [
      "true # the agent's flags follow\nprintf %s {repo} > out.a",
      'true # say "hi\nprintf %s {repo} > out.b',
      "true; # it's\nprintf %s '{repo}' > out.c",
      "printf %s {repo}'#not-a-comment' > out.d # it's {lane}",
    ];
    for (const [i, template] of templates.entries()) {
      const { r, command } = await runTemplate(template, vars(), `comment-${i}`, dir);
      expect(r.exitCode, `${command}\n${r.tail}`).toBe(0);
    }
    for (const f of ['a', 'b', 'c']) expect(await readFile(path.join(dir, `out.${f}`), 'utf8'), f).toBe(NASTY);
    expect(await readFile(path.join(dir, 'out.d'), 'utf8')).toBe(`${NASTY}#not-a-comment`);
    await noPwned(dir);
  });

  it('refuses {prompt}: the prompt only ever arrives as a file', () => {
    expect(() => renderCommandTemplate('my-agent --prompt {prompt}')).toThrow(/\{prompt\} is not a placeholder.*\{prompt_file\}/);
    expect(() => agentCommand(agent({ preset: 'command', command: 'my-agent "{prompt}"' }), vars())).toThrow(/untrusted/);
  });

  it('keeps unknown braces and ${…}, and refuses placeholders in a here-document', () => {
    expect(renderCommandTemplate('echo {unknown} ${HOME} ${lane} {lane}')).toBe('echo {unknown} ${HOME} ${lane} "${FLEET_LANE}"');
    expect(() => renderCommandTemplate('cat <<EOF\n{repo}\nEOF')).toThrow(/here-document/);
    expect(renderCommandTemplate('cat <<< {lane}')).toBe('cat <<< "${FLEET_LANE}"');
  });
});

describe('agentCommand', () => {
  const v = (prompt_file: string): AgentVars => ({ prompt_file, repo: 'acme/app', lane: 'app', branch: 'fleet/x/app' });
  const line = (spec: AgentSpec, prompt_file = '/tmp/p.md') => agentCommand(spec, v(prompt_file)).command;

  it('builds the documented headless command lines, the prompt file named by an environment variable', () => {
    expect(line(agent({ preset: 'claude' }))).toBe('claude -p "$(cat "${FLEET_PROMPT_FILE}")" --output-format json --permission-mode acceptEdits');
    expect(agentCommand(agent({ preset: 'claude' }), v("/tmp/it's.md")).env.FLEET_PROMPT_FILE).toBe("/tmp/it's.md");
    expect(line(agent({ preset: 'claude', args: ['--model', 'sonnet', '--allowedTools', 'Bash(npm test)'] }))).toBe(
      `claude -p "$(cat "\${FLEET_PROMPT_FILE}")" --output-format json --permission-mode acceptEdits --model sonnet --allowedTools 'Bash(npm test)'`,
    );
    const codex = line(agent({ preset: 'codex', args: ['-m', 'gpt-5'] }));
    expect(codex).toBe(
      'codex exec --json --sandbox workspace-write --disable plugins -c analytics.enabled=false -m gpt-5 -- "$(cat "${FLEET_PROMPT_FILE}")" </dev/null',
    );
    expect(codex).not.toContain('--full-auto');
    expect(line(agent({ preset: 'claude', command: '/opt/bin/claude' }))).toMatch(/^\/opt\/bin\/claude -p /);
    expect(line(agent({ preset: 'command', command: 'my-agent --task-file {prompt_file} --repo {repo}', args: ['--x y'] }))).toBe(
      `my-agent --task-file "\${FLEET_PROMPT_FILE}" --repo "\${FLEET_REPO}" '--x y'`,
    );
    expect(() => line(agent({ preset: 'command' }))).toThrow(/command/);
  });

  it("gives every preset the fleet's agent.env, under what Fleet sets itself", () => {
    const env = { ANTHROPIC_BASE_URL: 'https://gw.example', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '0', FLEET_REPO_X: 'kept' };
    for (const preset of ['claude', 'codex', 'command'] as const) {
      const got = agentCommand({ ...agent({ preset, command: preset === 'command' ? 'a' : undefined }), env }, v('/tmp/p.md')).env;
      expect(got).toMatchObject({ ANTHROPIC_BASE_URL: 'https://gw.example', FLEET_PROMPT_FILE: '/tmp/p.md' });
    }
    expect(agentCommand({ ...agent({ preset: 'claude' }), env }, v('/tmp/p.md')).env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe('1');
  });

  it('runs fake-claude through the claude preset: the prompt arrives byte-identical and README.md is edited', async () => {
    const dir = await laneRepo('claude');
    const promptDir = path.join(tmp, `prompts ${++n}`, "lane's");
    await mkdir(promptDir, { recursive: true });
    const promptFile = path.join(promptDir, 'prompt "claude".md');
    const prompt = renderWorkerPrompt(promptInput({ directive: `Mention the fleet in the README\n\n${NASTY}` }));
    await writeFile(promptFile, prompt);
    const record = path.join(tmp, `record-${n}.txt`);

    const spec = agent({
      preset: 'claude',
      command: path.join(FAKE_AGENTS, 'fake-claude'),
      args: ['--allowedTools', 'Bash(npm test) Read', '--append-system-prompt', "it's $(touch PWNED_ARG)"],
    });
    const run = agentCommand(spec, { prompt_file: promptFile, repo: 'acme/app', lane: 'app', branch: 'fleet/t/claude' });
    const r = await runCommand(run.command, {
      cwd: dir,
      env: { ...ENV, ...run.env, FAKE_AGENT_RECORD: record },
      timeoutMs: 20_000,
      logFile: path.join(tmp, 'logs', 'claude.log'),
    });
    expect(r.exitCode, r.tail).toBe(0);

    // "$(cat f)" drops trailing newlines, nothing else.
    expect(await readFile(record, 'utf8')).toBe(prompt.replace(/\n+$/, ''));
    const argv = JSON.parse(await readFile(`${record}.argv.json`, 'utf8')) as string[];
    expect(argv.slice(2)).toEqual([
      '--output-format',
      'json',
      '--permission-mode',
      'acceptEdits',
      '--allowedTools',
      'Bash(npm test) Read',
      '--append-system-prompt',
      "it's $(touch PWNED_ARG)",
    ]);

    const result = JSON.parse(r.tail.trim()) as { type: string; is_error: boolean; result: string };
    expect(result).toMatchObject({ type: 'result', is_error: false });
    expect(await readFile(path.join(dir, 'README.md'), 'utf8')).toBe('# app\nfake-claude: Mention the fleet in the README\n');
    expect((await changedFiles(dir)).files).toEqual(['README.md']);
    await noPwned(dir);
  });

  it('runs fake-codex through the codex preset', async () => {
    const dir = await laneRepo('codex');
    const promptFile = path.join(tmp, `codex-prompt-${++n}.md`);
    const prompt = renderWorkerPrompt(promptInput({ directive: "Note Codex's visit in the README; $(touch PWNED_CODEX)" }));
    await writeFile(promptFile, prompt);
    const record = path.join(tmp, `record-${n}.txt`);
    const run = agentCommand(agent({ preset: 'codex', command: path.join(FAKE_AGENTS, 'fake-codex') }), {
      prompt_file: promptFile,
      repo: 'acme/app',
      lane: 'app',
      branch: 'fleet/t/codex',
    });
    const r = await runCommand(run.command, {
      cwd: dir,
      env: { ...ENV, ...run.env, FAKE_AGENT_RECORD: record },
      timeoutMs: 20_000,
      logFile: path.join(tmp, 'logs', 'codex.log'),
    });
    expect(r.exitCode, r.tail).toBe(0);
    expect(await readFile(record, 'utf8')).toBe(prompt.replace(/\n+$/, ''));
    expect(await readFile(path.join(dir, 'README.md'), 'utf8')).toBe("# app\nfake-codex: Note Codex's visit in the README; $(touch PWNED_CODEX)\n");
    await noPwned(dir);
  });

  it('runs a command template agent (edit-agent) that edits the file named in the directive', async () => {
    const dir = await laneRepo('edit');
    const promptFile = path.join(tmp, `edit prompt ${++n}.md`);
    const prompt = renderWorkerPrompt(promptInput({ directive: 'Record the run in `docs/NOTES.md`' }));
    await writeFile(promptFile, prompt);
    const spec = agent({ preset: 'command', command: `node ${shellQuote(path.join(FAKE_AGENTS, 'edit-agent.mjs'))} --prompt-file {prompt_file}` });
    const run = agentCommand(spec, { prompt_file: promptFile, repo: 'acme/app', lane: 'app', branch: 'fleet/t/edit' });
    const r = await runCommand(run.command, { cwd: dir, env: { ...ENV, ...run.env }, timeoutMs: 20_000, logFile: path.join(tmp, 'logs', 'edit.log') });
    expect(r.exitCode, r.tail).toBe(0);
    expect(await readFile(path.join(dir, 'docs/NOTES.md'), 'utf8')).toBe('edit-agent: Record the run in `docs/NOTES.md`\n');
    expect((await changedFiles(dir)).files).toEqual(['docs/NOTES.md']);
  });

  it('reports an agent failure as a non-zero exit with its output', async () => {
    const dir = await laneRepo('fail');
    const promptFile = path.join(tmp, `fail-${++n}.md`);
    await writeFile(promptFile, renderWorkerPrompt(promptInput()));
    const run = agentCommand(agent({ preset: 'claude', command: path.join(FAKE_AGENTS, 'fake-claude') }), {
      prompt_file: promptFile,
      repo: 'acme/app',
      lane: 'app',
      branch: 'b',
    });
    const r = await runCommand(run.command, {
      cwd: dir,
      env: { ...ENV, ...run.env, FAKE_AGENT_EXIT: '4' },
      timeoutMs: 20_000,
      logFile: path.join(tmp, 'logs', 'fail.log'),
    });
    expect(r.exitCode).toBe(4);
    expect(JSON.parse(r.tail.trim())).toMatchObject({ is_error: true });
    expect((await changedFiles(dir)).files).toEqual([]);
  });
});
