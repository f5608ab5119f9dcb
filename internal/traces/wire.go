package traces

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"google.golang.org/protobuf/encoding/protowire"
)

// OTLP's traces and logs share one shape on the wire: field 1 of the
// request is a repeated ResourceSpans (ResourceLogs) whose field 1 is the
// resource, 2 a repeated ScopeSpans (ScopeLogs) and 3 the schema URL; in a
// ScopeSpans field 1 is the scope, 2 a repeated span (log record) and 3 the
// schema URL. The store marshals a request once, cuts out each span's bytes
// and keeps the resource and scope once per partition, so a trace is read
// back by gluing the bytes together and unmarshalling once.

const (
	fieldResource = 1 // in ResourceSpans, and the scope in ScopeSpans
	fieldChildren = 2 // ScopeSpans in ResourceSpans, spans in ScopeSpans
	fieldSchema   = 3
	fieldTop      = 1 // ResourceSpans in the request
)

// wireScope is one ScopeSpans (ScopeLogs) with its resource, on the wire.
type wireScope struct {
	resource, resourceSchema []byte
	scope, scopeSchema       []byte
	items                    [][]byte
}

// wireResource is one ResourceSpans (ResourceLogs).
type wireResource struct {
	scopes []wireScope
}

// parseWire cuts a marshalled request into its resources, scopes and items.
func parseWire(b []byte) ([]wireResource, error) {
	var out []wireResource
	err := eachField(b, func(num protowire.Number, v []byte) error {
		if num != fieldTop {
			return nil
		}
		r, err := parseResource(v)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

func parseResource(b []byte) (wireResource, error) {
	var res, schema []byte
	var scopes []wireScope
	err := eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case fieldResource:
			res = v
		case fieldSchema:
			schema = v
		case fieldChildren:
			var sc wireScope
			err := eachField(v, func(num protowire.Number, v []byte) error {
				switch num {
				case fieldResource:
					sc.scope = v
				case fieldSchema:
					sc.scopeSchema = v
				case fieldChildren:
					sc.items = append(sc.items, v)
				}
				return nil
			})
			if err != nil {
				return err
			}
			scopes = append(scopes, sc)
		}
		return nil
	})
	for i := range scopes {
		scopes[i].resource, scopes[i].resourceSchema = res, schema
	}
	return wireResource{scopes: scopes}, err
}

// eachField calls fn with the number and bytes of each length-delimited
// field of the message b, skipping the others.
func eachField(b []byte, fn func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("read protobuf tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("skip protobuf field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return fmt.Errorf("read protobuf field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(num, v); err != nil {
			return err
		}
	}
	return nil
}

// resourceRecord encodes a scope with its resource: four length-prefixed
// byte strings.
func resourceRecord(sc *wireScope) []byte {
	n := len(sc.resource) + len(sc.resourceSchema) + len(sc.scope) + len(sc.scopeSchema) + 4*binary.MaxVarintLen32
	b := make([]byte, 0, n)
	for _, part := range [][]byte{sc.resource, sc.resourceSchema, sc.scope, sc.scopeSchema} {
		b = protowire.AppendBytes(b, part)
	}
	return b
}

// resourceHash names a resource record.
func resourceHash(rec []byte) uint64 { return xxhash.Sum64(rec) }

// decodeResourceRecord reverses resourceRecord; the slices alias b.
func decodeResourceRecord(b []byte) (wireScope, error) {
	var parts [4][]byte
	for i := range parts {
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return wireScope{}, errors.New("decode resource record: truncated")
		}
		parts[i], b = v, b[n:]
	}
	return wireScope{resource: parts[0], resourceSchema: parts[1], scope: parts[2], scopeSchema: parts[3]}, nil
}

// appendRequest appends a request holding each scope (with its resource) as
// a ResourceSpans (ResourceLogs) of its own.
func appendRequest(dst []byte, scopes []wireScope) []byte {
	for i := range scopes {
		sc := &scopes[i]
		var ss []byte
		ss = protowire.AppendTag(ss, fieldResource, protowire.BytesType)
		ss = protowire.AppendBytes(ss, sc.scope)
		for _, it := range sc.items {
			ss = protowire.AppendTag(ss, fieldChildren, protowire.BytesType)
			ss = protowire.AppendBytes(ss, it)
		}
		if len(sc.scopeSchema) > 0 {
			ss = protowire.AppendTag(ss, fieldSchema, protowire.BytesType)
			ss = protowire.AppendBytes(ss, sc.scopeSchema)
		}
		var rs []byte
		rs = protowire.AppendTag(rs, fieldResource, protowire.BytesType)
		rs = protowire.AppendBytes(rs, sc.resource)
		rs = protowire.AppendTag(rs, fieldChildren, protowire.BytesType)
		rs = protowire.AppendBytes(rs, ss)
		if len(sc.resourceSchema) > 0 {
			rs = protowire.AppendTag(rs, fieldSchema, protowire.BytesType)
			rs = protowire.AppendBytes(rs, sc.resourceSchema)
		}
		dst = protowire.AppendTag(dst, fieldTop, protowire.BytesType)
		dst = protowire.AppendBytes(dst, rs)
	}
	return dst
}
