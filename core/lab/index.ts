// Howk's Lab: a deterministic simulation of the delivery pipeline on the real policy modules.
export { createLab, type Lab, type LabOptions } from './engine';
export { LAB_CONFIG, labConfig, parameterTable, type LabConfig, type LabConfigOverrides, type ParameterRow } from './config';
export { SCENARIOS, SCENARIO_IDS } from './scenarios';
export { LAB_EPOCH } from './state';
export { createRandom, type Random } from './random';
export * from './signing-demo';
export { summarize } from './summary';
export { describeBehaviour } from './subscriber';
export type * from './types';
