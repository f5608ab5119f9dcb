package forward

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/vigil-obs/vigil/internal/buildinfo"
)

// grpcExporter sends OTLP/gRPC with pdata's clients.
type grpcExporter struct {
	conn     *grpc.ClientConn
	traces   ptraceotlp.GRPCClient
	logs     plogotlp.GRPCClient
	md       metadata.MD
	callOpts []grpc.CallOption
	// auth returns the Authorization value of one export ("" none).
	auth func() (string, error)
}

func newGRPCExporter(ep *endpoint, headers [][2]string, gz bool, tc *tls.Config, auth func() (string, error)) (*grpcExporter, error) {
	creds := insecure.NewCredentials()
	if ep.tls {
		if tc == nil {
			tc = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		creds = credentials.NewTLS(tc)
	}
	conn, err := grpc.NewClient(ep.target,
		grpc.WithTransportCredentials(creds),
		grpc.WithUserAgent("vigil/"+buildinfo.Version))
	if err != nil {
		return nil, fmt.Errorf("gRPC client: %w", err)
	}
	md := metadata.MD{}
	for _, kv := range headers {
		md.Append(strings.ToLower(kv[0]), kv[1])
	}
	if ep.hasAuth {
		md.Set("authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(ep.user+":"+ep.password)))
	}
	e := &grpcExporter{conn: conn, traces: ptraceotlp.NewGRPCClient(conn), logs: plogotlp.NewGRPCClient(conn), md: md, auth: auth}
	if gz {
		e.callOpts = append(e.callOpts, grpc.UseCompressor(gzip.Name))
	}
	return e, nil
}

func (e *grpcExporter) export(ctx context.Context, b *batch) (int64, string, error) {
	md := e.md
	if e.auth != nil {
		v, err := e.auth()
		if err != nil {
			return 0, "", &exportError{retryable: true, status: "credentials", err: err}
		}
		if v != "" {
			md = md.Copy()
			md.Set("authorization", v)
		}
	}
	if len(md) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	if b.signal == SignalTraces {
		resp, err := e.traces.Export(ctx, ptraceotlp.NewExportRequestFromTraces(b.traces), e.callOpts...)
		if err != nil {
			return 0, "", grpcError(err)
		}
		return resp.PartialSuccess().RejectedSpans(), resp.PartialSuccess().ErrorMessage(), nil
	}
	resp, err := e.logs.Export(ctx, plogotlp.NewExportRequestFromLogs(b.logs), e.callOpts...)
	if err != nil {
		return 0, "", grpcError(err)
	}
	return resp.PartialSuccess().RejectedLogRecords(), resp.PartialSuccess().ErrorMessage(), nil
}

// grpcError classifies a failed call as the OTLP specification says:
// Unavailable, DeadlineExceeded, Aborted, OutOfRange, DataLoss and
// Canceled are retryable, ResourceExhausted only with a RetryInfo; the
// RetryInfo's delay is honoured.
func grpcError(err error) error {
	st, _ := status.FromError(err)
	ee := &exportError{status: "gRPC " + st.Code().String(), err: fmt.Errorf("%s", truncate(st.Message(), 200))}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			ee.after = max(ri.GetRetryDelay().AsDuration(), 0)
			if st.Code() == codes.ResourceExhausted {
				ee.retryable = true
			}
		}
	}
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange, codes.DataLoss, codes.Canceled:
		ee.retryable = true
	}
	return ee
}

func (e *grpcExporter) close() error { return e.conn.Close() }
