// The real node's pure pieces (no root, no processes): its configuration builders, the DNS hosts file,
// iptables rule splitting, the image script's output. The node itself is tested by `npm run test:cluster`.
import t from 'tap';
import { parse } from 'yaml';
import {
  cniConfList,
  containerdConfig,
  dnsHosts,
  dnsmasqArgs,
  endpointAddresses,
  kubeletConfig,
  kubeProxyConfig,
  NODE_NETWORK,
  nodeDirs,
} from '../../localcluster/node/config.ts';
import type { EndpointSlice } from '../../kube/model.ts';
import { splitRule } from '../../localcluster/node/host.ts';
import { parseImageLines } from '../../localcluster/node/images.ts';
import { redisManifests, setOverlayImage } from '../../dev/kubelet.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dirs = nodeDirs('/tmp/raykeeper-node-x');

t.test('dnsHosts: one line per Service with a cluster IP, per address of a headless one, sorted', async (t) => {
  const cases: Array<[string, Parameters<typeof dnsHosts>[0], string]> = [
    ['none', [], '\n'],
    [
      'one',
      [{ name: 'redis', namespace: 'default', clusterIP: '10.0.0.7' }],
      '10.0.0.7 redis.default.svc.cluster.local redis.default.svc\n',
    ],
    [
      'headless without endpoints and IP-less skipped, sorted',
      [
        { name: 'b', namespace: 'x', clusterIP: '10.0.0.9' },
        { name: 'h', namespace: 'x', clusterIP: 'None' },
        { name: 'n', namespace: 'x' },
        { name: 'a', namespace: 'x', clusterIP: '10.0.0.1' },
      ],
      '10.0.0.1 a.x.svc.cluster.local a.x.svc\n10.0.0.9 b.x.svc.cluster.local b.x.svc\n',
    ],
    [
      'headless: one line per endpoint address, duplicates once',
      [
        { name: 'head-svc', namespace: 'ray', clusterIP: 'None', addresses: ['10.217.0.9', '10.217.0.12', '10.217.0.9'] },
        { name: 'b', namespace: 'x', clusterIP: '10.0.0.9', addresses: ['10.217.0.3'] },
      ],
      '10.0.0.9 b.x.svc.cluster.local b.x.svc\n10.217.0.12 head-svc.ray.svc.cluster.local head-svc.ray.svc\n10.217.0.9 head-svc.ray.svc.cluster.local head-svc.ray.svc\n',
    ],
  ];
  for (const [name, services, want] of cases) t.equal(dnsHosts(services, 'cluster.local'), want, name);
});

t.test('endpointAddresses: ready (or unset) IPv4 endpoints per Service, over all its slices', async (t) => {
  const slice = (
    ns: string,
    svc: string | undefined,
    endpoints: Array<[string, boolean | undefined]>,
    addressType = 'IPv4',
  ): EndpointSlice => ({
    metadata: { namespace: ns, labels: svc ? { 'kubernetes.io/service-name': svc } : ({} as Record<string, string>) },
    addressType,
    endpoints: endpoints.map(([a, ready]) => ({ addresses: [a], conditions: ready === undefined ? {} : { ready } })),
  });
  const got = endpointAddresses([
    slice('ray', 'head-svc', [
      ['10.217.0.9', true],
      ['10.217.0.5', false],
    ]),
    slice('ray', 'head-svc', [['10.217.0.2', undefined]]),
    slice('x', 'v6', [['fd00::1', true]], 'IPv6'),
    slice('x', undefined, [['10.217.0.7', true]]),
  ]);
  t.same([...got.entries()], [['ray/head-svc', ['10.217.0.2', '10.217.0.9']]]);
});

t.test('splitRule: iptables -S lines into arguments, quoted comments whole', async (t) => {
  const cases: Array<[string, string[]]> = [
    ['-A INPUT -j KUBE-FIREWALL', ['-A', 'INPUT', '-j', 'KUBE-FIREWALL']],
    [
      '-A KUBE-SERVICES -m comment --comment "default/web cluster IP" -j KUBE-SVC-X',
      ['-A', 'KUBE-SERVICES', '-m', 'comment', '--comment', 'default/web cluster IP', '-j', 'KUBE-SVC-X'],
    ],
    ['-A X -m comment --comment "a \\"q\\" b" -j DROP', ['-A', 'X', '-m', 'comment', '--comment', 'a "q" b', '-j', 'DROP']],
  ];
  for (const [line, want] of cases) t.same(splitRule(line), want, line);
});

t.test('parseImageLines: only name=/archive= lines', async (t) => {
  t.same(
    parseImageLines(
      'build-images: pause: cached\nname=registry.k8s.io/pause:3.10 archive=/c/pause-1.oci.tar\n\nname=docker.io/library/redis:7.4 archive=/c/redis-2.oci.tar\n',
    ),
    [
      { name: 'registry.k8s.io/pause:3.10', archive: '/c/pause-1.oci.tar' },
      { name: 'docker.io/library/redis:7.4', archive: '/c/redis-2.oci.tar' },
    ],
  );
  t.same(parseImageLines('nothing here'), []);
});

t.test('containerd: the settings this machine needs, every path in the state directory', async (t) => {
  const toml = containerdConfig(dirs);
  t.match(toml, /restrict_oom_score_adj = true/);
  t.match(toml, /SystemdCgroup = false/);
  t.match(toml, /sandbox_image = "registry\.k8s\.io\/pause:3\.10"/);
  t.match(toml, /bin_dir = "\/usr\/lib\/cni"/);
  t.match(toml, /io\.containerd\.internal\.v1\.opt/, 'the /opt plugin is disabled');
  for (const m of toml.matchAll(/^\s*(?:root|state|address|conf_dir) = "([^"]+)"/gm))
    t.ok(m[1]!.startsWith(dirs.root), `${m[0].trim()} in the state dir`);
});

t.test('CNI: a bridge on the private subnet, no masquerade, IPAM state in the state directory', async (t) => {
  const conf = cniConfList(NODE_NETWORK, dirs) as { plugins: Array<Record<string, any>> };
  const bridge = conf.plugins[0]!;
  t.equal(bridge.type, 'bridge');
  t.equal(bridge.bridge, NODE_NETWORK.bridge);
  t.equal(bridge.ipMasq, false, 'nothing is NATed off the machine');
  t.equal(bridge.ipam.dataDir, dirs.cniIpamDir);
  t.same(bridge.ipam.ranges, [[{ subnet: '10.217.0.0/24', gateway: '10.217.0.1' }]]);
});

t.test('kubelet and kube-proxy: cgroup v1, no iptables chains of the kubelet, loopback ports, cluster DNS on the bridge', async (t) => {
  const k = kubeletConfig(NODE_NETWORK, dirs, { port: 1, healthzPort: 2 }, '/ca.crt') as Record<string, any>;
  t.match(k, {
    failCgroupV1: false,
    failSwapOn: false,
    cgroupDriver: 'cgroupfs',
    readOnlyPort: 0,
    resolvConf: '',
    makeIPTablesUtilChains: false,
    address: '127.0.0.1',
    clusterDNS: ['10.217.0.1'],
  });
  t.same(k.authentication.anonymous, { enabled: false });
  t.equal(k.authorization.mode, 'Webhook');
  const p = kubeProxyConfig(NODE_NETWORK, '/kc', { healthzPort: 3, metricsPort: 4 }) as Record<string, any>;
  t.match(p, { mode: 'iptables', clusterCIDR: '10.217.0.0/24', healthzBindAddress: '127.0.0.1:3', metricsBindAddress: '127.0.0.1:4' });
  t.match(p.iptables, { masqueradeAll: true, localhostNodePorts: false });
  t.match(p.conntrack, { maxPerCore: 0, min: 0 }, 'conntrack sysctls left alone');
  const dns = dnsmasqArgs(NODE_NETWORK, '/hosts');
  t.ok(
    dns.includes('--no-resolv') && dns.includes('--listen-address=10.217.0.1') && dns.includes('--bind-interfaces'),
    'no upstream, bridge address only',
  );
});

t.test('dev --kubelet: Redis manifests and the overlay image', async (t) => {
  const [deploy] = redisManifests('docker.io/library/redis:7.4') as Array<Record<string, any>>;
  const c = deploy!.spec.template.spec.containers[0];
  t.equal(c.image, 'docker.io/library/redis:7.4');
  t.same(c.command, ['redis-server', '--protected-mode', 'no', '--save', '', '--appendonly', 'no']);
  const dir = t.testdir({
    'kustomization.yaml': 'resources: [../base]\nimages:\n  - name: other\n    newTag: "1"\n  - name: raykeeper\n    newTag: old\n',
  });
  await setOverlayImage(dir, 'docker.io/library/raykeeper:0.1.0');
  t.same(parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')).images, [
    { name: 'other', newTag: '1' },
    { name: 'raykeeper', newName: 'docker.io/library/raykeeper', newTag: '0.1.0' },
  ]);
  writeFileSync(join(dir, 'kustomization.yaml'), 'resources: [../base]\n');
  await setOverlayImage(dir, 'registry.example:5000/raykeeper:2');
  t.same(parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')).images, [
    { name: 'raykeeper', newName: 'registry.example:5000/raykeeper', newTag: '2' },
  ]);
});
