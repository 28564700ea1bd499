// The real node's configuration, as pure builders (no I/O): its private network, containerd's config,
// the CNI network list, the kubelet's and kube-proxy's configuration files and the cluster DNS hosts.
// The settings are the ones that work on a cgroup-v1 VM without CAP_SYS_RESOURCE (see README, "A real
// node").
import { SERVICE_CLUSTER_IP_RANGE } from '../control-plane.ts';
import type { EndpointSlice } from '../../kube/model.ts';

/** The node's network: one Linux bridge with a private pod subnet; nothing is routed off the machine. */
export interface NodeNetwork {
  /** The Linux bridge the CNI bridge plugin attaches pods to (created and removed by the node). */
  bridge: string;
  podCidr: string;
  /** The bridge's address: the pods' gateway, the apiserver's and the cluster DNS's address. */
  gateway: string;
  prefixLength: number;
  serviceCidr: string;
  clusterDomain: string;
}

export const NODE_NETWORK: NodeNetwork = {
  bridge: 'raykeeper0',
  podCidr: '10.217.0.0/24',
  gateway: '10.217.0.1',
  prefixLength: 24,
  serviceCidr: SERVICE_CLUSTER_IP_RANGE,
  clusterDomain: 'cluster.local',
};

/** The node's name: resolves to 127.0.0.1 without /etc/hosts edits or DNS (the apiserver dials it). */
export const NODE_NAME = 'localhost';
export const SANDBOX_IMAGE = 'registry.k8s.io/pause:3.10';
export const CNI_BIN_DIR = '/usr/lib/cni';
export const CNI_NETWORK_NAME = 'raykeeper';

/** The directories of one node run, all inside its state directory. */
export interface NodeDirs {
  root: string;
  containerdRoot: string;
  containerdState: string;
  containerdSocket: string;
  cniConfDir: string;
  cniIpamDir: string;
  kubeletRoot: string;
  kubeletCerts: string;
  podLogs: string;
  volumePlugins: string;
  pki: string;
  dns: string;
}

export function nodeDirs(root: string): NodeDirs {
  return {
    root,
    containerdRoot: `${root}/containerd/root`,
    containerdState: `${root}/containerd/state`,
    containerdSocket: `${root}/containerd/containerd.sock`,
    cniConfDir: `${root}/cni/net.d`,
    cniIpamDir: `${root}/cni/ipam`,
    kubeletRoot: `${root}/kubelet`,
    kubeletCerts: `${root}/kubelet/pki`,
    podLogs: `${root}/pod-logs`,
    volumePlugins: `${root}/kubelet/volume-plugins`,
    pki: `${root}/pki`,
    dns: `${root}/dns`,
  };
}

/**
 * containerd 1.6's config (version 2). `restrict_oom_score_adj`: runc cannot lower oom_score_adj
 * without CAP_SYS_RESOURCE ("can't get final child's PID from pipe: EOF" otherwise). cgroupfs, not
 * systemd. Every path in the state directory; plugins that write elsewhere (/opt) are disabled.
 */
export function containerdConfig(dirs: NodeDirs, sandboxImage = SANDBOX_IMAGE): string {
  const q = (s: string): string => JSON.stringify(s);
  return `version = 2
root = ${q(dirs.containerdRoot)}
state = ${q(dirs.containerdState)}
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = ${q(dirs.containerdSocket)}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${q(sandboxImage)}
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = ${q(CNI_BIN_DIR)}
    conf_dir = ${q(dirs.cniConfDir)}
    max_conf_num = 1
`;
}

/** The bridge + host-local CNI network: no IP masquerade (nothing leaves the machine), hairpin on. */
export function cniConfList(net: NodeNetwork, dirs: NodeDirs): object {
  return {
    cniVersion: '0.4.0',
    name: CNI_NETWORK_NAME,
    plugins: [
      {
        type: 'bridge',
        bridge: net.bridge,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          dataDir: dirs.cniIpamDir,
          ranges: [[{ subnet: net.podCidr, gateway: net.gateway }]],
          routes: [{ dst: '0.0.0.0/0' }],
        },
      },
      { type: 'loopback' },
    ],
  };
}

export interface KubeletPorts {
  port: number;
  healthzPort: number;
}

/**
 * KubeletConfiguration: cgroup v1 allowed (`failCgroupV1: false`), swap tolerated, cgroupfs, no
 * read-only port, on 127.0.0.1, no iptables chains of its own (`makeIPTablesUtilChains: false`: else a
 * KUBE-FIREWALL DROP rule), no host resolv.conf for pods (only the cluster DNS), webhook authn/z (the
 * apiserver presents a client certificate from the cluster CA).
 */
export function kubeletConfig(net: NodeNetwork, dirs: NodeDirs, ports: KubeletPorts, clientCaFile: string): object {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: '127.0.0.1',
    port: ports.port,
    healthzBindAddress: '127.0.0.1',
    healthzPort: ports.healthzPort,
    readOnlyPort: 0,
    failCgroupV1: false,
    failSwapOn: false,
    cgroupDriver: 'cgroupfs',
    makeIPTablesUtilChains: false,
    resolvConf: '',
    clusterDNS: [net.gateway],
    clusterDomain: net.clusterDomain,
    podLogsDir: dirs.podLogs,
    volumePluginDir: dirs.volumePlugins,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: clientCaFile } },
    authorization: { mode: 'Webhook' },
    // Leave the host's sysctls (kernel.panic, vm.overcommit_memory, ...) alone where a setting allows.
    protectKernelDefaults: false,
    // A dev machine's disk is whatever it is: no image GC or evictions fighting the tests.
    evictionHard: { 'memory.available': '1Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    maxPods: 60,
    containerLogMaxSize: '10Mi',
    cpuManagerPolicy: 'none',
    localStorageCapacityIsolation: true,
    registerNode: true,
    enableServer: true,
    rotateCertificates: false,
    serverTLSBootstrap: false,
  };
}

export interface ProxyPorts {
  healthzPort: number;
  metricsPort: number;
}

/**
 * KubeProxyConfiguration, iptables mode: NodePorts only on the bridge address (no route_localnet),
 * conntrack sysctls left as they are, and every Service connection masqueraded (a pod reaching a
 * Service backed by a pod on the same bridge gets its replies through the host).
 */
export function kubeProxyConfig(net: NodeNetwork, kubeconfig: string, ports: ProxyPorts): object {
  return {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'iptables',
    clientConnection: { kubeconfig },
    hostnameOverride: NODE_NAME,
    bindAddress: net.gateway,
    healthzBindAddress: `127.0.0.1:${ports.healthzPort}`,
    metricsBindAddress: `127.0.0.1:${ports.metricsPort}`,
    clusterCIDR: net.podCidr,
    nodePortAddresses: [`${net.gateway}/32`],
    iptables: { masqueradeAll: true, localhostNodePorts: false, syncPeriod: '10s', minSyncPeriod: '0s' },
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s', udpTimeout: '0s', udpStreamTimeout: '0s' },
  };
}

/** What the DNS hosts file needs from a Service. */
export interface ServiceRecord {
  name: string;
  namespace: string;
  clusterIP?: string;
  /** A headless Service's endpoint addresses (its EndpointSlices' ready ones), as cluster DNS answers them. */
  addresses?: string[];
}

/**
 * dnsmasq's hosts file for the cluster DNS: `<svc>.<ns>.svc.<domain>` (and `<svc>.<ns>.svc`) for every
 * Service with a cluster IP, and for a headless Service one line per endpoint address (as CoreDNS
 * answers: KubeRay's head Service of a RayJob's cluster is headless); IP-less Services are skipped.
 * Sorted: same Services, same text.
 */
export function dnsHosts(services: ServiceRecord[], domain: string): string {
  return services
    .flatMap((s) =>
      (s.clusterIP === 'None' ? [...new Set(s.addresses ?? [])] : s.clusterIP ? [s.clusterIP] : []).map(
        (ip) => `${ip} ${s.name}.${s.namespace}.svc.${domain} ${s.name}.${s.namespace}.svc`,
      ),
    )
    .sort()
    .join('\n')
    .concat('\n');
}

/** The addresses of a namespace's Services from EndpointSlices (`kubernetes.io/service-name`): ready (unset = ready) ones. */
export function endpointAddresses(slices: EndpointSlice[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const slice of slices) {
    const service = slice.metadata.labels?.['kubernetes.io/service-name'];
    if (!service || slice.addressType !== 'IPv4') continue;
    const key = `${slice.metadata.namespace}/${service}`;
    const ready = (slice.endpoints ?? []).filter((e) => e.conditions?.ready !== false).flatMap((e) => e.addresses);
    out.set(key, [...(out.get(key) ?? []), ...ready].sort());
  }
  return out;
}

/** dnsmasq's arguments: on the bridge address only, no upstream (nothing leaves), answers from the hosts file. */
export function dnsmasqArgs(net: NodeNetwork, hostsFile: string, port = 53): string[] {
  return [
    '--keep-in-foreground',
    '--conf-file=/dev/null',
    '--no-resolv',
    '--no-hosts',
    '--no-poll',
    `--addn-hosts=${hostsFile}`,
    `--listen-address=${net.gateway}`,
    '--bind-interfaces',
    `--port=${port}`,
    `--local=/${net.clusterDomain}/`,
    '--pid-file=',
    '--user=root',
    '--log-facility=-',
  ];
}

/** What kube-controller-manager and kube-scheduler are started with (admin kubeconfig; leader election off: one of each). */
export interface ControllerComponentsOptions {
  kubeconfig: string;
  /** A directory each for their self-signed serving certificates. */
  certDirs: { controllerManager: string; scheduler: string };
  ports: { controllerManager: number; scheduler: number };
  serviceAccountKey: string;
  rootCa: string;
  serviceCidr: string;
  /** The CA that signs the kubelet's certificates (the real node; kwok's fake nodes need none). */
  signing?: { cert: string; key: string };
}

export function controllerComponentsArgs(o: ControllerComponentsOptions): { controllerManager: string[]; scheduler: string[] } {
  const common = (certDir: string, port: number): string[] => [
    `--kubeconfig=${o.kubeconfig}`,
    `--authentication-kubeconfig=${o.kubeconfig}`,
    `--authorization-kubeconfig=${o.kubeconfig}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${port}`,
    `--cert-dir=${certDir}`,
    '--leader-elect=false',
    '--profiling=false',
  ];
  return {
    controllerManager: [
      ...common(o.certDirs.controllerManager, o.ports.controllerManager),
      '--use-service-account-credentials=true',
      `--service-account-private-key-file=${o.serviceAccountKey}`,
      `--root-ca-file=${o.rootCa}`,
      ...(o.signing ? [`--cluster-signing-cert-file=${o.signing.cert}`, `--cluster-signing-key-file=${o.signing.key}`] : []),
      `--service-cluster-ip-range=${o.serviceCidr}`,
    ],
    scheduler: common(o.certDirs.scheduler, o.ports.scheduler),
  };
}
