package logsignals

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
)

// TestSeverityOf: the level of a record from its SeverityNumber, its
// SeverityText, a structured body's level field, or the text as common
// layouts write it; a level word deep in the message is not the record's;
// the levels below warning need not be told from no level.
func TestSeverityOf(t *testing.T) {
	for _, tc := range []struct {
		body string
		want Severity
	}{
		{"16:42:22.382 INFO  t.s.TravelServiceImpl#532 TraceID: x [getRouteByRouteId]", SeverityLow},
		{"16:43:17.120 ERROR  c.s.ContactsServiceImpl#37  [findContactsById][No contacts according to contactsId]", SeverityError},
		{"2026-11-12 02:47:31,514 WARN  [main] o.a.k.c.NetworkClient - connection lost", SeverityWarn},
		{"2026-11-12T02:47:31Z [ERROR] worker: job failed", SeverityError},
		{"ERROR:root:cannot open /data/shard-3", SeverityError},
		{`time=2026-11-12T02:47:31Z level=warn msg="slow request" path=/v1/chat`, SeverityWarn},
		{`ts=2026-11-12T02:47:31Z lvl=ERROR msg="upstream reset"`, SeverityError},
		{"E1112 02:47:31.514301 1 controller.go:114] sync failed", SeverityError},
		{"W1112 02:47:31.514301 1 reflector.go:324] watch closed", SeverityWarn},
		{"I1112 02:47:31.514301 1 leaderelection.go:248] acquired lease", SeverityLow},
		{"Nov 12 02:47:31 gpu-node-06 kernel: SEVERE: disk failing", SeverityError},
		{`{"level":"error","msg":"request failed","status":503}`, SeverityError},
		{`{"log":"16:43:17.120 ERROR c.s.X#1 boom\n","stream":"stdout"}`, SeverityError},
		{"FATAL: the database system is shutting down", SeverityFatal},
		// A level word past the first tokens is part of the message.
		{"GET /v1/models 200 served in 3 ms, no error", SeverityUnknown},
		{"the request took long and then an error page was shown", SeverityUnknown},
		{"errors=0 retries=0", SeverityUnknown},
		{"", SeverityUnknown},
	} {
		lr := plog.NewLogRecord()
		lr.Body().SetStr(tc.body)
		got, _ := severityOf(lr, SeverityWarn)
		if tc.want < SeverityWarn {
			// Below warning the gate may not look further: info or unknown.
			require.Less(t, got, SeverityWarn, "%q", tc.body)
			continue
		}
		require.Equal(t, tc.want.String(), got.String(), "%q", tc.body)
	}
	lr := plog.NewLogRecord()
	lr.Body().SetStr("16:42:22.382 INFO looks fine")
	lr.SetSeverityNumber(plog.SeverityNumberError2)
	got, msg := severityOf(lr, SeverityWarn)
	require.Equal(t, SeverityError, got, "the record's own number wins over the text")
	require.Equal(t, "16:42:22.382 INFO looks fine", msg)
	for _, body := range []string{"INFO all good", "16:42:22.382 DEBUG cache hit", `{"level":"info","msg":"ok"}`, "plain text"} {
		require.False(t, mayBeWarn(body), body)
	}
	for _, body := range []string{"a WARNING here", "E1112 02:47:31.5 x.go:1] y", `{"level":"Error"}`, "kernel panic"} {
		require.True(t, mayBeWarn(body), body)
	}
	lr = plog.NewLogRecord()
	lr.Body().SetStr("no level here")
	lr.SetSeverityText("Warning")
	got, _ = severityOf(lr, SeverityWarn)
	require.Equal(t, SeverityWarn, got)
	lr = plog.NewLogRecord()
	m := lr.Body().SetEmptyMap()
	m.PutStr("message", "upstream connect error")
	m.PutStr("level", "ERROR")
	got, msg = severityOf(lr, SeverityWarn)
	require.Equal(t, SeverityError, got)
	require.Equal(t, "upstream connect error", msg, "a map body's message field is what is mined")
}

// TestSeverityHeader: where the level comes from the text, the message
// mined is what follows the level, without the header (time, thread,
// level) that every line of the layout shares; with nothing after the
// level, the whole line.
func TestSeverityHeader(t *testing.T) {
	for body, want := range map[string]string{
		"16:43:17.120 ERROR  c.s.ContactsServiceImpl#37 [findContactsById][No contacts]": "c.s.ContactsServiceImpl#37 [findContactsById][No contacts]",
		"2026-11-12 02:47:31,514 WARN  [main] o.a.k.c.NetworkClient - connection lost":   "[main] o.a.k.c.NetworkClient - connection lost",
		"ERROR:root:cannot open /data/shard-3":                                           "root:cannot open /data/shard-3",
		"E1112 02:47:31.514301 1 controller.go:114] sync failed":                         "02:47:31.514301 1 controller.go:114] sync failed",
		`time=2026-11-12T02:47:31Z level=warn msg="slow request" path=/v1/chat`:          `msg="slow request" path=/v1/chat`,
		"16:42:22.382 INFO  t.s.TravelServiceImpl#532 [getRouteByRouteId]":               "t.s.TravelServiceImpl#532 [getRouteByRouteId]",
		"ERROR":                      "ERROR",
		"no level here, just a line": "no level here, just a line",
		`{"log":"16:43:17.120 ERROR c.s.X#1 boom\n","stream":"stdout"}`: "c.s.X#1 boom\n",
	} {
		lr := plog.NewLogRecord()
		lr.Body().SetStr(body)
		_, msg := severityOf(lr, SeverityUnknown)
		require.Equal(t, want, msg, "%q", body)
	}
	lr := plog.NewLogRecord()
	lr.Body().SetStr("16:42:22.382 INFO looks fine")
	lr.SetSeverityNumber(plog.SeverityNumberInfo)
	_, msg := severityOf(lr, SeverityUnknown)
	require.Equal(t, "16:42:22.382 INFO looks fine", msg, "the record's own level: its text is left as it is")
}

// TestTemplatesCounted: with min_severity warn, warning and error records
// are counted by entity, level and template; records with variables in
// them share a template; records below warning, or with no level, are not
// mined; the series count towards templates.max_series and spill into the
// overflow series past it.
func TestTemplatesCounted(t *testing.T) {
	clk := &clock{t: t0}
	st := openStore(t, clk)
	cfg := DefaultConfig()
	cfg.Templates.MinSeverity = "warn"
	cfg.Templates.MaxSeries = 3
	c := newConsumer(t, cfg, st, clk, prometheus.NewRegistry())
	contacts := res{"k8s.namespace.name": "ts", "k8s.pod.name": "ts-contacts-service-866bd68c97-xcqfx", "service.name": "ts-contacts-service"}
	var recs []rec
	for i := range 5 {
		recs = append(recs, rec{body: fmt.Sprintf("16:43:%02d.120 ERROR  c.s.ContactsServiceImpl#37  TraceID: %032x [findContactsById][No contacts according to contactsId %d]", 10+i, i, 400+i)})
	}
	recs = append(recs,
		rec{body: "16:43:20.000 INFO  c.s.ContactsServiceImpl#31 FIND CONTACTS BY ID: 415d1665-fbb2-4ec9-83f5-5ebe51dc1825"},
		rec{body: "no level at all"},
		rec{body: "16:43:21.000 WARN  c.c.ContactsController#90 slow verify 812 ms"})
	clk.set(t0.Add(time.Minute))
	require.NoError(t, c.ConsumeLogs(t.Context(), one(contacts, recs...)))
	got := query(t, st, MetricTemplates, t0.Add(time.Minute))
	require.Equal(t, map[string]float64{
		"namespace=ts,pod=ts-contacts-service-866bd68c97-xcqfx,service=ts-contacts-service,severity=error,template=c.s.ContactsServiceImpl#37 TraceID: <*> [findContactsById][No contacts according to contactsId <*>]": 5,
		"namespace=ts,pod=ts-contacts-service-866bd68c97-xcqfx,service=ts-contacts-service,severity=warn,template=c.c.ContactsController#90 slow verify <*> ms":                                                         1,
	}, got)
	require.Zero(t, testutil.ToFloat64(c.m.matched), "no event matched: templates only")

	// Past templates.max_series (3 with the two above), new templates count in the
	// overflow series of their level.
	clk.set(t0.Add(2 * time.Minute))
	require.NoError(t, c.ConsumeLogs(t.Context(), one(contacts,
		rec{body: "16:44:00.000 ERROR  c.s.A#1 first new failure"},
		rec{body: "16:44:01.000 ERROR  c.s.B#2 second new failure kind here"},
		rec{body: "16:44:02.000 ERROR  c.s.C#3 third new failure of yet another kind"})))
	got = query(t, st, MetricTemplates, t0.Add(2*time.Minute))
	require.Len(t, got, 4)
	require.Equal(t, 2.0, got["otel_metric_overflow=true,severity=error"])

	off := DefaultConfig()
	off.Templates.Enabled = false
	clk2 := &clock{t: t0}
	st2 := openStore(t, clk2)
	c2 := newConsumer(t, off, st2, clk2, prometheus.NewRegistry())
	require.NoError(t, c2.ConsumeLogs(t.Context(), one(contacts, recs...)))
	require.Empty(t, query(t, st2, MetricTemplates, t0), "switched off")
}

// TestTemplatesLevels: by default every record that states a level is
// mined, info included, and one that states none is not; "all" mines that
// one too; the templates' series have their own bound, so that a
// service's many info templates leave the events' series their room.
func TestTemplatesLevels(t *testing.T) {
	contacts := res{"k8s.namespace.name": "ts", "k8s.pod.name": "ts-contacts-service-866bd68c97-xcqfx", "service.name": "ts-contacts-service"}
	recs := []rec{
		{body: "16:43:20.000 INFO  c.s.ContactsServiceImpl#31 FIND CONTACTS BY ID: 415d1665-fbb2-4ec9-83f5-5ebe51dc1825"},
		{body: "16:43:20.100 INFO  c.s.ContactsServiceImpl#34 contacts found, 3 of them"},
		{body: "16:43:20.200 DEBUG c.s.ContactsServiceImpl#35 cache hit"},
		{body: "no level at all"},
		{body: "16:43:21.000 ERROR c.s.ContactsServiceImpl#37 Memory cgroup out of memory: Killed process 48211 (java)"},
	}
	count := func(minSev string, maxSeries int) map[string]float64 {
		clk := &clock{t: t0}
		st := openStore(t, clk)
		cfg := DefaultConfig()
		cfg.MaxSeries = 1
		cfg.Templates.MinSeverity = minSev
		cfg.Templates.MaxSeries = maxSeries
		c := newConsumer(t, cfg, st, clk, prometheus.NewRegistry())
		clk.set(t0.Add(time.Minute))
		require.NoError(t, c.ConsumeLogs(t.Context(), one(contacts, recs...)))
		out := map[string]float64{}
		for k, v := range query(t, st, MetricTemplates, t0.Add(time.Minute)) {
			out[k[strings.Index(k, "severity="):]] = v
		}
		for k, v := range query(t, st, MetricEvents, t0.Add(time.Minute)) {
			out["event "+k] = v
		}
		return out
	}
	require.Equal(t, map[string]float64{
		"severity=info,template=c.s.ContactsServiceImpl#31 FIND CONTACTS BY ID: <*>":                                1,
		"severity=info,template=c.s.ContactsServiceImpl#34 contacts found, <*> of them":                             1,
		"severity=info,template=c.s.ContactsServiceImpl#35 cache hit":                                               1,
		"severity=error,template=c.s.ContactsServiceImpl#37 Memory cgroup out of memory: Killed process <*> (java)": 1,
		"event event=oom_killed,namespace=ts,pod=ts-contacts-service-866bd68c97-xcqfx,service=ts-contacts-service":  1,
	}, count("info", 100), "info and above; the OOM kill keeps its event series past four templates")
	all := count("all", 100)
	require.Equal(t, 1.0, all["severity=unknown,template=no level at all"], "all: the record with no level too")
	require.Len(t, all, 6)
	bounded := count("info", 2)
	require.Len(t, bounded, 5, "two templates, the overflow series of the two levels past them, and the event")
	require.Contains(t, bounded, "event event=oom_killed,namespace=ts,pod=ts-contacts-service-866bd68c97-xcqfx,service=ts-contacts-service")
}

// TestTemplatesConfig: the bounds must be positive and the level known
// when mining is on.
func TestTemplatesConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Templates.MaxPerService = 0
	require.EqualError(t, cfg.Validate(), "templates.max_per_service: must be at least 1, got 0")
	cfg = DefaultConfig()
	cfg.Templates.MaxSeries = 0
	require.EqualError(t, cfg.Validate(), "templates.max_series: must be at least 1, got 0")
	cfg = DefaultConfig()
	cfg.Templates.MinSeverity = "debug"
	require.EqualError(t, cfg.Validate(), `templates.min_severity: must be all, info or warn, got "debug"`)
	cfg.Templates.Enabled = false
	require.NoError(t, cfg.Validate())
}

// FuzzSeverityOf: any body gives a level without panicking, and the cheap
// gate never hides a level of warning or above that the full reading of
// the text finds.
func FuzzSeverityOf(f *testing.F) {
	for _, s := range []string{
		"16:43:17.120 ERROR  c.s.ContactsServiceImpl#37  [findContactsById]", "E1112 02:47:31.514301 1 x.go:1] y",
		`{"level":"warn","msg":"x"}`, `{"log":"16:43:17 ERROR x\n"}`, "ERROR:root:boom", "level=error msg=x", "[WARN] x", "", "{", "E",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		lr := plog.NewLogRecord()
		lr.Body().SetStr(body)
		sev, msg := severityOf(lr, SeverityWarn)
		if sev > SeverityFatal {
			t.Fatalf("level %d", sev)
		}
		if !mayBeWarn(body) && textLevel(body) >= SeverityWarn {
			t.Fatalf("the gate hides %s in %q", textLevel(body), body)
		}
		if sev >= SeverityWarn && msg == "" && body != "" && !strings.HasPrefix(strings.TrimSpace(body), "{") {
			t.Fatalf("a text body's level without its message: %q", body)
		}
	})
}

// TestTemplatesStatements: a record that says where it was written is
// its statement's: one template however its variables vary (a list of
// two names or of three), two statements whose texts are alike are two
// templates; the location comes from the text or from OpenTelemetry's
// code attributes; past max_per_service statements a service's records
// are mined by Drain again.
func TestTemplatesStatements(t *testing.T) {
	contacts := res{"k8s.namespace.name": "ts", "k8s.pod.name": "ts-contacts-service-866bd68c97-xcqfx", "service.name": "ts-contacts-service"}
	count := func(maxPerService int, ld plog.Logs) map[string]float64 {
		clk := &clock{t: t0}
		st := openStore(t, clk)
		cfg := DefaultConfig()
		cfg.Templates.MaxPerService = maxPerService
		c := newConsumer(t, cfg, st, clk, prometheus.NewRegistry())
		clk.set(t0.Add(time.Minute))
		require.NoError(t, c.ConsumeLogs(t.Context(), ld))
		out := map[string]float64{}
		for k, v := range query(t, st, MetricTemplates, t0.Add(time.Minute)) {
			out[k[strings.Index(k, "template=")+len("template="):]] = v
		}
		return out
	}
	lines := one(contacts,
		rec{body: "16:43:20.000 INFO  f.m.s.BasicServiceImpl#374 [queryTrainTypeByNames][Train Type names: [TeKuai, ZhiDa]]"},
		rec{body: "16:43:20.100 INFO  f.m.s.BasicServiceImpl#374 [queryTrainTypeByNames][Train Type names: [TeKuai, ZhiDa, KuaiSu]]"},
		rec{body: "16:43:20.200 INFO  f.m.s.BasicServiceImpl#405 [queryTrainTypeByNames][Train Type names: [GaoTie]]"},
		rec{body: "16:43:20.300 INFO  no location here [1, 2]"},
		rec{body: "16:43:20.400 INFO  no location here [1, 2, 3]"},
	)
	require.Equal(t, map[string]float64{
		"f.m.s.BasicServiceImpl#374 [queryTrainTypeByNames][Train Type names: [TeKuai, ZhiDa]]": 2,
		"f.m.s.BasicServiceImpl#405 [queryTrainTypeByNames][Train Type names: [GaoTie]]":        1,
		"no location here [<*>, <*>]":      1,
		"no location here [<*>, <*>, <*>]": 1,
	}, count(200, lines), "one template a statement; Drain where none is named")
	bounded := count(1, lines)
	require.Len(t, bounded, 4)
	require.Equal(t, 2.0, bounded["f.m.s.BasicServiceImpl#374 [queryTrainTypeByNames][Train Type names: [TeKuai, ZhiDa]]"], "the first statement keeps its own template")
	require.Equal(t, 1.0, bounded["f.m.s.BasicServiceImpl#405 [queryTrainTypeByNames][Train Type names: [GaoTie]]"], "the second is mined by the service's Drain miner")

	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	for k, v := range contacts {
		rl.Resource().Attributes().PutStr(k, v)
	}
	recs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for _, body := range []string{"cache miss for user 5", "cache miss for user 6 of 7"} {
		lr := recs.AppendEmpty()
		lr.Body().SetStr(body)
		lr.SetSeverityText("INFO")
		lr.Attributes().PutStr("code.file.path", "internal/cache/lru.go")
		lr.Attributes().PutInt("code.line.number", 88)
	}
	require.Equal(t, map[string]float64{"internal/cache/lru.go:88 cache miss for user <*>": 2}, count(200, ld), "the code attributes name the statement")
}
