/**
 * Imported first by the action's entrypoint, before @actions/artifact is
 * loaded: the artifact client reads ACTIONS_ARTIFACT_MAX_ARTIFACT_COUNT once,
 * when its module loads, and stops a run's listing at 1,000 artifacts by
 * default; a fleet has one per lane, plus the plan's and the report's, per attempt.
 */
process.env.ACTIONS_ARTIFACT_MAX_ARTIFACT_COUNT ||= '100000';
export {};
