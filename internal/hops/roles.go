package hops

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Roles of services on the path.
const (
	RoleGateway     = "API gateway"
	RoleApplication = "application"
	RoleVector      = "vector search"
	RoleDatabase    = "database"
	RoleInference   = "model inference"
	RoleTool        = "external tool"
	RoleExternal    = "external service"
)

// vectorDatabases are the db.system values of vector databases.
var vectorDatabases = []string{"qdrant", "milvus", "weaviate", "chroma", "chromadb", "pinecone", "pgvector", "lancedb", "vespa", "marqo", "redis-vector"}

// roles gives every service and virtual node of the tree its role.
func (t *tree) roles() map[string]string {
	type facts struct {
		inference, database, vector, tool bool
		internal, forwardsOnly, calls     bool
		virtual                           bool
	}
	by := map[string]*facts{}
	get := func(name string) *facts {
		f, ok := by[name]
		if !ok {
			f = &facts{forwardsOnly: true}
			by[name] = f
		}
		return f
	}
	for i := range t.nodes {
		n := &t.nodes[i]
		attrs := n.span.Attributes()
		node := t.nodeOf(i)
		if db := dbSystem(attrs); db != "" {
			// A client span's database is the service it calls.
			target := node
			if n.kind == ptrace.SpanKindClient && node == n.service {
				target = t.serverOf(i)
			}
			g := get(target)
			g.database = true
			g.vector = g.vector || isVector(db)
		}
		if node != n.service {
			v := get(node)
			v.virtual = true
			if up := n.up; isTool(attrs) || (up >= 0 && isTool(t.nodes[up].span.Attributes())) {
				v.tool = true
			}
		}
		f := get(n.service)
		if n.kind == ptrace.SpanKindServer && (has(attrs, "gen_ai.operation.name") || has(attrs, "gen_ai.request.model")) {
			f.inference = true
		}
		switch n.kind {
		case ptrace.SpanKindInternal, ptrace.SpanKindUnspecified, ptrace.SpanKindProducer, ptrace.SpanKindConsumer:
			f.internal = true
		case ptrace.SpanKindClient:
			f.calls = true
			if t.serverOf(i) == n.service {
				f.forwardsOnly = false
			}
		}
	}
	root := t.nodes[t.root].service
	out := make(map[string]string, len(by))
	for name, f := range by {
		switch {
		case f.inference:
			out[name] = RoleInference
		case f.vector:
			out[name] = RoleVector
		case f.database:
			out[name] = RoleDatabase
		case f.virtual && f.tool:
			out[name] = RoleTool
		case f.virtual:
			out[name] = RoleExternal
		case name == root && f.calls && f.forwardsOnly && !f.internal:
			out[name] = RoleGateway
		default:
			out[name] = RoleApplication
		}
	}
	return out
}

// serverOf is the service of the first server span under client span i,
// or i's own service when there is none.
func (t *tree) serverOf(i int) string {
	n := &t.nodes[i]
	for _, k := range n.kids {
		c := &t.nodes[k]
		if (c.kind == ptrace.SpanKindServer || c.kind == ptrace.SpanKindConsumer) && c.service != n.service {
			return c.service
		}
	}
	return n.service
}

func has(attrs pcommon.Map, key string) bool {
	_, ok := attrs.Get(key)
	return ok
}

// dbSystem is db.system.name, else db.system, lower-cased.
func dbSystem(attrs pcommon.Map) string {
	for _, k := range []string{"db.system.name", "db.system"} {
		if v, ok := attrs.Get(k); ok && v.AsString() != "" {
			return strings.ToLower(v.AsString())
		}
	}
	return ""
}

func isVector(db string) bool {
	for _, v := range vectorDatabases {
		if db == v {
			return true
		}
	}
	return false
}

// isTool tells a GenAI tool execution span.
func isTool(attrs pcommon.Map) bool {
	if has(attrs, "gen_ai.tool.name") {
		return true
	}
	v, ok := attrs.Get("gen_ai.operation.name")
	return ok && v.AsString() == "execute_tool"
}
