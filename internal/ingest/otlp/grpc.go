package otlp

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"

	"github.com/vigil-obs/vigil/internal/admission"
)

// The gRPC services are registered with descriptors of their own rather
// than pdata's RegisterGRPCServer: pdata decodes a request inside gRPC,
// where a malformed one becomes codes.Internal and a deeply nested one
// recurses without a bound before the receiver can look at it. Here the
// handler gets the message's bytes, checks them, and decodes them with the
// same pdata request types; the wire format is the same.

// grpcServices are the OTLP services and their descriptors' metadata, by
// signal name.
var grpcServices = map[string]struct{ service, file string }{
	"traces":  {"opentelemetry.proto.collector.trace.v1.TraceService", "opentelemetry/proto/collector/trace/v1/trace_service.proto"},
	"metrics": {"opentelemetry.proto.collector.metrics.v1.MetricsService", "opentelemetry/proto/collector/metrics/v1/metrics_service.proto"},
	"logs":    {"opentelemetry.proto.collector.logs.v1.LogsService", "opentelemetry/proto/collector/logs/v1/logs_service.proto"},
}

// newGRPCServer returns a gRPC server of the OTLP services of sigs.
func (r *Receiver) newGRPCServer(sigs []*signal) *grpc.Server {
	opts := []grpc.ServerOption{
		grpc.ForceServerCodecV2(rawCodec{fallback: encoding.GetCodecV2("proto")}),
		grpc.MaxRecvMsgSize(int(r.opts.MaxDecompressedBytes)),
	}
	if r.opts.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(r.opts.TLS)))
	}
	if r.checksRequests() {
		opts = append(opts, grpc.UnaryInterceptor(r.unaryAuth))
	}
	s := grpc.NewServer(opts...)
	for _, sig := range sigs {
		svc := grpcServices[sig.name]
		s.RegisterService(&grpc.ServiceDesc{
			ServiceName: svc.service,
			HandlerType: (*any)(nil),
			Methods:     []grpc.MethodDesc{{MethodName: "Export", Handler: r.grpcExport(sig, "/"+svc.service+"/Export")}},
			Metadata:    svc.file,
		}, struct{}{})
	}
	return s
}

// grpcExport returns the gRPC method handler of sig's Export.
func (r *Receiver) grpcExport(sig *signal, method string) grpc.MethodHandler {
	handle := func(ctx context.Context, req any) (any, error) {
		start := time.Now()
		client := admission.ClientOfContext(ctx)
		if err := r.opts.Gate.Within(ctx, client, admission.IngestWait); err != nil {
			o := gateRefusal(err)
			r.observe(transportGRPC, sig, o, time.Since(start))
			return nil, o.grpcStatus().Err()
		}
		defer r.opts.Gate.Release(client)
		if !r.acquire() {
			o := r.tooManyRequests()
			r.observe(transportGRPC, sig, o, time.Since(start))
			return nil, o.grpcStatus().Err()
		}
		body := req.(*rawMessage).bytes()
		ticket, refused := r.opts.Budget.Acquire(client, "otlp", int64(len(body))*admission.ExpansionOTLPProto)
		if refused != nil {
			r.release()
			o := budgetRefusal(refused)
			r.observe(transportGRPC, sig, o, time.Since(start))
			return nil, o.grpcStatus().Err()
		}
		o := sig.export(ctx, body, formatProto)
		ticket.Release()
		r.release()
		r.observe(transportGRPC, sig, o, time.Since(start))
		if o.code != codes.OK {
			return nil, o.grpcStatus().Err()
		}
		b, err := sig.response(o).MarshalProto()
		if err != nil {
			return nil, err
		}
		return &rawMessage{b: b}, nil
	}
	return func(_ any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := &rawMessage{}
		if err := dec(in); err != nil {
			return nil, err
		}
		defer in.free()
		if interceptor == nil {
			return handle(ctx, in)
		}
		return interceptor(ctx, in, &grpc.UnaryServerInfo{FullMethod: method}, handle)
	}
}

// rawMessage is a gRPC message as bytes: a request as received, or a
// response as marshalled.
type rawMessage struct {
	buf mem.Buffer
	b   []byte
}

func (m *rawMessage) bytes() []byte {
	if m.buf != nil {
		return m.buf.ReadOnlyData()
	}
	return m.b
}

// free returns a received message's buffer to its pool: pdata copies
// what it decodes.
func (m *rawMessage) free() {
	if m.buf != nil {
		m.buf.Free()
		m.buf = nil
	}
}

// rawCodec passes rawMessages through as bytes and everything else to the
// proto codec.
type rawCodec struct{ fallback encoding.CodecV2 }

func (c rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(*rawMessage); ok {
		return mem.BufferSlice{mem.SliceBuffer(m.b)}, nil
	}
	return c.fallback.Marshal(v)
}

func (c rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if m, ok := v.(*rawMessage); ok {
		m.buf = data.MaterializeToBuffer(mem.DefaultBufferPool())
		return nil
	}
	return c.fallback.Unmarshal(data, v)
}

func (rawCodec) Name() string { return "proto" }
