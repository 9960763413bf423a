package helmchart

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestHAProxyManifestDecodes: deploy/haproxy/kubernetes.yaml (HAProxy in the
// cluster, in front of the chart's pods) decodes strictly into the API
// types, its Service selects its pods, and its port has the name the chart's
// Ingress uses for a backendService.
func TestHAProxyManifestDecodes(t *testing.T) {
	text, err := os.ReadFile("../haproxy/kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := rendered{}
	decodeManifest(t, "kubernetes.yaml", string(text), r)
	if diff := cmp.Diff([]string{"Deployment/codexec-haproxy", "Service/codexec-haproxy"}, r.keys()); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}
	d := r["Deployment/codexec-haproxy"].(*appsv1.Deployment)
	svc := r["Service/codexec-haproxy"].(*corev1.Service)
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("Service selector %v does not match the pods %v", svc.Spec.Selector, d.Spec.Template.Labels)
	}
	if svc.Spec.Ports[0].Name != "http" || svc.Spec.Ports[0].TargetPort.String() != d.Spec.Template.Spec.Containers[0].Ports[0].Name {
		t.Errorf("Service port %+v, want one named http targeting the container's port", svc.Spec.Ports[0])
	}
	if v := d.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].ConfigMap == nil || v[0].ConfigMap.Name != "codexec-haproxy" {
		t.Errorf("volumes %+v, want the ConfigMap codexec-haproxy", v)
	}
}
