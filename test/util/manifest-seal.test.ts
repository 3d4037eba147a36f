/**
 * The seal on the CLI's manifests (src/util/manifest-seal.ts): the key made once per user and agreed on by Fleets
 * that start together, refused where it is not the user's alone, never read through a link or a FIFO; a manifest
 * believed only with the seal of its exact text.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manifestSealFolder, sealProblem, stopManifestSeal, useManifestSeal, writeManifest, writeManifestSync } from '../../src/util/manifest-seal.js';
import { removeDir, tempDir, tsxLoader } from '../integration/helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir('fleet-seal-');
  stopManifestSeal();
});
afterEach(() => {
  stopManifestSeal();
  removeDir(dir);
});

const env = () => ({ XDG_STATE_HOME: join(dir, 'state'), HOME: join(dir, 'home') });
const keyFile = () => join(dir, 'state', 'fleet', 'manifest-seal.key');

describe('the seal key', () => {
  it('is made once, 32 bytes, mode 0600 in a folder of mode 0700, and read again by the next Fleet', () => {
    expect(useManifestSeal(env())).toEqual({ folder: join(dir, 'state', 'fleet') });
    const key = readFileSync(keyFile());
    expect(key).toHaveLength(32);
    expect(statSync(keyFile()).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'state', 'fleet')).mode & 0o777).toBe(0o700);
    stopManifestSeal();
    useManifestSeal(env());
    expect(readFileSync(keyFile())).toEqual(key);
  });

  it('is hidden by a mask, so its folder is made again if something removed it while Fleet runs', () => {
    useManifestSeal(env());
    removeDir(join(dir, 'state'));
    expect(manifestSealFolder()).toBe(join(dir, 'state', 'fleet'));
    expect(statSync(join(dir, 'state', 'fleet')).mode & 0o777).toBe(0o700);
  });

  it('without XDG_STATE_HOME, lives under HOME in .local/state/fleet', () => {
    expect(useManifestSeal({ HOME: join(dir, 'home') })).toEqual({ folder: join(dir, 'home', '.local', 'state', 'fleet') });
  });

  it('Fleets started together agree on one key', async () => {
    const m = join(dir, 'm.json');
    // Four processes make the key at once; each seals the same text; every seal is the same.
    const script = `
      import { useManifestSeal, writeManifest } from ${JSON.stringify(new URL('../../src/util/manifest-seal.ts', import.meta.url).pathname)};
      useManifestSeal({ XDG_STATE_HOME: process.argv[1] });
      await writeManifest(process.argv[2], { same: true });
    `;
    const runs = await Promise.all(
      [1, 2, 3, 4].map(
        (i) =>
          new Promise<string>((done) => {
            const child = spawn(process.execPath, ['--import', tsxLoader(), '--input-type=module', '-e', script, join(dir, 'state'), `${m}.${i}`]);
            let err = '';
            child.stderr.on('data', (b: Buffer) => (err += b));
            child.on('exit', (code) => done(code === 0 ? `${m}.${i}` : `failed: ${err}`));
          }),
      ),
    );
    // Each sealed with the one key now on disk: this process, reading it, believes all four.
    useManifestSeal(env());
    for (const file of runs) expect(await sealProblem(file, readFileSync(file, 'utf8')), file).toBeNull();
  });

  it('is refused, and never replaced, where it is not a key Fleet made: a link, a FIFO, the wrong size, open to others', () => {
    const folder = join(dir, 'state', 'fleet');
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, 'elsewhere'), Buffer.alloc(32, 7), { mode: 0o600 });
    symlinkSync(join(dir, 'elsewhere'), keyFile());
    expect(useManifestSeal(env())).toMatchObject({ problem: expect.stringMatching(/cannot be used: .*ELOOP/) });
    removeDir(keyFile());
    // A FIFO: opened without blocking, then refused for what it is (a test that hangs here fails by its timeout).
    spawnSync('mkfifo', [keyFile()]);
    expect(useManifestSeal(env())).toMatchObject({ problem: expect.stringMatching(/is not a key Fleet made/) });
    removeDir(keyFile());
    writeFileSync(keyFile(), 'short', { mode: 0o600 });
    expect(useManifestSeal(env())).toMatchObject({ problem: expect.stringMatching(/is not a key Fleet made/) });
    expect(readFileSync(keyFile(), 'utf8')).toBe('short');
    writeFileSync(keyFile(), Buffer.alloc(32, 1), { mode: 0o644 });
    chmodSync(keyFile(), 0o644);
    expect(useManifestSeal(env())).toMatchObject({ problem: expect.stringMatching(/is not a key Fleet made/) });
    removeDir(keyFile());
    chmodSync(folder, 0o777);
    expect(useManifestSeal(env())).toMatchObject({ problem: expect.stringMatching(/others may write it/) });
  });
});

describe('a sealed manifest', () => {
  it('is believed with the seal of its exact text, and not after any change or without its seal', async () => {
    useManifestSeal(env());
    const m = join(dir, 'fleet-status.json');
    await writeManifest(m, { lanes: [{ lane: 'b', status: 'failed' }] });
    const text = readFileSync(m, 'utf8');
    expect(await sealProblem(m, text)).toBeNull();
    expect(await sealProblem(m, text.replace('failed', 'completed'))).toMatch(/seal does not match/);
    writeManifestSync(m, { lanes: [] });
    expect(await sealProblem(m, readFileSync(m, 'utf8'))).toBeNull();
    removeDir(`${m}.seal`);
    expect(await sealProblem(m, readFileSync(m, 'utf8'))).toMatch(/has no seal/);
  });

  it('written back unsealed (a merge of a manifest Fleet did not vouch for) loses any seal it had', async () => {
    useManifestSeal(env());
    const m = join(dir, 'fleet-status.json');
    await writeManifest(m, { a: 1 });
    expect(existsSync(`${m}.seal`)).toBe(true);
    await writeManifest(m, { a: 2 }, { seal: false });
    expect(existsSync(`${m}.seal`)).toBe(false);
  });

  it('is never believed by a Fleet without a key, nor by one with another key', async () => {
    const m = join(dir, 'fleet-status.json');
    useManifestSeal(env());
    await writeManifest(m, { a: 1 });
    const text = readFileSync(m, 'utf8');
    stopManifestSeal();
    expect(await sealProblem(m, text)).toMatch(/no seal key/);
    useManifestSeal({ XDG_STATE_HOME: join(dir, 'other-user') });
    expect(await sealProblem(m, text)).toMatch(/seal does not match/);
  });

  it('has its seal read without following a link or blocking on a FIFO', async () => {
    useManifestSeal(env());
    const m = join(dir, 'fleet-status.json');
    await writeManifest(m, { a: 1 });
    const text = readFileSync(m, 'utf8');
    renameSync(`${m}.seal`, join(dir, 'real.seal'));
    symlinkSync(join(dir, 'real.seal'), `${m}.seal`);
    expect(await sealProblem(m, text)).toMatch(/has no seal/);
    removeDir(`${m}.seal`);
    spawnSync('mkfifo', [`${m}.seal`]);
    expect(await sealProblem(m, text)).toMatch(/has no seal/);
  });

  it('names its own path: a sealed manifest copied elsewhere, with its seal, is not believed there', async () => {
    useManifestSeal(env());
    const m = join(dir, 'a', 'fleet-status.json');
    mkdirSync(join(dir, 'a'));
    mkdirSync(join(dir, 'b'));
    await writeManifest(m, { a: 1 });
    for (const f of ['fleet-status.json', 'fleet-status.json.seal']) copyFileSync(join(dir, 'a', f), join(dir, 'b', f));
    const copy = join(dir, 'b', 'fleet-status.json');
    expect(await sealProblem(m, readFileSync(m, 'utf8'))).toBeNull();
    expect(await sealProblem(copy, readFileSync(copy, 'utf8'))).toMatch(/seal does not match/);
  });

  it("is not made in a HOME of another user's (sudo -E): no folder of root's is left there", () => {
    if (process.getuid?.() !== 0) return;
    const home = join(dir, 'alice');
    mkdirSync(home);
    spawnSync('chown', ['65534:65534', home]);
    expect(useManifestSeal({ HOME: home })).toMatchObject({ problem: expect.stringMatching(/belongs to uid 65534, not to this user/) });
    expect(existsSync(join(home, '.local'))).toBe(false);
  });
});
