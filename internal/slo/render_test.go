package slo

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestPrometheusRuleStrict decodes every rendered PrometheusRule into the
// operator's Go type as the API server would, unknown fields rejected, and
// compares it with the object it was rendered from.
func TestPrometheusRuleStrict(t *testing.T) {
	for name, spec := range map[string]*Spec{"presets": Presets(), "example": exampleSpec(t)} {
		files, err := Files(spec)
		require.NoError(t, err)
		for _, f := range files {
			t.Run(name+"/"+f.Name, func(t *testing.T) {
				b, err := Render(f, FormatPrometheusRule)
				require.NoError(t, err)
				var got monitoringv1.PrometheusRule
				require.NoError(t, yaml.UnmarshalStrict(b, &got))
				require.Equal(t, "monitoring.coreos.com/v1", got.APIVersion)
				require.Equal(t, "PrometheusRule", got.Kind)
				require.Equal(t, f.Name, got.Name)
				require.Equal(t, PrometheusRule(f), &got)
				require.Len(t, got.Spec.Groups, len(f.Groups))
				for i, g := range got.Spec.Groups {
					require.Len(t, g.Rules, len(f.Groups[i].Rules))
					for j, r := range g.Rules {
						require.Equal(t, f.Groups[i].Rules[j].Expr, r.Expr.String())
					}
				}
			})
		}
	}
}

// TestPrometheusRuleStrictRejects shows that the strict decoding above can
// fail: an unknown field is an error.
func TestPrometheusRuleStrictRejects(t *testing.T) {
	files, err := Files(Presets())
	require.NoError(t, err)
	b, err := Render(files[0], FormatPrometheusRule)
	require.NoError(t, err)
	bad := strings.Replace(string(b), "spec:\n", "spec:\n  evaluation: fast\n", 1)
	require.NotEqual(t, string(b), bad)
	var pr monitoringv1.PrometheusRule
	require.ErrorContains(t, yaml.UnmarshalStrict([]byte(bad), &pr), "evaluation")
}

func TestRenderUnknownFormat(t *testing.T) {
	_, err := Render(File{Name: "x"}, "json")
	require.ErrorContains(t, err, `unknown format "json"`)
}

func TestFileName(t *testing.T) {
	f := File{Name: "vigil-slo-ttft"}
	require.Equal(t, "vigil-slo-ttft.yml", f.FileName(FormatPrometheus))
	require.Equal(t, "vigil-slo-ttft.yaml", f.FileName(FormatPrometheusRule))
}
