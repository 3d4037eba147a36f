/** What a built-in (in-process) emulation of a third-party action gets and gives. */
export interface BuiltinStep {
  inputs: Record<string, string>;
  /** The step's process environment as a JavaScript action would get it (GITHUB_*, RUNNER_*, INPUT_*). */
  env: Record<string, string>;
  workspace: string;
  log(line: string): void;
  /** `::add-mask::`: the value never reaches the job log. */
  mask(value: string): void;
  /** GITHUB_STATE for the post step. */
  state: Record<string, string>;
}

export interface BuiltinResult {
  ok: boolean;
  outputs: Record<string, string>;
  /** The error annotation when not ok. */
  error?: string;
  /** A folder to put first on PATH for the job's later steps (GITHUB_PATH). */
  addPath?: string;
}

export interface Builtin {
  main(step: BuiltinStep): Promise<BuiltinResult>;
  post?(step: BuiltinStep): Promise<void>;
}
