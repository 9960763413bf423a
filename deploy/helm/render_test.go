package helmchart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Release the tests install the chart as.
const (
	releaseName      = "agents"
	releaseNamespace = "codexec"
	chartDir         = "codexec"
)

// serviceMonitor is the part of monitoring.coreos.com/v1 ServiceMonitor the
// chart renders, with the CRD's field names. The type is not in k8s.io/api
// (it belongs to the Prometheus Operator), and importing the operator's
// module would pull a second dependency tree for one object; a field the
// chart adds must be added here too, or the strict decode fails.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// newObject returns the typed object for apiVersion and kind: the official
// k8s.io/api type, or the local ServiceMonitor above. Anything else is an
// error, so the chart cannot render an object the test does not check.
func newObject(apiVersion, kind string) (any, error) {
	switch apiVersion + "/" + kind {
	case "v1/Secret":
		return &corev1.Secret{}, nil
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1/Service":
		return &corev1.Service{}, nil
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "v1/PersistentVolumeClaim":
		return &corev1.PersistentVolumeClaim{}, nil
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, nil
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "autoscaling/v2/HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}, nil
	case "networking.k8s.io/v1/Ingress":
		return &networkingv1.Ingress{}, nil
	case "monitoring.coreos.com/v1/ServiceMonitor":
		return &serviceMonitor{}, nil
	}
	return nil, fmt.Errorf("no type known for apiVersion %q kind %q", apiVersion, kind)
}

// rendered is the chart's output: objects by "Kind/name".
type rendered map[string]any

// keys lists the rendered objects' "Kind/name", sorted.
func (r rendered) keys() []string {
	out := make([]string, 0, len(r))
	for k := range r {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// render renders the chart with values (a values file's text) and decodes
// every object strictly.
func render(t *testing.T, values string) (rendered, error) {
	t.Helper()
	files, err := renderFiles(values)
	if err != nil {
		return nil, err
	}
	out := rendered{}
	for name, text := range files {
		if path.Ext(name) == ".yaml" { // not NOTES.txt
			decodeManifest(t, name, text, out)
		}
	}
	return out, nil
}

// decodeManifest decodes every document of a multi-document YAML file
// strictly into out; a decoding error or an object given twice fails t.
func decodeManifest(t *testing.T, name, text string, out rendered) {
	t.Helper()
	for _, doc := range releaseutil.SplitManifests(text) {
		if onlyComments(doc) {
			continue
		}
		key, obj, err := decodeStrict(doc)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, doc)
		}
		if _, dup := out[key]; dup {
			t.Fatalf("%s: %s rendered twice", name, key)
		}
		out[key] = obj
	}
}

// renderFiles runs the Helm engine as `helm install` does: values coalesced
// with the chart's defaults and checked against values.schema.json, then the
// templates in strict mode (a reference to a missing value fails).
func renderFiles(values string) (map[string]string, error) {
	return renderRelease(releaseName, values)
}

// renderRelease is renderFiles for a release of the given name.
func renderRelease(name, values string) (map[string]string, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		return nil, err
	}
	opts := chartutil.ReleaseOptions{Name: name, Namespace: releaseNamespace, Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(ch, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Engine{Strict: true}.Render(ch, rv)
}

// onlyComments reports whether doc holds no YAML node (blank or comments).
func onlyComments(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// decodeStrict turns one YAML document into its typed object. Duplicate keys
// and fields the type does not have are errors.
func decodeStrict(doc string) (string, any, error) {
	js, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		return "", nil, err
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return "", nil, err
	}
	obj, err := newObject(tm.APIVersion, tm.Kind)
	if err != nil {
		return "", nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return "", nil, fmt.Errorf("%s/%s: %w", tm.APIVersion, tm.Kind, err)
	}
	name, err := objectName(obj)
	if err != nil {
		return "", nil, err
	}
	return tm.Kind + "/" + name, obj, nil
}

func objectName(obj any) (string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return "", fmt.Errorf("%T has no metadata", obj)
	}
	if m.GetName() == "" {
		return "", fmt.Errorf("%T has no name", obj)
	}
	return m.GetName(), nil
}

// TestStrictDecodeRejectsUnknownField makes sure the decoding above would
// notice a misspelled field (the property every chart test relies on).
func TestStrictDecodeRejectsUnknownField(t *testing.T) {
	tests := []struct {
		name, doc, wantErr string
	}{
		{"misspelled field", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {selectr: {a: b}}\n", `unknown field "selectr"`},
		{"field at the wrong level", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {template: {spec: {privileged: true}}}\n", `unknown field "privileged"`},
		{"duplicate key", "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\ntype: Opaque\ntype: Opaque\n", "already set"},
		{"unknown kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", "no type known"},
		{"servicemonitor field outside the local type", "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec: {jobLabel: a}\n", `unknown field "jobLabel"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := decodeStrict(tt.doc)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("decodeStrict error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
