package helmchart

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// fullname is the object name of release "agents" of chart "codexec".
const fullname = releaseName + "-codexec"

// Values shared by several cases: authentication and the shared stores.
const (
	tokens       = "auth:\n  tokens: \"tok-1 alice\\n\"\n"
	sharedStores = "store:\n  dsn: postgres://codexec:pw@pg:5432/codexec\nblobStore:\n  dsn: s3://codexec-blobs\nreplicaSecret:\n  value: 0123456789abcdef0123\n"
)

// chartCase is one value set and what it must render.
type chartCase struct {
	name   string
	values string
	// want lists the rendered objects as "Kind/name".
	want []string
	// external are Secrets the operator created before installing: name →
	// keys. Every Secret reference must resolve to these or to a rendered one.
	external map[string][]string
	// check asserts what is particular to the case.
	check func(t *testing.T, r rendered)
}

func chartCases() []chartCase {
	return []chartCase{
		{
			name:   "defaults with tokens and shared stores",
			values: tokens + sharedStores,
			want:   objects("HorizontalPodAutoscaler", "PodDisruptionBudget", "Secret"),
			check: func(t *testing.T, r rendered) {
				namespaceMode(t, r)
				wantEnv(t, r, map[string]string{"CODEXEC_SANDBOX_MODE": "namespace", "CODEXEC_AUTH_TOKENS": "/etc/codexec/auth/tokens", "CODEXEC_SHUTDOWN_GRACE_MS": "30000",
					"CODEXEC_REPLICA_ADDR": "http://$(POD_IP):8080"})
				wantSecretKeys(t, r, fullname, "auth-tokens", "blob-store-dsn", "replica-secret", "store-dsn")
			},
		},
		{
			name:   "namespace mode, one pod per node",
			values: tokens + sharedStores + "sandbox:\n  namespace:\n    onePerNode: true\n",
			want:   objects("HorizontalPodAutoscaler", "PodDisruptionBudget", "Secret"),
			check:  onePerNode,
		},
		{
			name:   "subprocess mode in gVisor",
			values: tokens + sharedStores + "sandbox:\n  mode: subprocess\n  runtimeClassName: gvisor\n",
			want:   objects("HorizontalPodAutoscaler", "PodDisruptionBudget", "Secret"),
			check: func(t *testing.T, r rendered) {
				subprocessMode(t, r, "gvisor")
				wantEnv(t, r, map[string]string{"CODEXEC_SANDBOX_MODE": "subprocess"})
			},
		},
		{
			name:   "autoscaling off, fixed replicas",
			values: tokens + sharedStores + "autoscaling:\n  enabled: false\nreplicaCount: 3\npersistence: {emptyDirSizeLimit: \"\"}\n",
			want:   objects("PodDisruptionBudget", "Secret"),
			check: func(t *testing.T, r rendered) {
				if got := deployment(t, r).Spec.Replicas; got == nil || *got != 3 {
					t.Errorf("replicas = %v, want 3", got)
				}
			},
		},
		{
			name:   "ServiceMonitor and Ingress on",
			values: tokens + sharedStores + "serviceMonitor:\n  enabled: true\n  labels: {release: kube-prometheus}\ningress:\n  enabled: true\n  className: nginx\n  tlsSecretName: codexec-tls\n",
			want:   objects("HorizontalPodAutoscaler", "Ingress", "PodDisruptionBudget", "Secret", "ServiceMonitor"),
			check:  monitorAndIngressTargetService,
		},
		{
			name: "existing Secrets, OAuth, extra settings",
			values: `auth:
  existingSecret: codexec-tokens
  oauth: {issuer: "https://idp.example.com", scopes: [codexec, exec]}
  resourceURL: https://codexec.example.com/mcp
store: {existingSecret: pg-app, existingSecretKey: uri}
replicaSecret: {existingSecret: codexec-replica}
blobStore: {existingSecret: codexec-s3}
env: {CODEXEC_MAX_SESSIONS: "20"}
ingress: {enabled: true, backendService: codexec-haproxy}
extraEnv:
  - name: AWS_ACCESS_KEY_ID
    valueFrom: {secretKeyRef: {name: codexec-s3, key: access-key}}
`,
			external: map[string][]string{"codexec-tokens": {"tokens"}, "pg-app": {"uri"}, "codexec-s3": {"access-key", "dsn"}, "codexec-replica": {"replica-secret"}},
			want:     objects("HorizontalPodAutoscaler", "Ingress", "PodDisruptionBudget"),
			check: func(t *testing.T, r rendered) {
				for _, p := range r["Ingress/"+fullname].(*networkingv1.Ingress).Spec.Rules[0].HTTP.Paths {
					if b := p.Backend.Service; b.Name != "codexec-haproxy" || b.Port.Name != "http" {
						t.Errorf("Ingress path %s goes to %+v, want codexec-haproxy port http", p.Path, b)
					}
				}
				wantEnv(t, r, map[string]string{"CODEXEC_OAUTH_ISSUER": "https://idp.example.com", "CODEXEC_OAUTH_SCOPES": "codexec,exec",
					"CODEXEC_RESOURCE_URL": "https://codexec.example.com/mcp", "CODEXEC_MAX_SESSIONS": "20"})
			},
		},
		{
			name:     "traces to a collector endpoint",
			values:   tokens + sharedStores + "tracing: {endpoint: \"http://otel-collector.observability:4318\", headersSecret: otlp-auth}\n",
			external: map[string][]string{"otlp-auth": {"headers"}},
			want:     objects("HorizontalPodAutoscaler", "PodDisruptionBudget", "Secret"),
			check: func(t *testing.T, r rendered) {
				wantEnv(t, r, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector.observability:4318",
					"OTEL_SERVICE_NAME": "codexec", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"})
				if n := len(deployment(t, r).Spec.Template.Spec.Containers); n != 1 {
					t.Errorf("%d containers, want no sidecar", n)
				}
			},
		},
		{
			name:   "traces through a collector sidecar",
			values: tokens + sharedStores + "tracing:\n  collector: {enabled: true, exportEndpoint: \"https://otlp.vendor.example\"}\n",
			want:   append(objects("HorizontalPodAutoscaler", "PodDisruptionBudget", "Secret"), "ConfigMap/"+fullname+"-otel-collector"),
			check:  collectorSidecar,
		},
		{
			name:   "tracing off by default",
			values: tokens + sharedStores,
			want:   objects("HorizontalPodAutoscaler", "PodDisruptionBudget", "Secret"),
			check: func(t *testing.T, r rendered) {
				wantEnvAbsent(t, r, "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME", "OTEL_TRACES_SAMPLER", "OTEL_EXPORTER_OTLP_HEADERS")
			},
		},
		{
			name:   "one replica, embedded store on a volume",
			values: tokens + "replicaCount: 1\nautoscaling: {enabled: false}\npodDisruptionBudget: {enabled: false}\npersistence: {enabled: true, storageClass: fast}\n",
			want:   objects("PersistentVolumeClaim", "Secret"),
			check: func(t *testing.T, r rendered) {
				if got := deployment(t, r).Spec.Strategy.Type; got != appsv1.RecreateDeploymentStrategyType {
					t.Errorf("strategy = %q, want Recreate (one ReadWriteOnce volume)", got)
				}
				wantEnvAbsent(t, r, "CODEXEC_STORE", "CODEXEC_BLOB_STORE")
			},
		},
	}
}

// objects lists the objects every value set renders plus the given kinds,
// all named after the release.
func objects(kinds ...string) []string {
	out := []string{"Deployment/" + fullname, "Service/" + fullname, "Service/" + fullname + "-pods", "ServiceAccount/" + fullname}
	for _, k := range kinds {
		name := fullname
		if k == "PersistentVolumeClaim" {
			name += "-data"
		}
		out = append(out, k+"/"+name)
	}
	return out
}

func TestChartRenders(t *testing.T) {
	for _, tc := range chartCases() {
		t.Run(tc.name, func(t *testing.T) {
			r, err := render(t, tc.values)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			want := slices.Sorted(slices.Values(tc.want))
			if diff := cmp.Diff(want, r.keys()); diff != "" {
				t.Errorf("rendered objects (-want +got):\n%s", diff)
			}
			selectorsMatchPods(t, r)
			secretRefsResolve(t, r, tc.external)
			podBasics(t, r)
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// TestChartRefuses: value sets that would deploy a server nobody should run
// fail to render, with a message that says what to set.
func TestChartRefuses(t *testing.T) {
	tests := []struct {
		name, values, wantErr string
	}{
		{"no authentication", sharedStores, "no authentication"},
		{"replicas without shared stores", tokens, "needs the shared stores"},
		{"only one shared store", tokens + "store:\n  dsn: postgres://pg/codexec\n", "needs the shared stores"},
		{"store without replica secret", tokens + "store:\n  dsn: postgres://pg/codexec\nblobStore:\n  dsn: s3://b\n", "store needs replicaSecret"},
		{"oauth without resource URL", sharedStores + "auth:\n  oauth: {issuer: https://idp.example.com}\n", "needs auth.resourceURL"},
		{"docker mode", tokens + sharedStores + "sandbox: {mode: docker}\n", "/sandbox/mode"},
		{"chart-owned setting in env", tokens + sharedStores + "env: {CODEXEC_STORE: x}\n", "env.CODEXEC_STORE is set by the chart"},
		{"volume with replicas", tokens + sharedStores + "persistence: {enabled: true}\n", "persistence.enabled"},
		{"misspelled value", tokens + sharedStores + "sandbox: {runtimeClass: gvisor}\n", "runtimeClass"},
		{"sidecar with nowhere to send", tokens + sharedStores + "tracing: {collector: {enabled: true}}\n", "needs tracing.collector.exportEndpoint"},
		{"tracing setting in env", tokens + sharedStores + "env: {OTEL_SERVICE_NAME: x}\n", "env.OTEL_SERVICE_NAME is set by the chart"},
		{"unknown sampler", tokens + sharedStores + "tracing: {sampler: sometimes}\n", "sampler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderFiles(tt.values)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("render error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func deployment(t *testing.T, r rendered) *appsv1.Deployment {
	t.Helper()
	d, ok := r["Deployment/"+fullname].(*appsv1.Deployment)
	if !ok {
		t.Fatalf("no Deployment/%s rendered", fullname)
	}
	return d
}

// container is the server's container: the pod's first, and its only one
// but for the OpenTelemetry Collector sidecar when that is on.
func container(t *testing.T, r rendered) *corev1.Container {
	t.Helper()
	cs := deployment(t, r).Spec.Template.Spec.Containers
	if len(cs) == 0 || cs[0].Name != "codexec" || len(cs) > 2 || (len(cs) == 2 && cs[1].Name != "otel-collector") {
		t.Fatalf("containers %v, want codexec (and the otel-collector sidecar only)", containerNames(cs))
	}
	return &cs[0]
}

func containerNames(cs []corev1.Container) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// selectorsMatchPods: the Deployment's selector selects its own pods, and the
// Services, PDB and HPA point at those pods or that Deployment.
func selectorsMatchPods(t *testing.T, r rendered) {
	t.Helper()
	d := deployment(t, r)
	podLabels := labels.Set(d.Spec.Template.Labels)
	if !labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(podLabels) {
		t.Errorf("Deployment selector %v does not match its pod labels %v", d.Spec.Selector.MatchLabels, podLabels)
	}
	for _, name := range []string{fullname, fullname + "-pods"} {
		svc := r["Service/"+name].(*corev1.Service)
		if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
			t.Errorf("Service %s selector %v does not match the pods %v", name, svc.Spec.Selector, podLabels)
		}
		if got := svc.Spec.Ports[0].TargetPort.String(); got != container(t, r).Ports[0].Name {
			t.Errorf("Service %s targets port %q, the container's is %q", name, got, container(t, r).Ports[0].Name)
		}
	}
	if pdb, ok := r["PodDisruptionBudget/"+fullname].(*policyv1.PodDisruptionBudget); ok {
		if diff := cmp.Diff(d.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels); diff != "" {
			t.Errorf("PDB selector differs from the Deployment's (-deployment +pdb):\n%s", diff)
		}
	}
	if hpa, ok := r["HorizontalPodAutoscaler/"+fullname].(*autoscalingv2.HorizontalPodAutoscaler); ok {
		want := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name}
		if diff := cmp.Diff(want, hpa.Spec.ScaleTargetRef); diff != "" {
			t.Errorf("HPA target (-want +got):\n%s", diff)
		}
		if d.Spec.Replicas != nil {
			t.Errorf("Deployment sets replicas %d next to an HPA (they would fight on every upgrade)", *d.Spec.Replicas)
		}
		if m := hpa.Spec.Metrics[0]; m.Type != autoscalingv2.PodsMetricSourceType || m.Pods.Metric.Name != "codexec_running_calls" {
			t.Errorf("HPA first metric = %+v, want the Pods metric codexec_running_calls", m)
		}
	}
}
