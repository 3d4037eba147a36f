/**
 * Calling a reusable workflow (https://docs.github.com/actions/how-tos/reuse-automations/reuse-workflows):
 * typed inputs with defaults, declared secrets (or `secrets: inherit`),
 * outputs mapped from the called jobs, each refusal worded as GitHub words it.
 */
import { isBoolean, isNumber, isString } from '@actions/workflow-parser';
import type { TemplateToken } from '@actions/workflow-parser/templates/tokens/template-token';
import { asString, evaluateToken, type EvalEnv, type Json } from './expressions.js';
import { entries, prop, type LoadedWorkflow } from './workflow.js';

export class CallError extends Error {}

interface InputDef {
  type: 'string' | 'boolean' | 'number' | 'choice' | 'environment';
  required: boolean;
  default?: TemplateToken;
  options?: string[];
}

function inputDefs(wf: LoadedWorkflow, event: 'workflow_call' | 'workflow_dispatch'): Map<string, InputDef> {
  const on = prop(wf.root, 'on');
  const defs = new Map<string, InputDef>();
  for (const [name, def] of entries(prop(prop(on, event), 'inputs'))) {
    const type = prop(def, 'type');
    const required = prop(def, 'required');
    const options = prop(def, 'options');
    const d: InputDef = {
      type: (type && isString(type) ? type.value : 'string') as InputDef['type'],
      required: !!(required && isBoolean(required) && required.value),
    };
    const dflt = prop(def, 'default');
    if (dflt) d.default = dflt;
    if (options) d.options = (evaluateToken(options, { contexts: {} }) as string[]) ?? [];
    defs.set(name, d);
  }
  return defs;
}

function coerce(name: string, def: InputDef, value: Json, where: string): Json {
  if (def.type === 'boolean') {
    if (typeof value === 'boolean') return value;
    if (value === 'true' || value === 'false') return value === 'true';
    throw new CallError(`${where}: The input '${name}' is of type boolean, but the value '${asString(value)}' is not a boolean.`);
  }
  if (def.type === 'number') {
    const n = typeof value === 'number' ? value : Number(value);
    if (!Number.isFinite(n)) throw new CallError(`${where}: The input '${name}' is of type number, but the value '${asString(value)}' is not a number.`);
    return n;
  }
  if (def.type === 'choice' && def.options && !def.options.includes(asString(value))) {
    throw new CallError(`${where}: Provided value '${asString(value)}' for input '${name}' not in the list of allowed values`);
  }
  return asString(value);
}

function defaultValue(def: InputDef, env: EvalEnv): Json {
  if (!def.default) return def.type === 'boolean' ? false : def.type === 'number' ? 0 : '';
  if (isBoolean(def.default) || isNumber(def.default) || isString(def.default)) return evaluateToken(def.default, env);
  return evaluateToken(def.default, env);
}

/**
 * What GitHub checks of a call before the run starts, so that a bad call is the run's startup failure and no
 * job runs (WorkflowTemplateConverter.cs, ValidateWorkflowJobTrigger): inputs and secrets the called workflow
 * does not declare, and required ones the caller does not give.
 */
export function callProblems(called: LoadedWorkflow, callerJob: TemplateToken, inheritSecrets: boolean): string[] {
  const problems: string[] = [];
  const given = new Set(entries(prop(callerJob, 'with')).map(([k]) => k));
  const defs = inputDefs(called, 'workflow_call');
  for (const k of given) if (!defs.has(k)) problems.push(`Invalid input, ${k} is not defined in the referenced workflow.`);
  for (const [name, def] of defs)
    if (def.required && !def.default && !given.has(name)) problems.push(`Input ${name} is required, but not provided while calling.`);
  if (inheritSecrets) return problems;
  const passed = new Set(entries(prop(callerJob, 'secrets')).map(([k]) => k));
  const declared = new Map(entries(prop(prop(prop(called.root, 'on'), 'workflow_call'), 'secrets')));
  for (const k of passed) if (!declared.has(k)) problems.push(`Invalid secret, ${k} is not defined in the referenced workflow.`);
  for (const [name, def] of declared) {
    const required = prop(def, 'required');
    if (required && isBoolean(required) && required.value && !passed.has(name)) problems.push(`Secret ${name} is required, but not provided while calling.`);
  }
  return problems;
}

/** The `inputs` of a called workflow from the caller job's `with:` (`callProblems` has already refused a bad call). */
export function callInputs(
  called: LoadedWorkflow,
  withToken: TemplateToken | undefined,
  callerEnv: EvalEnv,
  calleeEnv: EvalEnv,
  where: string,
): Record<string, Json> {
  const defs = inputDefs(called, 'workflow_call');
  const given = new Map(entries(withToken).map(([k, v]) => [k, evaluateToken(v, callerEnv)]));
  const problems: string[] = [];
  const out: Record<string, Json> = {};
  for (const [name, def] of defs) {
    if (given.has(name)) {
      try {
        out[name] = coerce(name, def, given.get(name)!, where);
      } catch (err) {
        problems.push((err as Error).message);
      }
    } else out[name] = defaultValue(def, calleeEnv);
  }
  if (problems.length) throw new CallError(`${where}: ${problems.join(' ')}`);
  return out;
}

/** The `inputs` of a dispatched workflow from the form (GitHub answers 422 with these messages). */
export function dispatchInputs(wf: LoadedWorkflow, given: Record<string, string | boolean | number>, env: EvalEnv): Record<string, Json> {
  const defs = inputDefs(wf, 'workflow_dispatch');
  const unexpected = Object.keys(given).filter((k) => !defs.has(k));
  if (unexpected.length) throw new CallError(`Unexpected inputs provided: ${JSON.stringify(unexpected)}`);
  const out: Record<string, Json> = {};
  for (const [name, def] of defs) {
    if (name in given) out[name] = coerce(name, def, given[name]!, 'workflow_dispatch');
    else if (def.required && !def.default) throw new CallError(`Required input '${name}' not provided`);
    else out[name] = defaultValue(def, env);
  }
  return out;
}

/** The `secrets` of a called workflow: `inherit`, or the caller's mapping of what it declares (`callProblems` refused the rest). */
export function callSecrets(
  called: LoadedWorkflow,
  secretsToken: TemplateToken | undefined,
  inherit: boolean,
  callerSecrets: Record<string, string>,
  callerEnv: EvalEnv,
): Record<string, string> {
  const declared = new Map(entries(prop(prop(prop(called.root, 'on'), 'workflow_call'), 'secrets')));
  const github = { GITHUB_TOKEN: callerSecrets.GITHUB_TOKEN ?? '' };
  if (inherit) return { ...callerSecrets, ...github };
  const out: Record<string, string> = { ...github };
  for (const [k, v] of entries(secretsToken)) if (declared.has(k)) out[k] = asString(evaluateToken(v, callerEnv));
  return out;
}

/** The called workflow's `outputs`, from its jobs' outputs and results. */
export function callOutputs(called: LoadedWorkflow, env: EvalEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, def] of entries(prop(prop(prop(called.root, 'on'), 'workflow_call'), 'outputs'))) {
    out[name] = asString(evaluateToken(prop(def, 'value'), env));
  }
  return out;
}
