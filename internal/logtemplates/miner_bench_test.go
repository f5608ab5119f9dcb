package logtemplates

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// Run with:
//
//	go test ./internal/logtemplates -run '^$' -bench . -benchtime 2s

// benchTemplates are 50 call sites of a microservice fleet (Train Ticket's
// Spring services, Go and Python services, proxies, Kubernetes and
// databases). Each {kind} is filled with a fresh value per message.
var benchTemplates = []string{
	"ERROR  c.s.ContactsServiceImpl#37  [findContactsById][contactsRepository.findById][No contacts according to contactsId] contactsId: {uuid}",
	"INFO  c.s.ContactsServiceImpl#52  [createContacts][Create contacts success][contactsId: {uuid}, accountId: {uuid}]",
	"WARN  o.s.OrderServiceImpl#118  [getOrderById][Order not found][orderId: {uuid}]",
	"INFO  o.s.OrderServiceImpl#203  [queryOrders][Query orders for user {word}][count: {int}]",
	"ERROR  p.s.PaymentServiceImpl#88  [pay][Payment failed][orderId: {uuid}, price: {float}, reason: {word}]",
	"INFO  t.s.TravelServiceImpl#61  [queryInfo][Trip {word} from {word} to {word} departs at {time}]",
	"WARN  s.s.SeatServiceImpl#144  [distributeSeat][No seat left][tripId: {word}{int}, seatType: {int}]",
	"INFO  a.s.AuthServiceImpl#73  [login][User {word} logged in from {ip}]",
	"ERROR  a.s.AuthServiceImpl#97  [login][Invalid credentials for user {word}]",
	"INFO  u.s.UserServiceImpl#45  [findByUserId][userId: {uuid}] took {ms}",
	"2025-03-14 {time} ERROR [ts-route-service,{hex16},{hex16}] 1 --- [http-nio-11178-exec-{int}] r.s.RouteServiceImpl#88 : [getRouteById][Route not found][routeId: {uuid}]",
	"2025-03-14 {time} INFO [ts-station-service,{hex16},{hex16}] 1 --- [http-nio-12345-exec-{int}] s.c.StationController#41 : [queryById][stationId: {word}]",
	"o.h.engine.jdbc.spi.SqlExceptionHelper : SQL Error: 1205, SQLState: 40001",
	"c.z.hikari.pool.HikariPool : HikariPool-1 - Connection is not available, request timed out after {ms}.",
	"o.a.c.c.C.[Tomcat].[localhost].[/] : Initializing Spring embedded WebApplicationContext",
	`level=info ts={ts} caller=handler.go:112 msg="handled request" method=GET path=/api/v1/orders/{int} status=200 duration={ms}`,
	`level=error ts={ts} caller=client.go:88 msg="upstream error" upstream={ip}:8080 err="context deadline exceeded" attempt={int}`,
	`level=warn ts={ts} caller=cache.go:57 msg="cache miss" key=user:{int} shard={int}`,
	`level=info ts={ts} caller=worker.go:201 msg="job done" job_id={uuid} items={int} elapsed={ms}`,
	`level=debug ts={ts} caller=pool.go:33 msg="conn acquired" pool=db idle={int} in_use={int}`,
	`{"level":"info","ts":{float},"logger":"http.log.access","msg":"handled request","status":200,"duration":{float}}`,
	`{"level":"error","ts":{float},"msg":"failed to publish","topic":"orders","partition":{int},"error":"broker not available"}`,
	`{ip} - - [14/Mar/2025:{time} +0000] "GET /api/v1/users/{int} HTTP/1.1" 200 {int} "-" "Go-http-client/1.1"`,
	`{ip} - - [14/Mar/2025:{time} +0000] "POST /api/v1/orders HTTP/1.1" 503 {int} "-" "okhttp/4.12.0"`,
	`[{ts}] "GET /healthz HTTP/1.1" 200 - via_upstream - "-" 0 2 {int} {int} "-" "kube-probe/1.30" "{uuid}" "{word}.default.svc:8080"`,
	"upstream connect error or disconnect/reset before headers. reset reason: connection failure, transport failure reason: delayed connect error: 111",
	"INFO:     {ip}:{int} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
	"Engine 000: Avg prompt throughput: {float} tokens/s, Avg generation throughput: {float} tokens/s, Running: {int} reqs, Waiting: {int} reqs",
	"Traceback (most recent call last): File \"/app/server.py\", line {int}, in handle",
	"KeyError: '{word}'",
	"Worker {int} timed out after {int} seconds, restarting",
	"Successfully pulled image \"registry.local/{word}:v{int}.{int}\" in {ms} (including waiting)",
	"Back-off restarting failed container {word} in pod {word}-{hex8}-{word}_default({uuid})",
	"Liveness probe failed: Get \"http://{ip}:8080/healthz\": context deadline exceeded",
	"Readiness probe failed: HTTP probe failed with statuscode: 503",
	"Started container {word}",
	"Killing container with id containerd://{hex64}",
	"Created pod: {word}-{hex8}-{word}",
	"Scaled up replica set {word}-{hex8} to {int}",
	"node {word}-{int} status is now: NodeNotReady",
	"checkpoint complete: wrote {int} buffers ({float}%); 0 WAL file(s) added, 0 removed, {int} recycled; write={float} s, sync={float} s",
	"duration: {float} ms  statement: SELECT * FROM orders WHERE user_id = {int} LIMIT 50",
	"could not serialize access due to concurrent update",
	"Aborted connection {int} to db: 'orders' user: '{word}' host: '{ip}' (Got timeout reading communication packets)",
	"slow query: {ms} SELECT id, status FROM payments WHERE order_id = '{uuid}'",
	"Accepted connection from {ip}:{int} (conn {int})",
	"Client closed connection {ip}:{int} after {int} requests",
	"GC pause (G1 Evacuation Pause) (young) {int}M->{int}M({int}M) {ms}",
	"Sending email to {email} with subject order-{int} confirmation",
	"retrying request to {ip}:{int} in {ms} (attempt {int} of 5): connection refused",
}

var benchWords = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy",
	"shanghai", "beijing", "nanjing", "G1234", "D5678", "ts-order", "ts-seat", "insufficient_funds", "expired_card"}

// benchMessages returns n messages drawn from benchTemplates with fresh
// values, the same on every run.
func benchMessages(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	fill := map[string]func() string{
		"uuid": func() string {
			return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xfff, 0x8000|r.Uint32()&0x3fff, r.Uint64()&0xffffffffffff)
		},
		"hex8":  func() string { return fmt.Sprintf("%08x", r.Uint32()) },
		"hex16": func() string { return fmt.Sprintf("%016x", r.Uint64()) },
		"hex64": func() string {
			return fmt.Sprintf("%016x%016x%016x%016x", r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64())
		},
		"int":   func() string { return fmt.Sprint(r.IntN(100000)) },
		"float": func() string { return fmt.Sprintf("%.2f", r.Float64()*1000) },
		"ms":    func() string { return fmt.Sprintf("%dms", r.IntN(5000)) },
		"time": func() string {
			return fmt.Sprintf("%02d:%02d:%02d.%03d", r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000))
		},
		"ts": func() string {
			return fmt.Sprintf("2025-03-14T%02d:%02d:%02d.%03dZ", r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000))
		},
		"ip":    func() string { return fmt.Sprintf("10.%d.%d.%d", r.IntN(256), r.IntN(256), r.IntN(256)) },
		"word":  func() string { return benchWords[r.IntN(len(benchWords))] },
		"email": func() string { return benchWords[r.IntN(10)] + "@example.com" },
	}
	msgs := make([]string, n)
	for i := range msgs {
		tmpl := benchTemplates[r.IntN(len(benchTemplates))]
		var b strings.Builder
		for tmpl != "" {
			open := strings.IndexByte(tmpl, '{')
			if open < 0 {
				b.WriteString(tmpl)
				break
			}
			end := strings.IndexByte(tmpl[open:], '}')
			if end < 0 {
				b.WriteString(tmpl)
				break
			}
			b.WriteString(tmpl[:open])
			if gen := fill[tmpl[open+1:open+end]]; gen != nil {
				b.WriteString(gen())
				tmpl = tmpl[open+end+1:]
			} else {
				b.WriteByte('{')
				tmpl = tmpl[open+1:]
			}
		}
		msgs[i] = b.String()
	}
	return msgs
}

func benchBytes(msgs []string) int64 {
	n := 0
	for _, m := range msgs {
		n += len(m)
	}
	return int64(n / len(msgs))
}

// BenchmarkAdd mines the mix once its clusters are formed: the steady state.
func BenchmarkAdd(b *testing.B) {
	msgs := benchMessages(1 << 14)
	m, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	for _, msg := range msgs {
		m.Add(msg)
	}
	b.SetBytes(benchBytes(msgs))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m.Add(msgs[i%len(msgs)])
		i++
	}
	b.ReportMetric(float64(m.Len()), "clusters")
}

// BenchmarkAddEvicting mines the mix with room for a fifth of its clusters,
// so that most messages make a cluster and evict one.
func BenchmarkAddEvicting(b *testing.B) {
	msgs := benchMessages(1 << 14)
	m, err := New(Config{MaxClusters: 10})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchBytes(msgs))
	b.ReportAllocs()
	i := 0
	news := 0
	for b.Loop() {
		if _, isNew := m.Add(msgs[i%len(msgs)]); isNew {
			news++
		}
		i++
	}
	b.ReportMetric(float64(news)/float64(i), "new/op")
}

// BenchmarkMask masks the mix.
func BenchmarkMask(b *testing.B) {
	msgs := benchMessages(1 << 14)
	b.SetBytes(benchBytes(msgs))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		Mask(msgs[i%len(msgs)])
		i++
	}
}
