package petshop

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goodMetrics is a small metrics.csv in the data set's layout.
const goodMetrics = `microservice,PetSite,PGSQL Query_remote,PetSite,PetSite
metric,latency,latency,requests,availability
statistic,Average,Average,Sum,Average
unix_timestamp,,,,
1681857120.0,0.25,,32.0,100.0
1681857420.0,0.5,0.01,34.0,90.0
`

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

func TestReadMetrics(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "metrics.csv"), goodMetrics)
	f, err := readMetrics(path)
	require.NoError(t, err)
	require.Equal(t, []int64{1681857120, 1681857420}, f.ts)
	require.Equal(t, []float64{0.25, 0.5}, f.get(seriesKey{"PetSite", "latency", "Average"}))
	pg := f.get(seriesKey{"PGSQL Query_remote", "latency", "Average"})
	require.True(t, math.IsNaN(pg[0]), "an empty cell is NaN")
	require.Equal(t, 0.01, pg[1])
	require.Equal(t, []float64{100, 90}, f.get(seriesKey{"PetSite", "availability", "Average"}))
	require.Nil(t, f.get(seriesKey{"PetSite", "latency", "p99"}))
}

// TestReadMetricsErrors: malformed input is an error that names the file
// and the line.
func TestReadMetricsErrors(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(goodMetrics, "\n"), "\n")
	f := func(name string, line int, replace, want string) {
		t.Run(name, func(t *testing.T) {
			ls := append([]string(nil), lines...)
			ls[line-1] = replace
			path := writeFile(t, filepath.Join(t.TempDir(), "metrics.csv"), strings.Join(ls, "\n")+"\n")
			_, err := readMetrics(path)
			require.Error(t, err)
			require.Contains(t, err.Error(), path+":"+strconv.Itoa(line)+":")
			require.Contains(t, err.Error(), want)
		})
	}
	f("header row", 2, "metrik,latency,latency,requests,availability", `header row 2 starts with "metrik", want "metric"`)
	f("missing index row", 4, "1681857000.0,0.25,,32.0,100.0", `header row 4 starts with "1681857000.0", want "unix_timestamp"`)
	f("index row not empty", 4, "unix_timestamp,x,,,", `the index name row has "x" in column 2`)
	f("short header", 3, "statistic,Average,Average,Sum", "4 cells, the header has 5")
	f("short row", 6, "1681857420.0,0.5,0.01,34.0", "4 cells, the header has 5")
	f("long row", 5, "1681857120.0,0.25,,32.0,100.0,1", "6 cells, the header has 5")
	f("not a float", 6, "1681857420.0,0.5,slow,34.0,90.0", `column 3 (PGSQL Query_remote latency Average): "slow" is not a number`)
	f("bad timestamp", 5, "yesterday,0.25,,32.0,100.0", `timestamp "yesterday" is not a number`)
	f("timestamps out of order", 6, "1681857000.0,0.5,0.01,34.0,90.0", "is not after the previous row's")
	f("bad quote", 6, `1681857420.0,"0.5,0.01,34.0,90.0`, "")

	t.Run("header only", func(t *testing.T) {
		path := writeFile(t, filepath.Join(t.TempDir(), "metrics.csv"), strings.Join(lines[:2], "\n")+"\n")
		_, err := readMetrics(path)
		require.ErrorContains(t, err, path+":3: read metrics: the file ends inside the header")
	})
	t.Run("missing", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "metrics.csv")
		_, err := readMetrics(path)
		require.ErrorContains(t, err, path)
		require.ErrorIs(t, err, os.ErrNotExist)
	})
}

const goodGraph = `,PetSite,PGSQL Query_remote,petInfo_AWS::DynamoDB::Table
PetSite,0.0,1.0,1.0
PGSQL Query_remote,0.0,0.0,0.0
petInfo_AWS::DynamoDB::Table,0.0,0.0,0.0
`

func TestReadGraph(t *testing.T) {
	g, err := readGraph(writeFile(t, filepath.Join(t.TempDir(), "graph.csv"), goodGraph))
	require.NoError(t, err)
	require.Equal(t, []string{"PetSite", "PGSQL Query_remote", "petInfo_AWS::DynamoDB::Table"}, g.nodes)
	require.Equal(t, []string{"PGSQL Query_remote", "petInfo_AWS::DynamoDB::Table"}, g.calls["PetSite"])
	require.Equal(t, []string{"PetSite"}, g.callers("PGSQL Query_remote"))
	require.Empty(t, g.calls["PGSQL Query_remote"])

	f := func(name, text, want string) {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, filepath.Join(t.TempDir(), "graph.csv"), text)
			_, err := readGraph(path)
			require.ErrorContains(t, err, path+":"+want)
		})
	}
	f("short row", strings.Replace(goodGraph, "PGSQL Query_remote,0.0,0.0,0.0", "PGSQL Query_remote,0.0,0.0", 1),
		"3: read graph: 3 cells, the header has 4")
	f("not a float", strings.Replace(goodGraph, "PetSite,0.0,1.0,1.0", "PetSite,0.0,yes,1.0", 1),
		`2: read graph: column 3 (PGSQL Query_remote): "yes" is not a number`)
	f("unknown row", strings.Replace(goodGraph, "PGSQL Query_remote,0.0,0.0,0.0", "PGSQL,0.0,0.0,0.0", 1),
		`3: read graph: row "PGSQL" is not a column of the header`)
	f("missing row", strings.Replace(goodGraph, "PGSQL Query_remote,0.0,0.0,0.0\n", "", 1),
		`1: read graph: column "PGSQL Query_remote" has no row`)
	f("empty", "", "1: read graph: the file is empty")
}

func TestReadTarget(t *testing.T) {
	dir := t.TempDir()
	tg, err := readTarget(writeFile(t, filepath.Join(dir, "target.json"),
		`{"target": {"node": "PetSite", "metric": "latency", "agg": "Average", "timestamp": 1681857605}, "root_cause": {"node": "petInfo_AWS::DynamoDB::Table", "metric": null}, "metadata": {}}`))
	require.NoError(t, err)
	require.Equal(t, "PetSite", tg.Target.Node)
	require.Equal(t, "Average", tg.Target.Agg)
	require.Equal(t, "petInfo_AWS::DynamoDB::Table", tg.RootCause.Node)
	require.Nil(t, tg.RootCause.Metric)

	f := func(name, text, want string) {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, filepath.Join(t.TempDir(), "target.json"), text)
			_, err := readTarget(path)
			require.ErrorContains(t, err, path+":"+want)
		})
	}
	f("syntax", "{\n\"target\": {\"node\": \"PetSite\",\n}}", "3: read target")
	f("type", "{\"target\": {\"node\": 1}}", "1: read target")
	f("no root cause", `{"target": {"node": "PetSite"}}`, "1: read target: target.node and root_cause.node must be set")

	t.Run("missing", func(t *testing.T) {
		idir := filepath.Join(t.TempDir(), "test", "issue_0")
		writeFile(t, filepath.Join(idir, "metrics.csv"), goodMetrics)
		_, err := readIssue(idir)
		require.ErrorContains(t, err, filepath.Join(idir, "target.json"))
		require.ErrorIs(t, err, os.ErrNotExist)
	})
}

// TestLoadScenario: scenarios are found under the data set's directory
// (the known four first), issues sorted by number, train before test.
func TestLoadScenario(t *testing.T) {
	dir := t.TempDir()
	for _, sc := range []string{"zz_extra", "high_traffic", "low_traffic"} {
		writeFile(t, filepath.Join(dir, sc, "graph.csv"), goodGraph)
		writeFile(t, filepath.Join(dir, sc, "noissue", "metrics.csv"), goodMetrics)
	}
	tgt := `{"target": {"node": "PetSite", "metric": "latency", "agg": "Average", "timestamp": 1}, "root_cause": {"node": "PGSQL Query_remote", "metric": null}}`
	for _, is := range []string{"test/issue_10", "test/issue_2", "train/issue_0"} {
		writeFile(t, filepath.Join(dir, "low_traffic", is, "metrics.csv"), goodMetrics)
		writeFile(t, filepath.Join(dir, "low_traffic", is, "target.json"), tgt)
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "low_traffic", "test", ".hidden"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "not_a_scenario"), 0o755))

	paths, err := findScenarios(dir)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "low_traffic"), filepath.Join(dir, "high_traffic"), filepath.Join(dir, "zz_extra")}, paths)
	one, err := findScenarios(paths[0])
	require.NoError(t, err)
	require.Equal(t, paths[:1], one, "a scenario directory is its own data set")

	sc, err := loadScenario(paths[0])
	require.NoError(t, err)
	var names []string
	for _, is := range sc.issues {
		names = append(names, is.split+"/"+is.name)
	}
	require.Equal(t, []string{"train/issue_0", "test/issue_2", "test/issue_10"}, names)

	_, err = findScenarios(filepath.Join(dir, "not_a_scenario"))
	require.ErrorContains(t, err, "no directory under")
}
