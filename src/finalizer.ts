// How raykeeper reports a finalizer patch the API server refused (kube/finalizers.ts sends the patches):
// our Event reason, and the API's message with the objects' inline secrets masked (a rule's message may
// quote the stored object). Every FinalizerPatcher is given this.
import type { RefusalReport } from '../kube/finalizers.ts';
import { EVENT_FINALIZER_PATCH_REJECTED } from './event-reasons.ts';
import { maskInlineSecrets } from './inline-secrets.ts';

export const FINALIZER_REFUSAL: RefusalReport = { reason: EVENT_FINALIZER_PATCH_REJECTED, mask: maskInlineSecrets };
