// The RayJob controller on a token-auth cluster, on the real kube-apiserver, against the fake dashboard
// answering as Ray does with token auth (401 without the token, 403 with another): HTTPMode submits
// nothing while the cluster's auth Secret is missing or holds another token; with the right one it
// submits, follows and completes. No token in any event.
import t from 'tap';
import { SECRETS } from '../../kube/resources.ts';
import { headSpec, inState, manifest, rayJobHarness } from './helpers/harness.ts';

t.test('HTTPMode on a token-auth cluster: the token from the Secret, or no submission', async (t) => {
  const h = await rayJobHarness(t);
  const token = 'the-right-token';
  h.dashboard.token = token;
  const spec = {
    submissionMode: 'HTTPMode',
    rayClusterSpec: {
      rayVersion: '2.60.0',
      authOptions: { mode: 'token', secretName: 'ray-token' },
      headGroupSpec: headSpec('rayproject/ray:2.60.0'),
      workerGroupSpecs: [],
    },
  };
  await h.create(manifest('tok', spec));
  const key = `${h.namespace}/tok`;
  await h.drive('tok', inState('Running'), { autoReady: true });
  for (let i = 0; i < 3; i++) await h.reconciler.reconcile(key);
  t.same(h.dashboard.requests, [], 'no Secret: the dashboard is not even asked (its status check fails as unanswered)');
  t.equal((await h.get('tok'))?.status?.jobDeploymentStatus, 'Running');

  const secretRef = { ...SECRETS, namespace: h.namespace, name: 'ray-token' };
  await h.kube.create(
    { ...SECRETS, namespace: h.namespace },
    { metadata: { name: 'ray-token' }, stringData: { auth_token: 'wrong-token' } },
  );
  for (let i = 0; i < 3; i++) await h.reconciler.reconcile(key);
  t.ok(h.dashboard.requests.length > 0, 'another token: asked');
  t.same(h.dashboard.submissions, [], 'and refused (403): nothing submitted');

  await h.kube.patch(secretRef, { stringData: { auth_token: token } }, 'application/merge-patch+json');
  const done = await h.drive('tok', inState('Complete', 'Failed'), { autoReady: true, timeoutMs: 60_000 });
  t.equal(done.job?.status?.jobDeploymentStatus, 'Complete');
  t.equal(h.dashboard.submissions.length, 1, 'submitted once, with the token');
  const events = JSON.stringify(await h.events('tok'));
  t.notOk(events.includes(token) || events.includes('wrong-token'), 'no token in any event');
});
