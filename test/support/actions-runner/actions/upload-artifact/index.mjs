// actions/upload-artifact, emulated by its documented contract on the real @actions/artifact client: the
// files matched by `path` (hidden files left out unless asked), rooted at their common ancestor.
import { statSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import { DefaultArtifactClient } from '@actions/artifact';
import * as core from '@actions/core';
import * as glob from '@actions/glob';

function commonRoot(paths) {
  const parts = paths.map((p) => resolve(p).split(sep));
  const first = parts[0] ?? [];
  let n = first.length;
  for (const p of parts) {
    let i = 0;
    while (i < n && p[i] === first[i]) i++;
    n = i;
  }
  return first.slice(0, n).join(sep) || sep;
}

try {
  const name = core.getInput('name') || 'artifact';
  const patterns = core.getInput('path', { required: true });
  const hidden = core.getBooleanInput('include-hidden-files');
  const globber = await glob.create(patterns, { excludeHiddenFiles: !hidden });
  const files = (await globber.glob()).filter((f) => statSync(f).isFile());
  const searchRoots = globber.getSearchPaths();
  if (files.length === 0) {
    const how = core.getInput('if-no-files-found') || 'warn';
    const msg = `No files were found with the provided path: ${patterns}. No artifacts will be uploaded.`;
    if (how === 'error') core.setFailed(msg);
    else if (how === 'warn') core.warning(msg);
    else core.info(msg);
  } else {
    const root =
      searchRoots.length === 1 && statSync(searchRoots[0]).isDirectory()
        ? searchRoots[0]
        : commonRoot(searchRoots.map((p) => (statSync(p, { throwIfNoEntry: false })?.isDirectory() ? p : dirname(p))));
    const client = new DefaultArtifactClient();
    if (core.getBooleanInput('overwrite')) await client.deleteArtifact(name).catch(() => undefined);
    const days = core.getInput('retention-days');
    const r = await client.uploadArtifact(name, files, root, {
      ...(days ? { retentionDays: Number(days) } : {}),
      compressionLevel: Number(core.getInput('compression-level') || '6'),
    });
    core.info(`Uploaded ${files.length} file(s) from ${relative(process.env.GITHUB_WORKSPACE ?? '.', root) || '.'} as ${name}`);
    core.setOutput('artifact-id', String(r.id));
    core.setOutput('artifact-digest', r.digest ?? '');
    core.setOutput(
      'artifact-url',
      `${process.env.GITHUB_SERVER_URL}/${process.env.GITHUB_REPOSITORY}/actions/runs/${process.env.GITHUB_RUN_ID}/artifacts/${r.id}`,
    );
  }
} catch (err) {
  core.setFailed(err.message);
}
