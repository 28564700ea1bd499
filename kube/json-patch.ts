// The one JSON patch (RFC 6902) operation type: the controllers' finalizer patches use `test` guards; the
// webhook's admission patches (src/admission/patch.ts) use the value-writing subset with JSON values.

export type JsonPatchOp<V = unknown> =
  | { op: 'test'; path: string; value: V }
  | { op: 'add'; path: string; value: V }
  | { op: 'remove'; path: string }
  | { op: 'replace'; path: string; value: V };
