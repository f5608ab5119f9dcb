package logtemplates

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The cases of drain3's tests/test_drain.py, on unmasked messages as there,
// with the same expected templates (drain3's "*" wildcard written <*>).

// mineRaw adds msgs to m unmasked and returns the template after each.
func mineRaw(t *testing.T, m *Miner, msgs []string) []string {
	t.Helper()
	var got []string
	for _, msg := range msgs {
		id, _ := m.add(msg, false)
		got = append(got, m.Template(id))
		checkInvariants(t, m)
	}
	return got
}

func newMiner(t testing.TB, cfg Config) *Miner {
	t.Helper()
	m, err := New(cfg)
	require.NoError(t, err)
	return m
}

var sshdLines = []string{
	"Dec 10 07:07:38 LabSZ sshd[24206]: input_userauth_request: invalid user test9 [preauth]",
	"Dec 10 07:08:28 LabSZ sshd[24208]: input_userauth_request: invalid user webmaster [preauth]",
	"Dec 10 09:12:32 LabSZ sshd[24490]: Failed password for invalid user ftpuser from 0.0.0.0 port 62891 ssh2",
	"Dec 10 09:12:35 LabSZ sshd[24492]: Failed password for invalid user pi from 0.0.0.0 port 49289 ssh2",
	"Dec 10 09:12:44 LabSZ sshd[24501]: Failed password for invalid user ftpuser from 0.0.0.0 port 60836 ssh2",
	"Dec 10 07:28:03 LabSZ sshd[24245]: input_userauth_request: invalid user pgadmin [preauth]",
}

func TestDrain3AddLogMessage(t *testing.T) {
	m := newMiner(t, Config{})
	require.Equal(t, []string{
		"Dec 10 07:07:38 LabSZ sshd[24206]: input_userauth_request: invalid user test9 [preauth]",
		"Dec 10 <*> LabSZ <*> input_userauth_request: invalid user <*> [preauth]",
		"Dec 10 09:12:32 LabSZ sshd[24490]: Failed password for invalid user ftpuser from 0.0.0.0 port 62891 ssh2",
		"Dec 10 <*> LabSZ <*> Failed password for invalid user <*> from 0.0.0.0 port <*> ssh2",
		"Dec 10 <*> LabSZ <*> Failed password for invalid user <*> from 0.0.0.0 port <*> ssh2",
		"Dec 10 <*> LabSZ <*> input_userauth_request: invalid user <*> [preauth]",
	}, mineRaw(t, m, sshdLines))
	require.Equal(t, 2, m.Len())
}

func TestDrain3AddLogMessageSim75(t *testing.T) {
	m := newMiner(t, Config{Depth: 4, SimThreshold: 0.75, MaxChildren: 100})
	require.Equal(t, []string{
		"Dec 10 07:07:38 LabSZ sshd[24206]: input_userauth_request: invalid user test9 [preauth]",
		"Dec 10 07:08:28 LabSZ sshd[24208]: input_userauth_request: invalid user webmaster [preauth]",
		"Dec 10 09:12:32 LabSZ sshd[24490]: Failed password for invalid user ftpuser from 0.0.0.0 port 62891 ssh2",
		"Dec 10 <*> LabSZ <*> Failed password for invalid user <*> from 0.0.0.0 port <*> ssh2",
		"Dec 10 <*> LabSZ <*> Failed password for invalid user <*> from 0.0.0.0 port <*> ssh2",
		"Dec 10 07:28:03 LabSZ sshd[24245]: input_userauth_request: invalid user pgadmin [preauth]",
	}, mineRaw(t, m, sshdLines))
	require.Equal(t, 4, m.Len())
}

func TestDrain3ShorterThanDepth(t *testing.T) {
	m := newMiner(t, Config{Depth: 4})
	var news []bool
	for _, msg := range []string{"word", "word", "otherword"} {
		_, isNew := m.add(msg, false)
		news = append(news, isNew)
	}
	require.Equal(t, []bool{true, false, true}, news)
	require.Equal(t, 2, m.Len())
}

func TestDrain3MaxClusters(t *testing.T) {
	m := newMiner(t, Config{MaxClusters: 1})
	require.Equal(t, []string{"A format 1", "A format <*>", "B format 1", "B format <*>", "A format 3"},
		mineRaw(t, m, []string{"A format 1", "A format 2", "B format 1", "B format 2", "A format 3"}))
	require.Equal(t, 1, m.Len())
}

func TestDrain3MaxClustersLRUMultipleLeaves(t *testing.T) {
	m := newMiner(t, Config{MaxClusters: 2, Depth: 4})
	require.Equal(t, []string{
		"A A A",
		"A A <*>",
		"B A A",
		"B A <*>",
		"C A A", // evicts "A A <*>"
		"C A <*>",
		"B A <*>", // "B A <*>" is still held
		"A A A",   // "A A <*>" is not: a new cluster, evicting "C A <*>"
	}, mineRaw(t, m, []string{"A A A", "A A B", "B A A", "B A B", "C A A", "C A B", "B A A", "A A A"}))
}

func TestDrain3MaxClustersLRUSingleLeaf(t *testing.T) {
	m := newMiner(t, Config{MaxClusters: 2, Depth: 4})
	require.Equal(t, []string{
		"A A A",
		"A A <*>",
		"A B A",
		"A B <*>",
		"A C A",
		"A C <*>",
		"A B <*>",
		"A A A",
	}, mineRaw(t, m, []string{"A A A", "A A B", "A B A", "A B B", "A C A", "A C B", "A B A", "A A A"}))
}
