/** What `fleet exec` prints: each target's output under its name, then the targets grouped by exit code. Pure. */
import { showInvisibles } from '../core/text.js';
import type { ExecRow } from '../steps/exec.js';

/** A line of a target's output made safe for a terminal: its escapes and controls written out, tabs kept. */
function printable(line: string): string {
  return line.replace(/\r$/, '').split('\t').map(showInvisibles).join('\t');
}

export function renderExec(command: string, rows: readonly ExecRow[], root: string): string {
  const ran = rows.filter((r) => r.status === 'ran');
  const failed = rows.filter((r) => r.status === 'failed');
  const excluded = rows.filter((r) => r.status === 'excluded');
  const out = [
    `fleet exec: ${printable(command)} in ${rows.length} target(s): ${ran.length} ran, ${failed.length} could not be asked, ${excluded.length} excluded`,
    '',
  ];
  for (const r of rows) {
    const head = r.status === 'ran' ? `exit ${r.exit_code}` : `${r.status}${r.detail ? `: ${r.detail}` : ''}`;
    out.push(`── ${printable(r.lane)} (${printable(r.repo)}) · ${printable(head)}`);
    const text = r.output.replace(/\n$/, '');
    // Every output line is indented under a bar, so a target's output can never pass for a heading of Fleet's.
    if (r.status !== 'excluded') out.push(...(text ? text.split('\n').map((l) => `  │ ${printable(l)}`) : ['  (no output)']));
    out.push('');
  }
  const byCode = new Map<number, string[]>();
  for (const r of ran) byCode.set(r.exit_code!, [...(byCode.get(r.exit_code!) ?? []), r.lane]);
  if (byCode.size) {
    out.push('By exit code:');
    for (const [code, lanes] of [...byCode].sort(([a], [b]) => a - b)) out.push(`  ${code}: ${lanes.map(printable).join(', ')}`);
  }
  if (failed.length) out.push(`Could not ask: ${failed.map((r) => printable(r.lane)).join(', ')}`);
  // Only a target that was asked has an output file: where all were excluded, there is none to point at.
  if (ran.length || failed.length) out.push(`Each target's whole output: ${root}/targets/<lane>/output.log; all of it as JSON: ${root}/exec.json`);
  else out.push(`All of it as JSON: ${root}/exec.json`);
  return out.join('\n');
}
