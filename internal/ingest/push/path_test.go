package push

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParsePath(t *testing.T) {
	ok := func(path string, want ...string) {
		t.Helper()
		key, err := parsePath(path)
		require.NoError(t, err, path)
		var got []string
		for _, p := range key {
			got = append(got, p.name, p.value)
		}
		require.Equal(t, want, got, path)
	}
	bad := func(path, wantErr string) {
		t.Helper()
		_, err := parsePath(path)
		require.ErrorContains(t, err, wantErr, path)
	}
	ok("/metrics/job/train", "job", "train")
	ok("/metrics/job/train/", "job", "train")
	ok("/metrics/job/drift/model/m/feature/f", "job", "drift", "feature", "f", "model", "m")
	// The Pushgateway README's examples.
	ok("/metrics/job/directory_cleaner/path@base64/L3Zhci90bXA", "job", "directory_cleaner", "path", "/var/tmp")
	ok("/metrics/job/example/first_label@base64/=/second_label/foobar", "job", "example", "first_label", "", "second_label", "foobar")
	ok("/metrics/job/titan/name/%CE%A0%CF%81%CE%BF%CE%BC%CE%B7%CE%B8%CE%B5%CF%8D%CF%82", "job", "titan", "name", "Προμηθεύς")
	ok("/metrics/job/titan/name@base64/zqDPgc6_zrzOt864zrXPjc-C", "job", "titan", "name", "Προμηθεύς")
	ok("/metrics/job@base64/YS9i", "job", "a/b")
	ok("/metrics/job/j/a/b/a/c", "job", "j", "a", "c") // the later pair wins
	ok("/metrics/job/j/instance/x%2Fy", "job", "j", "instance", "x/y")

	bad("/metrics/job/", "empty job name")
	bad("/metrics/job/j/a", "odd number of components")
	bad("/metrics/job/j/__x/b", `improper label name "__x"`)
	bad("/metrics/job/j/a-b/c", `improper label name "a-b"`)
	bad("/metrics/job/j/a@base64/!!", "invalid base64")
	bad("/metrics/job@base64/=", "empty job name")
	bad("/metrics/job/j/a/%ff", "not valid UTF-8")
	bad("/metrics/job/j/a/%zz", "value of label a")
	bad("/other", "does not start with")
}
