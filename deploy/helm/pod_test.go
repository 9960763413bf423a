package helmchart

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// secretRefsResolve: every Secret the pod reads (env, envFrom, volumes) is
// rendered by the chart with the key asked for, or is one the case declares
// as created beforehand with that key.
func secretRefsResolve(t *testing.T, r rendered, external map[string][]string) {
	t.Helper()
	has := func(name, key string) bool {
		if s, ok := r["Secret/"+name].(*corev1.Secret); ok {
			_, ok := s.StringData[key]
			return ok
		}
		return slices.Contains(external[name], key)
	}
	c := container(t, r)
	for _, e := range c.Env {
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil && !has(ref.SecretKeyRef.Name, ref.SecretKeyRef.Key) {
			t.Errorf("env %s reads key %q of Secret %q, which neither the chart nor the operator provides", e.Name, ref.SecretKeyRef.Key, ref.SecretKeyRef.Name)
		}
	}
	for _, v := range deployment(t, r).Spec.Template.Spec.Volumes {
		if v.Secret == nil {
			continue
		}
		for _, it := range v.Secret.Items {
			if !has(v.Secret.SecretName, it.Key) {
				t.Errorf("volume %s reads key %q of Secret %q, which neither the chart nor the operator provides", v.Name, it.Key, v.Secret.SecretName)
			}
		}
	}
}

// podBasics holds for every value set: the server command, probes on the
// server's health routes through the named port, mounts of declared volumes,
// no API token in the pod, and no setting given twice.
func podBasics(t *testing.T, r rendered) {
	t.Helper()
	pod := deployment(t, r).Spec.Template.Spec
	c := container(t, r)
	if diff := cmp.Diff([]string{"serve", "--http", "0.0.0.0:8080"}, c.Args); diff != "" {
		t.Errorf("container args (-want +got):\n%s", diff)
	}
	for _, p := range []struct {
		name       string
		probe      *corev1.Probe
		path, port string
	}{{"liveness", c.LivenessProbe, "/healthz", "http"}, {"readiness", c.ReadinessProbe, "/readyz", "http"}, {"startup", c.StartupProbe, "/healthz", "http"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != p.port {
			t.Errorf("%s probe = %+v, want GET %s on port %s", p.name, p.probe, p.path, p.port)
		}
	}
	volumes := map[string]bool{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = true
		if v.VolumeSource == (corev1.VolumeSource{}) {
			t.Errorf("volume %s has no source (an empty map rendered as null?)", v.Name)
		}
	}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] {
			t.Errorf("mount %s at %s names no volume of the pod", m.Name, m.MountPath)
		}
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken = %v, want false: agent code runs in this pod", pod.AutomountServiceAccountToken)
	}
	seen := map[string]bool{}
	for _, e := range c.Env {
		if seen[e.Name] {
			t.Errorf("env %s set twice", e.Name)
		}
		seen[e.Name] = true
	}
}

// namespaceMode: the rights docs/install.md lists for the namespace sandbox
// (root, privileged for SYS_ADMIN, SYS_PTRACE, unmasked /proc and loop
// devices, the node's cgroup tree read-write). Several pods may share a node
// (their servers' cgroup sweeps spare each other's groups), so there is no
// anti-affinity and rolling updates surge.
func namespaceMode(t *testing.T, r rendered) {
	t.Helper()
	pod := deployment(t, r).Spec.Template.Spec
	sc := container(t, r).SecurityContext
	if sc == nil || sc.Privileged == nil || !*sc.Privileged || sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		t.Errorf("container security context = %+v, want privileged as uid 0", sc)
	}
	var cgroup *corev1.HostPathVolumeSource
	for _, v := range pod.Volumes {
		if v.HostPath != nil && v.HostPath.Path == "/sys/fs/cgroup" {
			cgroup = v.HostPath
		}
	}
	if cgroup == nil || !mounted(container(t, r), "/sys/fs/cgroup", false) {
		t.Errorf("the node's /sys/fs/cgroup is not mounted read-write (volumes %+v)", pod.Volumes)
	}
	if pod.Affinity != nil {
		t.Errorf("affinity = %+v, want none by default", pod.Affinity)
	}
	wantRollingUpdate(t, r, 1, 0)
	if pod.RuntimeClassName != nil {
		t.Errorf("runtimeClassName = %q, want none by default", *pod.RuntimeClassName)
	}
}

// onePerNode: sandbox.namespace.onePerNode keeps this release's pods on
// distinct nodes and replaces them in place.
func onePerNode(t *testing.T, r rendered) {
	t.Helper()
	aff := deployment(t, r).Spec.Template.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("affinity = %+v, want one required pod anti-affinity term", aff)
	}
	term := aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	if term.TopologyKey != "kubernetes.io/hostname" || !labels.SelectorFromSet(term.LabelSelector.MatchLabels).Matches(labels.Set(deployment(t, r).Spec.Template.Labels)) {
		t.Errorf("anti-affinity term %+v does not keep this release's pods on distinct nodes", term)
	}
	wantRollingUpdate(t, r, 0, 1)
}

// wantRollingUpdate checks the Deployment's rolling update bounds.
func wantRollingUpdate(t *testing.T, r rendered, surge, unavailable int) {
	t.Helper()
	ru := deployment(t, r).Spec.Strategy.RollingUpdate
	if ru == nil || ru.MaxSurge == nil || ru.MaxUnavailable == nil || ru.MaxSurge.IntValue() != surge || ru.MaxUnavailable.IntValue() != unavailable {
		t.Errorf("rolling update = %+v, want maxSurge %d, maxUnavailable %d", ru, surge, unavailable)
	}
}

// subprocessMode: an unprivileged, non-root container with a read-only root
// file system, in the requested runtime class.
func subprocessMode(t *testing.T, r rendered, runtimeClass string) {
	t.Helper()
	pod := deployment(t, r).Spec.Template.Spec
	sc := container(t, r).SecurityContext
	if sc == nil || sc.Privileged != nil && *sc.Privileged || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container security context = %+v, want unprivileged, non-root, no escalation, read-only root", sc)
	}
	if sc != nil && (sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0) {
		t.Errorf("capabilities = %+v, want all dropped", sc.Capabilities)
	}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s mounts the node's %s", v.Name, v.HostPath.Path)
		}
	}
	if pod.RuntimeClassName == nil || *pod.RuntimeClassName != runtimeClass {
		t.Errorf("runtimeClassName = %v, want %q", pod.RuntimeClassName, runtimeClass)
	}
	if !mounted(container(t, r), "/tmp", false) {
		t.Error("no writable /tmp next to the read-only root file system")
	}
}

func mounted(c *corev1.Container, path string, readOnly bool) bool {
	return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == path && m.ReadOnly == readOnly })
}

// wantEnv: the container sets each variable to the value given.
func wantEnv(t *testing.T, r rendered, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, e := range container(t, r).Env {
		if _, asked := want[e.Name]; asked {
			got[e.Name] = e.Value
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("container env (-want +got):\n%s", diff)
	}
}

func wantEnvAbsent(t *testing.T, r rendered, names ...string) {
	t.Helper()
	for _, e := range container(t, r).Env {
		if slices.Contains(names, e.Name) {
			t.Errorf("env %s is set, want it absent", e.Name)
		}
	}
}

func wantSecretKeys(t *testing.T, r rendered, name string, keys ...string) {
	t.Helper()
	s, ok := r["Secret/"+name].(*corev1.Secret)
	if !ok {
		t.Fatalf("no Secret/%s rendered", name)
	}
	var got []string
	for k := range s.StringData {
		got = append(got, k)
	}
	slices.Sort(got)
	if diff := cmp.Diff(keys, got); diff != "" {
		t.Errorf("Secret %s keys (-want +got):\n%s", name, diff)
	}
}

// monitorAndIngressTargetService: the ServiceMonitor selects the Service (and
// not the headless one, which would scrape each pod twice) and scrapes its
// named port; the Ingress sends /mcp to the same Service and port.
func monitorAndIngressTargetService(t *testing.T, r rendered) {
	t.Helper()
	svc := r["Service/"+fullname].(*corev1.Service)
	sm := r["ServiceMonitor/"+fullname].(*serviceMonitor)
	var selected []string
	for _, key := range r.keys() {
		if other, ok := r[key].(*corev1.Service); ok && labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(other.Labels)) {
			selected = append(selected, key)
		}
	}
	if diff := cmp.Diff([]string{"Service/" + svc.Name}, selected); diff != "" {
		t.Errorf("Services the ServiceMonitor selects (each pod must be scraped once) (-want +got):\n%s", diff)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, want /metrics on port %q", sm.Spec.Endpoints, svc.Spec.Ports[0].Name)
	}
	if sm.Labels["release"] != "kube-prometheus" {
		t.Errorf("ServiceMonitor labels %v lack the extra label release=kube-prometheus", sm.Labels)
	}
	ing := r["Ingress/"+fullname].(*networkingv1.Ingress)
	b := ing.Spec.Rules[0].HTTP.Paths[0]
	if b.Path != "/mcp" || b.Backend.Service.Name != svc.Name || b.Backend.Service.Port.Name != svc.Spec.Ports[0].Name {
		t.Errorf("Ingress first path %+v, want /mcp to Service %s port %s", b, svc.Name, svc.Spec.Ports[0].Name)
	}
	if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "codexec-tls" {
		t.Errorf("Ingress TLS = %+v, want the Secret codexec-tls", ing.Spec.TLS)
	}
}

// collectorSidecar: the server exports to the sidecar on localhost; the
// sidecar runs unprivileged with its configuration from the ConfigMap,
// which receives on localhost only and sends to exportEndpoint.
func collectorSidecar(t *testing.T, r rendered) {
	t.Helper()
	wantEnv(t, r, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
	pod := deployment(t, r).Spec.Template.Spec
	if len(pod.Containers) != 2 {
		t.Fatalf("containers %v, want codexec and otel-collector", containerNames(pod.Containers))
	}
	side := pod.Containers[1]
	sc := side.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("sidecar security context %+v: want non-root without privilege escalation", sc)
	}
	mountedConfig := false
	for _, m := range side.VolumeMounts {
		mountedConfig = mountedConfig || (m.Name == "otel-collector" && m.MountPath == "/etc/otelcol")
	}
	if !mountedConfig {
		t.Errorf("sidecar mounts %+v: want its configuration at /etc/otelcol", side.VolumeMounts)
	}
	cm := r["ConfigMap/"+fullname+"-otel-collector"].(*corev1.ConfigMap)
	cfg := cm.Data["config.yaml"]
	for _, want := range []string{"endpoint: 127.0.0.1:4318", `endpoint: "https://otlp.vendor.example"`, "exporters: [otlphttp]"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("collector configuration lacks %q:\n%s", want, cfg)
		}
	}
}
