package otlp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// AuthConfig is otlp.auth in vigil.yaml: the credentials the receiver
// asks of its clients, in the form of the OpenTelemetry Collector's auth
// extensions, so that a Collector's exporter settings work unchanged. With
// both set, either kind of credential lets a request in; with neither, no
// credential is asked for.
type AuthConfig struct {
	// BearerToken takes the bearertokenauth extension's settings.
	BearerToken *BearerTokenConfig `yaml:"bearertokenauth"`
	// Basic takes the basicauth extension's server settings.
	Basic *BasicAuthConfig `yaml:"basicauth"`
}

// BearerTokenConfig is the bearertokenauth extension's settings: a
// request carries "<scheme> <token>" in its header.
type BearerTokenConfig struct {
	// Header is the header (gRPC metadata key) that carries the token;
	// default Authorization.
	Header string `yaml:"header"`
	// Scheme precedes the token in the header; default "Bearer". Empty
	// (scheme: "") takes the bare token.
	Scheme *string `yaml:"scheme"`
	// Token is one token.
	Token commoncfg.Secret `yaml:"token"`
	// Tokens are more tokens, any of which is accepted.
	Tokens []commoncfg.Secret `yaml:"tokens"`
	// Filename is a file of tokens, one a line (blank lines and lines
	// starting with # are skipped), read at start.
	Filename string `yaml:"filename"`
}

// BasicAuthConfig is the basicauth extension's server settings.
type BasicAuthConfig struct {
	// Htpasswd holds the users and their bcrypt hashes.
	Htpasswd HtpasswdConfig `yaml:"htpasswd"`
}

// HtpasswdConfig is an htpasswd file, inline or on disk (both: the users
// of both).
type HtpasswdConfig struct {
	// File is the path of an htpasswd file (htpasswd -B), read at start.
	File string `yaml:"file"`
	// Inline is the content of one.
	Inline commoncfg.Secret `yaml:"inline"`
}

// Enabled reports whether the receiver asks for credentials.
func (c AuthConfig) Enabled() bool { return c.BearerToken != nil || c.Basic != nil }

// UnmarshalYAML reads the section strictly: an unknown field (a typo of
// "tokens", say) is an error rather than an open receiver.
func (c *AuthConfig) UnmarshalYAML(n *yaml.Node) error {
	type plain AuthConfig
	return strictDecode(n, (*plain)(c))
}

// strictDecode decodes n into v, refusing fields v does not have.
func strictDecode(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		msg := strings.TrimPrefix(strings.ReplaceAll(err.Error(), "yaml: unmarshal errors:\n  ", ""), "yaml: ")
		// The lines are the section's, not the file's: leave them out.
		msg = unknownFieldRE.ReplaceAllString(msg, "unknown field $1")
		msg = lineRE.ReplaceAllString(msg, "")
		return errors.New(strings.Join(strings.Fields(msg), " "))
	}
	return nil
}

var (
	unknownFieldRE = regexp.MustCompile(`field (\S+) not found in type \S+`)
	lineRE         = regexp.MustCompile(`line \d+: `)
)

// Validate reports the first invalid setting without reading the files
// the settings name (they may exist only where the server runs, as in a
// Kubernetes Secret): NewAuthenticator reads them, at start.
func (c AuthConfig) Validate() error {
	if bt := c.BearerToken; bt != nil {
		if bt.Token == "" && len(bt.Tokens) == 0 && bt.Filename == "" {
			return errors.New("bearertokenauth: set token, tokens or filename")
		}
		for i, t := range bt.Tokens {
			if strings.TrimSpace(string(t)) == "" {
				return fmt.Errorf("bearertokenauth.tokens[%d]: empty token", i)
			}
		}
	}
	if ba := c.Basic; ba != nil {
		if ba.Htpasswd.File == "" && ba.Htpasswd.Inline == "" {
			return errors.New("basicauth.htpasswd: set file or inline, with at least one user")
		}
		if ba.Htpasswd.Inline != "" {
			if _, err := ParseHtpasswd([]byte(ba.Htpasswd.Inline)); err != nil {
				return fmt.Errorf("basicauth.htpasswd.inline: %w", err)
			}
		}
	}
	return nil
}

// Authenticator checks the credentials of requests against AuthConfig.
// It is safe for concurrent use. The token and htpasswd files are read
// again when they change (looked at once a second at most, when a
// request comes), as the Collector's extensions watch theirs: a rotated
// token or a new user needs no restart. A changed file that does not
// parse leaves the credentials as they were.
type Authenticator struct {
	cfg    AuthConfig
	header string
	scheme string
	creds  atomic.Pointer[credSet]
	// basic is set when basic auth is on.
	basic bool

	// reload looks at the files at most once every reloadEvery.
	reloadMu  sync.Mutex
	nextCheck time.Time
	stamps    map[string]fileStamp
	now       func() time.Time

	// bcrypt is slow by design: one comparison at a time, and the
	// successful ones remembered (by a hash of the user, the password and
	// the stored hash), as exporter-toolkit does.
	bcryptMu sync.Mutex
	mu       sync.Mutex
	good     map[[sha256.Size]byte]struct{}
}

// credSet is the accepted tokens and users at one time.
type credSet struct {
	// tokens are the accepted bearer tokens, in the order of the
	// settings: token, tokens, then the file's lines.
	tokens [][]byte
	users  map[string][]byte
}

// fileStamp tells a changed file.
type fileStamp struct {
	mod  time.Time
	size int64
}

// reloadEvery is how often the files are looked at.
const reloadEvery = time.Second

// maxGoodCache bounds the remembered successful basic-auth checks.
const maxGoodCache = 1024

// NewAuthenticator reads the tokens and the htpasswd users of c; nil when
// c asks for no credentials.
func NewAuthenticator(c AuthConfig) (*Authenticator, error) {
	if !c.Enabled() {
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	a := &Authenticator{cfg: c, header: "authorization", basic: c.Basic != nil, now: time.Now, good: map[[sha256.Size]byte]struct{}{}}
	if bt := c.BearerToken; bt != nil {
		if bt.Header != "" {
			a.header = strings.ToLower(strings.TrimSpace(bt.Header))
		}
		a.scheme = "Bearer"
		if bt.Scheme != nil {
			a.scheme = strings.TrimSpace(*bt.Scheme)
		}
	}
	a.stamps = a.stampFiles()
	creds, err := a.load()
	if err != nil {
		return nil, err
	}
	a.creds.Store(creds)
	a.nextCheck = a.now().Add(reloadEvery)
	return a, nil
}

// files are the token and htpasswd files of the settings.
func (a *Authenticator) files() []string {
	var out []string
	if bt := a.cfg.BearerToken; bt != nil && bt.Filename != "" {
		out = append(out, bt.Filename)
	}
	if ba := a.cfg.Basic; ba != nil && ba.Htpasswd.File != "" {
		out = append(out, ba.Htpasswd.File)
	}
	return out
}

// stampFiles returns the modification time and size of each file.
func (a *Authenticator) stampFiles() map[string]fileStamp {
	out := map[string]fileStamp{}
	for _, f := range a.files() {
		if fi, err := os.Stat(f); err == nil {
			out[f] = fileStamp{fi.ModTime(), fi.Size()}
		}
	}
	return out
}

// maybeReload reads the files again when one changed since the last
// look, at most once every reloadEvery; a request that finds another
// looking goes on with what is loaded.
func (a *Authenticator) maybeReload() {
	if len(a.files()) == 0 || !a.reloadMu.TryLock() {
		return
	}
	defer a.reloadMu.Unlock()
	now := a.now()
	if now.Before(a.nextCheck) {
		return
	}
	a.nextCheck = now.Add(reloadEvery)
	stamps := a.stampFiles()
	if maps.Equal(stamps, a.stamps) {
		return
	}
	creds, err := a.load()
	if err != nil {
		return // kept as they were; looked at again next time
	}
	a.creds.Store(creds)
	a.stamps = stamps
}

// load reads the tokens and users of the settings and their files.
func (a *Authenticator) load() (*credSet, error) {
	c := a.cfg
	out := &credSet{}
	if bt := c.BearerToken; bt != nil {
		if bt.Token != "" {
			out.tokens = append(out.tokens, []byte(bt.Token))
		}
		for _, t := range bt.Tokens {
			out.tokens = append(out.tokens, []byte(t))
		}
		if bt.Filename != "" {
			b, err := readSmall(bt.Filename)
			if err != nil {
				return nil, fmt.Errorf("bearertokenauth.filename: read tokens: %w", err)
			}
			toks := ParseTokens(b)
			if len(toks) == 0 {
				return nil, fmt.Errorf("bearertokenauth.filename: %s holds no token", bt.Filename)
			}
			for _, t := range toks {
				out.tokens = append(out.tokens, []byte(t))
			}
		}
	}
	if ba := c.Basic; ba != nil {
		out.users = map[string][]byte{}
		if ba.Htpasswd.File != "" {
			b, err := readSmall(ba.Htpasswd.File)
			if err != nil {
				return nil, fmt.Errorf("basicauth.htpasswd.file: read: %w", err)
			}
			users, err := ParseHtpasswd(b)
			if err != nil {
				return nil, fmt.Errorf("basicauth.htpasswd.file: %s: %w", ba.Htpasswd.File, err)
			}
			maps.Copy(out.users, users)
		}
		if ba.Htpasswd.Inline != "" {
			users, err := ParseHtpasswd([]byte(ba.Htpasswd.Inline))
			if err != nil {
				return nil, fmt.Errorf("basicauth.htpasswd.inline: %w", err)
			}
			for u, h := range users {
				if _, dup := out.users[u]; dup {
					return nil, fmt.Errorf("basicauth.htpasswd: user %q is in both file and inline", u)
				}
				out.users[u] = h
			}
		}
		if len(out.users) == 0 {
			return nil, errors.New("basicauth.htpasswd: set file or inline, with at least one user")
		}
	}
	return out, nil
}

// maxAuthFile bounds the token and htpasswd files.
const maxAuthFile = 4 << 20

// readSmall reads a token or htpasswd file of at most maxAuthFile bytes
// (not /dev/zero to the end).
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAuthFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxAuthFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxAuthFile)
	}
	return b, nil
}

// ParseTokens reads a token file: one token a line, surrounding blanks
// trimmed, blank lines and lines starting with # skipped.
func ParseTokens(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out
}

// ParseHtpasswd reads an htpasswd file of bcrypt hashes (htpasswd -B):
// "user:$2y$..." lines; blank lines and lines starting with # are
// skipped. Another hash kind (MD5, SHA-1, crypt, plain text) is an error
// naming its line, never a password accepted as written. The error never
// quotes a hash.
func ParseHtpasswd(b []byte) (map[string][]byte, error) {
	users := map[string][]byte{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n := i + 1
		user, hash, ok := strings.Cut(line, ":")
		switch {
		case !ok:
			return nil, fmt.Errorf("line %d: not user:hash", n)
		case user == "":
			return nil, fmt.Errorf("line %d: empty user name", n)
		case strings.ContainsAny(user, " \t"):
			return nil, fmt.Errorf("line %d: the user name has a blank", n)
		}
		if _, dup := users[user]; dup {
			return nil, fmt.Errorf("line %d: user %q appears twice", n, user)
		}
		if !isBcrypt(hash) {
			return nil, fmt.Errorf("line %d: user %q: not a bcrypt hash (make one with htpasswd -nB USER)", n, user)
		}
		users[user] = []byte(hash)
	}
	return users, nil
}

// isBcrypt reports whether hash is a bcrypt hash: $2a$, $2b$ or $2y$,
// a cost, 60 bytes.
func isBcrypt(hash string) bool {
	if len(hash) != 60 || !(strings.HasPrefix(hash, "$2a$") || strings.HasPrefix(hash, "$2b$") || strings.HasPrefix(hash, "$2y$")) {
		return false
	}
	_, err := bcrypt.Cost([]byte(hash))
	return err == nil
}

// ErrUnauthenticated is what Authenticate returns for missing or wrong
// credentials.
var ErrUnauthenticated = errors.New("unauthenticated")

// fakeHash is compared against for an unknown user, so that the answer
// takes as long as for a known one (exporter-toolkit's: "fakepassword").
var fakeHash = []byte("$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi")

// Authenticate checks the credentials in md (lower-case keys, as gRPC
// metadata; HTTP headers lower-cased) and returns the identity: the
// user's name for basic auth, "token-<i>" for the i-th bearer token (0
// based, in the order token, tokens, the file's lines). Missing or wrong
// credentials give an error wrapping ErrUnauthenticated; its message
// never quotes the credential.
func (a *Authenticator) Authenticate(md map[string][]string) (string, error) {
	a.maybeReload()
	creds := a.creds.Load()
	if len(creds.tokens) > 0 {
		if v := first(md, a.header); v != "" {
			if id, ok := a.bearer(creds, v); ok {
				return id, nil
			}
			if !a.basic || a.header != "authorization" || !hasScheme(v, "Basic") {
				return "", fmt.Errorf("%w: the bearer token is not accepted", ErrUnauthenticated)
			}
		}
	}
	if a.basic {
		v := first(md, "authorization")
		if v == "" {
			return "", fmt.Errorf("%w: no credentials", ErrUnauthenticated)
		}
		user, pass, ok := parseBasic(v)
		if !ok {
			return "", fmt.Errorf("%w: the Authorization header is not basic auth", ErrUnauthenticated)
		}
		if a.checkPassword(creds, user, pass) {
			return user, nil
		}
		return "", fmt.Errorf("%w: wrong user name or password", ErrUnauthenticated)
	}
	return "", fmt.Errorf("%w: no bearer token", ErrUnauthenticated)
}

// bearer checks "<scheme> <token>" against every token, in constant time
// for each.
func (a *Authenticator) bearer(creds *credSet, v string) (string, bool) {
	tok := v
	if a.scheme != "" {
		if !hasScheme(v, a.scheme) {
			return "", false
		}
		tok = strings.TrimSpace(v[len(a.scheme)+1:])
	}
	found := -1
	for i, t := range creds.tokens {
		if subtle.ConstantTimeCompare([]byte(tok), t) == 1 && found < 0 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return "token-" + strconv.Itoa(found), true
}

func (a *Authenticator) checkPassword(creds *credSet, user, pass string) bool {
	hash, known := creds.users[user]
	if !known {
		hash = fakeHash
	}
	h := sha256.New()
	for _, s := range []string{user, pass, string(hash)} {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{0})
		h.Write([]byte(s))
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	a.mu.Lock()
	_, ok := a.good[key]
	a.mu.Unlock()
	if ok {
		return known
	}
	a.bcryptMu.Lock()
	err := bcrypt.CompareHashAndPassword(hash, []byte(pass))
	a.bcryptMu.Unlock()
	if err != nil || !known {
		return false
	}
	a.mu.Lock()
	if len(a.good) >= maxGoodCache {
		clear(a.good)
	}
	a.good[key] = struct{}{}
	a.mu.Unlock()
	return true
}

// hasScheme reports whether v starts with scheme and a blank, the scheme
// compared without case (RFC 9110).
func hasScheme(v, scheme string) bool {
	return len(v) > len(scheme) && strings.EqualFold(v[:len(scheme)], scheme) && (v[len(scheme)] == ' ' || v[len(scheme)] == '\t')
}

func parseBasic(v string) (user, pass string, ok bool) {
	if !hasScheme(v, "Basic") {
		return "", "", false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v[len("Basic "):]))
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(b), ":")
}

func first(md map[string][]string, key string) string {
	if vs := md[key]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

type identityKey struct{}

// Identity returns the identity a request was authenticated as: the
// basic-auth user name, or "token-<i>" for a bearer token (see
// Authenticator.Authenticate). ok is false when the receiver asks for no
// credentials.
func Identity(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(identityKey{}).(string)
	return id, ok
}

// WithIdentity returns ctx carrying the authenticated identity id, as the
// receiver sets it (for tests of code that reads Identity).
func WithIdentity(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// reasonUnauthenticated labels the requests refused for their
// credentials, or by OnRequest.
const reasonUnauthenticated = "unauthenticated"

// authorize checks a request's credentials and runs OnRequest; it
// returns the context the consumers get.
func (r *Receiver) authorize(ctx context.Context, md map[string][]string) (context.Context, outcome, bool) {
	if a := r.opts.Auth; a != nil {
		id, err := a.Authenticate(md)
		if err != nil {
			return ctx, refuse(codes.Unauthenticated, reasonUnauthenticated, err.Error()), false
		}
		ctx = WithIdentity(ctx, id)
	}
	if r.opts.OnRequest != nil {
		next, err := r.opts.OnRequest(ctx, md)
		if err != nil {
			code := codes.Unauthenticated
			if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown && st.Code() != codes.OK {
				code = st.Code()
				err = errors.New(st.Message())
			}
			return ctx, refuse(code, reasonUnauthenticated, err.Error()), false
		}
		if next != nil {
			ctx = next
		}
	}
	return ctx, outcome{}, true
}

// checksRequests reports whether requests go through authorize.
func (r *Receiver) checksRequests() bool { return r.opts.Auth != nil || r.opts.OnRequest != nil }

// unaryAuth is the gRPC interceptor of authorize.
func (r *Receiver) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	ctx, o, ok := r.authorize(ctx, md)
	if !ok {
		r.observe(transportGRPC, r.signalOf(info.FullMethod), o, 0)
		return nil, o.grpcStatus().Err()
	}
	return handler(ctx, req)
}

// signalOf returns the signal of a gRPC method, nil if none.
func (r *Receiver) signalOf(method string) *signal {
	for _, sig := range r.sigs {
		if svc, ok := grpcServices[sig.name]; ok && method == "/"+svc.service+"/Export" {
			return sig
		}
	}
	return nil
}

// headerMD returns h with lower-case keys, as gRPC metadata has them.
func headerMD(h http.Header) map[string][]string {
	md := make(map[string][]string, len(h))
	for k, v := range h {
		md[strings.ToLower(k)] = v
	}
	return md
}

// challenge is the WWW-Authenticate header of a 401.
func (r *Receiver) challenge() string {
	if a := r.opts.Auth; a != nil && !a.basic && a.scheme != "" {
		return a.scheme
	}
	return `Basic realm="vigil"`
}
