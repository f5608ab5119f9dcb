package microsvc

const mib = 1 << 20

// svcDef is one service of an application: its container's resources and
// how it serves a request.
type svcDef struct {
	name string
	// cpuBase is the idle CPU in cores, cpuCost the CPU per request in
	// core-seconds, cpuLimit the container's limit in cores.
	cpuBase, cpuCost, cpuLimit float64
	// memBase is the working set right after a garbage collection, gcAmp
	// what the heap grows by before the next one (at the nominal request
	// rate every gcPeriod seconds), memLimit the container's limit; bytes.
	memBase, gcAmp, gcPeriod, memLimit float64
	// svcTime is the service's own time per request at low load and
	// sigma the shape of its log-normal latency, seconds.
	svcTime, sigma float64
	// errFrac is the share of requests that fail when all is well.
	errFrac float64
	// reqBytes and respBytes are the bytes received and sent per request.
	reqBytes, respBytes float64
	// port is the HTTP port Prometheus scrapes.
	port int
	// store: a database or a message broker, which serves no HTTP and
	// exports no request metrics of its own unless an exporter is added
	// (see Config.Uninstrumented).
	store bool
}

// edge is a call: every request of from makes calls requests to to;
// async calls (a queue's consumer) add load but not latency.
type edge struct {
	from, to string
	calls    float64
	async    bool
}

// appDef is an application: its services (the entry first), its call
// graph and its load generator (users with a think time in seconds, a
// closed loop: slower answers mean fewer requests).
type appDef struct {
	name     string
	services []svcDef
	edges    []edge
	users    float64
	think    float64
}

// lookupApp returns the named application, or nil.
func lookupApp(name string) *appDef {
	switch name {
	case AppSockShop:
		return sockShop()
	case AppOnlineBoutique:
		return onlineBoutique()
	}
	return nil
}

// profile makes a service from its resources (cores, MiB, seconds,
// milliseconds) with the usual latency shape, error share and payloads.
func profile(name string, cpuBase, cpuCost, cpuLimit, memMiB, gcMiB, gcPeriod, limitMiB, svcMS float64, port int) svcDef {
	return svcDef{
		name: name, cpuBase: cpuBase, cpuCost: cpuCost, cpuLimit: cpuLimit,
		memBase: memMiB * mib, gcAmp: gcMiB * mib, gcPeriod: gcPeriod, memLimit: limitMiB * mib,
		svcTime: svcMS / 1000, sigma: 0.45, errFrac: 0.001,
		reqBytes: 600, respBytes: 2400, port: port,
	}
}

// storeOf marks a service as a database or message broker.
func storeOf(d svcDef) svcDef {
	d.store = true
	return d
}

// sockShop is Weaveworks' Sock Shop: a Node.js front-end, Java (Spring
// Boot) orders, carts, shipping and queue-master, Go catalogue, user and
// payment, MongoDB and MySQL databases and RabbitMQ.
func sockShop() *appDef {
	return &appDef{
		name: AppSockShop,
		services: []svcDef{
			profile("front-end", 0.02, 0.0015, 1, 90, 25, 90, 1024, 8, 8079),
			profile("orders", 0.012, 0.008, 0.5, 360, 60, 240, 4096, 15, 80),
			storeOf(profile("orders-db", 0.008, 0.0008, 1, 110, 6, 300, 1024, 2, 27017)),
			profile("carts", 0.012, 0.004, 0.5, 380, 70, 180, 4096, 6, 80),
			storeOf(profile("carts-db", 0.008, 0.0005, 1, 120, 6, 300, 1024, 1.5, 27017)),
			profile("catalogue", 0.003, 0.0008, 0.2, 14, 5, 60, 256, 4, 80),
			storeOf(profile("catalogue-db", 0.01, 0.0006, 1, 210, 8, 400, 2048, 2, 3306)),
			profile("user", 0.003, 0.0009, 0.3, 12, 4, 60, 256, 4, 80),
			storeOf(profile("user-db", 0.008, 0.0005, 1, 100, 6, 300, 1024, 1.5, 27017)),
			profile("payment", 0.002, 0.0006, 0.2, 9, 2, 120, 128, 3, 80),
			profile("shipping", 0.008, 0.006, 0.5, 340, 40, 300, 4096, 6, 80),
			profile("queue-master", 0.008, 0.005, 0.3, 330, 40, 300, 4096, 10, 80),
			storeOf(profile("rabbitmq", 0.015, 0.001, 1, 120, 10, 200, 1024, 2, 5672)),
		},
		edges: []edge{
			{"front-end", "catalogue", 0.6, false},
			{"front-end", "carts", 0.35, false},
			{"front-end", "user", 0.2, false},
			{"front-end", "orders", 0.05, false},
			{"orders", "carts", 1, false},
			{"orders", "user", 3, false},
			{"orders", "payment", 1, false},
			{"orders", "shipping", 1, false},
			{"orders", "orders-db", 2, false},
			{"shipping", "rabbitmq", 1, false},
			{"rabbitmq", "queue-master", 1, true},
			{"carts", "carts-db", 1.5, false},
			{"catalogue", "catalogue-db", 1, false},
			{"user", "user-db", 1, false},
		},
		users: 40,
		think: 1,
	}
}

// onlineBoutique is Google's Online Boutique without its load generator:
// Go frontend, checkout, product catalogue and shipping, C# cart, Node.js
// currency and payment, Python email and recommendation, Java ads, Redis.
func onlineBoutique() *appDef {
	return &appDef{
		name: AppOnlineBoutique,
		services: []svcDef{
			profile("frontend", 0.015, 0.002, 0.5, 40, 12, 60, 512, 6, 8080),
			profile("cartservice", 0.01, 0.0012, 0.3, 70, 15, 120, 1024, 3, 7070),
			profile("productcatalogservice", 0.004, 0.0004, 0.2, 18, 6, 60, 256, 1.5, 3550),
			profile("currencyservice", 0.006, 0.0005, 0.2, 60, 12, 90, 512, 1, 7000),
			profile("paymentservice", 0.004, 0.001, 0.2, 50, 8, 150, 512, 2, 50051),
			profile("shippingservice", 0.003, 0.0006, 0.2, 12, 3, 90, 256, 1.5, 50051),
			profile("emailservice", 0.008, 0.003, 0.2, 65, 6, 200, 512, 5, 8080),
			profile("checkoutservice", 0.004, 0.002, 0.2, 16, 5, 120, 256, 4, 5050),
			profile("recommendationservice", 0.01, 0.003, 0.2, 70, 8, 120, 512, 4, 8080),
			profile("adservice", 0.015, 0.002, 0.3, 220, 40, 180, 2048, 3, 9555),
			storeOf(profile("redis-cart", 0.006, 0.0002, 0.125, 12, 2, 300, 256, 0.5, 6379)),
		},
		edges: []edge{
			{"frontend", "currencyservice", 3, false},
			{"frontend", "productcatalogservice", 2, false},
			{"frontend", "cartservice", 0.8, false},
			{"frontend", "recommendationservice", 0.4, false},
			{"frontend", "adservice", 0.4, false},
			{"frontend", "shippingservice", 0.2, false},
			{"frontend", "checkoutservice", 0.05, false},
			{"checkoutservice", "cartservice", 2, false},
			{"checkoutservice", "currencyservice", 3, false},
			{"checkoutservice", "productcatalogservice", 2, false},
			{"checkoutservice", "shippingservice", 2, false},
			{"checkoutservice", "paymentservice", 1, false},
			{"checkoutservice", "emailservice", 1, false},
			{"recommendationservice", "productcatalogservice", 1, false},
			{"cartservice", "redis-cart", 1, false},
		},
		users: 30,
		think: 1,
	}
}
