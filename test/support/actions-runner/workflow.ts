/**
 * Workflow and action files through GitHub's own parser: a file GitHub would
 * refuse is refused here with the parser's messages. The converted model
 * (`WorkflowTemplate`) gives jobs, needs and conditions; fields the converter
 * does not carry (`with`, `timeout-minutes`, `permissions`, `defaults`,
 * `continue-on-error`, `secrets`, a step's `shell`) are read from the
 * validated token tree beside it.
 */
import {
  convertWorkflowTemplate,
  isMapping,
  isSequence,
  isString,
  NoOperationTraceWriter,
  parseWorkflow,
  type WorkflowTemplate,
} from '@actions/workflow-parser';
import type { TemplateToken } from '@actions/workflow-parser/templates/tokens/template-token';
import { convertActionTemplate, type ActionTemplate } from '@actions/workflow-parser/actions/index';
import { getActionSchema } from '@actions/workflow-parser/actions/action-schema';
import { TemplateContext, TemplateValidationErrors } from '@actions/workflow-parser/templates/template-context';
import { readTemplate } from '@actions/workflow-parser/templates/template-reader';
import { YamlObjectReader } from '@actions/workflow-parser/workflows/yaml-object-reader';
import type { WorkflowJob } from '@actions/workflow-parser/model/workflow-template';
import type { MappingToken } from '@actions/workflow-parser/templates/tokens/mapping-token';

export class WorkflowFileError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file}: GitHub would refuse this file:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  }
}

/** Where a workflow came from: `owner/repo`, the commit, the path in it. */
export interface FileOrigin {
  repo: string;
  sha: string;
  ref: string;
  path: string;
}

export interface LoadedWorkflow {
  origin: FileOrigin;
  name: string;
  template: WorkflowTemplate;
  root: MappingToken;
  jobs: JobDef[];
}

export interface JobDef {
  id: string;
  model: WorkflowJob;
  /** The job's validated token tree, for the fields the converter leaves out. */
  raw: MappingToken;
  needs: string[];
}

/** The named property of a mapping token, or undefined. */
export function prop(token: TemplateToken | undefined, key: string): TemplateToken | undefined {
  if (!token || !isMapping(token)) return undefined;
  for (const pair of token) if (isString(pair.key) && pair.key.value === key) return pair.value;
  return undefined;
}

/** The items of a sequence token (empty when absent). */
export function items(token: TemplateToken | undefined): TemplateToken[] {
  if (!token || !isSequence(token)) return [];
  const out: TemplateToken[] = [];
  for (const t of token) out.push(t);
  return out;
}

/** The key/value pairs of a mapping token with literal keys. */
export function entries(token: TemplateToken | undefined): Array<[string, TemplateToken]> {
  if (!token || !isMapping(token)) return [];
  const out: Array<[string, TemplateToken]> = [];
  for (const pair of token) if (isString(pair.key)) out.push([pair.key.value, pair.value]);
  return out;
}

export async function loadWorkflow(origin: FileOrigin, content: string): Promise<LoadedWorkflow> {
  const display = `${origin.repo}/${origin.path}@${origin.ref}`;
  const parsed = parseWorkflow({ name: origin.path, content }, new NoOperationTraceWriter());
  const problems = parsed.context.errors.getErrors().map((e) => e.message);
  if (problems.length || !parsed.value) throw new WorkflowFileError(display, problems.length ? problems : ['empty workflow']);
  // fetchReusableWorkflowDepth 0: each called workflow is loaded and validated on its own when its caller job runs.
  const template = await convertWorkflowTemplate(parsed.context, parsed.value, undefined, { fetchReusableWorkflowDepth: 0 });
  const root = parsed.value as MappingToken;
  const rawJobs = new Map(entries(prop(root, 'jobs')));
  for (const raw of rawJobs.values()) {
    for (const step of items(prop(raw, 'steps'))) {
      const uses = prop(step, 'uses');
      if (uses && isString(uses) && !validUses(uses.value))
        parsed.context.error(uses, new Error(`Expected format {org}/{repo}[/path]@ref. Actual '${uses.value}'`));
    }
  }
  const converted = [...parsed.context.errors.getErrors().map((e) => e.message), ...(template.errors ?? []).map((e) => e.Message)];
  if (converted.length) throw new WorkflowFileError(display, [...new Set(converted)]);
  const jobs = template.jobs.map((model) => ({
    id: model.id.value,
    model,
    raw: rawJobs.get(model.id.value) as MappingToken,
    needs: (model.needs ?? []).map((n) => n.value),
  }));
  const nameToken = prop(root, 'name');
  return { origin, name: nameToken && isString(nameToken) ? nameToken.value : origin.path, template, root, jobs };
}

/**
 * A step's `uses:` as GitHub's converter accepts it (WorkflowTemplateConverter.cs, which the
 * language service's converter does not check): `./path`, `docker://image`, or
 * `{org}/{repo}[/path]@ref`.
 */
function validUses(uses: string): boolean {
  if (uses.startsWith('docker://') || uses.startsWith('./') || uses.startsWith('.\\')) return true;
  const [path = '', ref, ...rest] = uses.split('@');
  return rest.length === 0 && !!ref && path.split(/[/\\]/).filter(Boolean).length >= 2;
}

export interface LoadedAction {
  template: ActionTemplate;
  root: MappingToken;
  /** Raw step tokens of a composite action (for `with`, `shell`, `working-directory`). */
  rawSteps: TemplateToken[];
}

/**
 * An action.yml as the runner reads it. `parseAction` validates against
 * "action-root-strict" (the editor's schema: `name`, `description` required);
 * GitHub's runner reads "action-root", where both are optional and only a
 * missing `runs:` is an error (ActionManifestManager.cs).
 */
export function loadAction(display: string, content: string): LoadedAction {
  const context = new TemplateContext(new TemplateValidationErrors(), getActionSchema(), new NoOperationTraceWriter());
  const fileId = context.getFileId(display);
  const reader = new YamlObjectReader(fileId, content);
  for (const e of reader.errors) context.error(fileId, e.message, e.range);
  const value = reader.errors.length ? undefined : readTemplate(context, 'action-root', reader, fileId);
  const problems = context.errors.getErrors().map((e) => e.message);
  if (problems.length || !value) throw new WorkflowFileError(display, problems.length ? problems : ['empty action']);
  const template = convertActionTemplate(context, value);
  const after = context.errors.getErrors().map((e) => e.message);
  if (after.length) throw new WorkflowFileError(display, after);
  if (!template.runs) throw new WorkflowFileError(display, [`Top level 'runs:' section is required for ${display}`]);
  const root = value as MappingToken;
  return { template, root, rawSteps: items(prop(prop(root, 'runs'), 'steps')) };
}
