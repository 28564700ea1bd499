// Owner references, as controller-runtime's SetControllerReference writes them.
import type { OwnerReference } from './model.ts';

/** The controller owner reference to `owner` (of `apiVersion` `kind`): the garbage collector waits for the child. */
export function controllerReference(apiVersion: string, kind: string, owner: { name?: string; uid?: string }): OwnerReference {
  return { apiVersion, kind, name: owner.name ?? '', uid: owner.uid ?? '', controller: true, blockOwnerDeletion: true };
}
