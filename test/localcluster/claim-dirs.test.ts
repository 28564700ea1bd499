// claimDirEnv (localcluster/claim-dirs.ts): which env values of a pod name a claim's mount, and where they
// point instead. A table of pods.
import t from 'tap';
import type { Pod } from '../../kube/model.ts';
import { claimDirEnv, claimNames } from '../../localcluster/claim-dirs.ts';

function pod(
  env: Record<string, string>,
  mount: { subPath?: string; mountPath?: string } = {},
  volume: 'claim' | 'emptyDir' = 'claim',
): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'team-a' },
    spec: {
      containers: [
        {
          name: 'ray-head',
          env: Object.entries(env).map(([name, value]) => ({ name, value })),
          volumeMounts: [{ name: 'data', mountPath: mount.mountPath ?? '/data/gcs', ...(mount.subPath ? { subPath: mount.subPath } : {}) }],
        },
      ],
      volumes: [volume === 'claim' ? { name: 'data', persistentVolumeClaim: { claimName: 'rc-gcs-pvc' } } : { name: 'data', emptyDir: {} }],
    },
  } as Pod;
}
const dirOf = (claim: string) => `/state/claims/${claim}`;

const rows: Array<[string, Pod, Record<string, string>]> = [
  ['the mount path itself', pod({ RAY_gcs_storage_path: '/data/gcs' }), { RAY_gcs_storage_path: '/state/claims/rc-gcs-pvc' }],
  ['a path under it', pod({ P: '/data/gcs/db/x' }), { P: '/state/claims/rc-gcs-pvc/db/x' }],
  ['a trailing slash on the mount', pod({ P: '/data/gcs/db' }, { mountPath: '/data/gcs/' }), { P: '/state/claims/rc-gcs-pvc/db' }],
  ['subPath kept', pod({ P: '/data/gcs/db' }, { subPath: 'a/b' }), { P: '/state/claims/rc-gcs-pvc/a/b/db' }],
  ['a subPath with .. maps nothing', pod({ P: '/data/gcs/db' }, { subPath: '../x' }), {}],
  ['a sibling path with the same prefix is not under it', pod({ P: '/data/gcsx' }), {}],
  ['a relative value is left', pod({ P: 'data/gcs' }), {}],
  ['values of other env left', pod({ P: '/tmp/ray', Q: 'x' }), {}],
  ['an emptyDir volume is not a claim', pod({ P: '/data/gcs' }, {}, 'emptyDir'), {}],
];
for (const [name, p, want] of rows) {
  t.test(name, async (t) => {
    const got = claimDirEnv(p, dirOf);
    t.same(got.env, want);
    t.same(got.dirs.length, Object.keys(want).length > 0 ? 1 : 0, 'the directory to make, once');
  });
}

t.test('claimNames: the claims of the pod', async (t) => {
  t.same(claimNames(pod({})), ['rc-gcs-pvc']);
  t.same(claimNames(pod({}, {}, 'emptyDir')), []);
});
