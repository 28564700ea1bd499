// A real local Kubernetes control plane (etcd + kube-apiserver built from source, no kubelet, no
// controller-manager) and the job runner that stands in for the kubelet + job controller. Used by the
// tests (test/helpers/control-plane.ts) and by `raykeeper dev`.
//
//   const binaries = await ensureBinaries((line) => log(line));     // builds once (minutes), cached
//   const cp = await startControlPlane({ binaries, kubeconfigPath, onProgress: log });  // CRDs applied
//   const runner = await startJobRunner({ kubeConfig: cp.kubeConfig(), namespaces: [...] });
//   ...
//   await runner.stop(); await cp.stop();
export { BUILD_SCRIPT, cacheDir, controlPlaneBinaries, type ControlPlaneBinaries, ensureBinaries, MissingBinariesError, missingBinaries, REPO_ROOT, requireBinaries } from './binaries.ts';
export {
  type ControlPlane,
  controlPlaneHandle,
  type ControlPlaneInfo,
  DEFAULT_CRDS_DIR,
  kubeConfigFor,
  kubeconfigDocument,
  loopbackEnv,
  startControlPlane,
  type StartOptions,
  stopControlPlane,
} from './control-plane.ts';
export { applyCrds, applyObject, type ApplyOptions, Discovery, type KubeObject, parseManifests, readManifestDir, waitForCrdsEstablished } from './apply.ts';
export { ApiError, APPLY_PATCH, isStatus, JSON_PATCH, KubeRest, MERGE_PATCH, resourcePath, type ResourceRef } from './rest.ts';
export { DEFAULT_COMMANDS, JobRunner, type JobRunnerOptions, type JobRunResult, startJobRunner } from './job-runner.ts';
export type { CommandTable, Job, Outcome } from './job-logic.ts';
export { freePort } from './net.ts';
export { isAlive, onExitCleanup, spawnSupervised, type Supervised, terminate } from './process.ts';
