// The emulator's proc-receive hook (see workflow-guard.ts): refuses each ref whose new commits touch a workflow file,
// with GitHub's words, and updates the others itself (a proc-receive hook owns the refs it is given), with the old
// value as a lease, as receive-pack would.
import { execFileSync } from 'node:child_process';

const git = (args, input) => execFileSync('git', args, { encoding: 'utf8', input, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
const ZERO = /^0+$/;
const who = git(['config', '--get', 'emulator.workflowGuard']).trim();

let buf = Buffer.alloc(0);
const packets = [];
let wake = null;
process.stdin.on('data', (d) => {
  buf = Buffer.concat([buf, d]);
  while (buf.length >= 4) {
    const n = Number.parseInt(buf.subarray(0, 4).toString('latin1'), 16);
    if (n === 0) {
      packets.push(null);
      buf = buf.subarray(4);
      continue;
    }
    if (buf.length < n) break;
    packets.push(buf.subarray(4, n).toString('utf8').replace(/\n$/, ''));
    buf = buf.subarray(n);
  }
  wake?.();
});
async function next() {
  while (!packets.length) await new Promise((r) => (wake = r));
  return packets.shift();
}
function send(line) {
  if (line === null) return process.stdout.write('0000');
  const b = Buffer.from(`${line}\n`);
  process.stdout.write((b.length + 4).toString(16).padStart(4, '0'));
  process.stdout.write(b);
}

/** The first workflow file the commits new to this repository create, change or delete. */
function touchedWorkflow(newOid) {
  const out = git(['log', '--format=', '--name-only', '--no-renames', '-m', newOid, '--not', '--all']);
  return out.split('\n').find((p) => p.startsWith('.github/workflows/')) ?? null;
}

while ((await next()) !== null); // version negotiation
send('version=1');
send(null);
const commands = [];
for (let p = await next(); p !== null; p = await next()) commands.push(p.split(' '));
const refusal =
  who === 'pat'
    ? (f) => `refusing to allow a Personal Access Token to create or update workflow \`${f}\` without \`workflow\` scope`
    : (f) => `refusing to allow a GitHub App to create or update workflow \`${f}\` without \`workflows\` permission`;
for (const [oldOid, newOid, ref] of commands) {
  const file = ZERO.test(newOid) ? null : touchedWorkflow(newOid);
  if (file) {
    send(`ng ${ref} ${refusal(file)}`);
    continue;
  }
  try {
    if (ZERO.test(newOid)) git(['update-ref', '-d', ref, oldOid]);
    else git(['update-ref', ref, newOid, ZERO.test(oldOid) ? '' : oldOid]);
    send(`ok ${ref}`);
  } catch {
    send(`ng ${ref} failed to update ref`);
  }
}
send(null);
