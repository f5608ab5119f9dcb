package redact

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/redact/redacttest"
)

func newTestRedactor(t testing.TB, cfg Config) *Redactor {
	t.Helper()
	r, err := New(cfg, prometheus.NewRegistry())
	require.NoError(t, err)
	return r
}

// TestRules checks each built-in pattern on true positives (the secret is
// gone and the rule named) and on look-alikes (unchanged).
func TestRules(t *testing.T) {
	g := redacttest.NewGen(1)
	r := newTestRedactor(t, Default())
	tests := []struct {
		rule string
		tps  []string // secrets, each with the part that must go in {…}
		fps  []string
	}{
		{"private-key", []string{
			"-----BEGIN RSA PRIVATE KEY-----\n{" + base64.StdEncoding.EncodeToString(g.Bytes(96)) + "}\n-----END RSA PRIVATE KEY-----",
			`"key": "-----BEGIN PRIVATE KEY-----\n{` + base64.StdEncoding.EncodeToString(g.Bytes(60)) + `\n}`,
			"-----BEGIN OPENSSH PRIVATE KEY-----{" + base64.StdEncoding.EncodeToString(g.Bytes(60)) + "}",
		}, []string{"-----BEGIN CERTIFICATE-----\nMIIB" + base64.StdEncoding.EncodeToString(g.Bytes(30)) + "\n-----END CERTIFICATE-----", "-----BEGIN PUBLIC KEY-----"}},
		{"jwt", []string{"{eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk}"},
			[]string{"eyJhbGciOiJub25lIn0", "eyJ", "some.eyJ.text"}},
		{"anthropic-api-key", []string{"{sk-ant-api03-" + g.Str(redacttest.B64URL, 93) + "AA}", "key={sk-ant-oat01-" + g.Str(redacttest.B64URL, 60) + "}"},
			[]string{"sk-ant-api03-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "sk-ant-short"}},
		{"openai-api-key", []string{"{sk-proj-" + g.Str(redacttest.B64URL, 74) + "T3BlbkFJ" + g.Str(redacttest.B64URL, 74) + "}",
			"({sk-" + g.Str(redacttest.Alnum, 20) + "T3BlbkFJ" + g.Str(redacttest.Alnum, 20) + "})", "{sk-or-v1-" + g.Str(redacttest.HexLower, 64) + "}",
			"{sk-" + g.Str(redacttest.HexLower, 32) + "}"},
			[]string{"sk-learn", "task-" + g.Str(redacttest.Alnum, 40), "sk-proj-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "sk-learn-pipeline-training-job-7f9c"}},
		{"aws-access-key", []string{"{AKIA" + g.Str(redacttest.UpperNum, 16) + "}", "id={ASIA" + g.Str(redacttest.UpperNum, 16) + "}"},
			[]string{"AKIAXXXXXXXXXXXXXXXX", "AKIA" + g.Str(redacttest.UpperNum, 17), "TODAYINASIAASACKOFRICEFELLOVER"}},
		{"github-token", []string{"{ghp_" + g.Str(redacttest.Alnum, 36) + "}", "{gho_" + g.Str(redacttest.Alnum, 36) + "}", "{github_pat_" + g.Str(redacttest.Alnum, 22) + "_" + g.Str(redacttest.Alnum, 59) + "}"},
			[]string{"ghp_short", "github_pat_"}},
		{"gitlab-token", []string{"{glpat-" + g.Str(redacttest.Alnum, 20) + "}", "{glrt-" + g.Str(redacttest.Alnum, 20) + "}", "{GR1348941" + g.Str(redacttest.Alnum, 20) + "}"},
			[]string{"glpat-XXXXXXXXXXX-XXXXXXXX", "glpat-"}},
		{"slack-token", []string{"{xoxb-" + g.Str(redacttest.Digits, 12) + "-" + g.Str(redacttest.Digits, 12) + "-" + g.Str(redacttest.Alnum, 24) + "}", "{xapp-1-A" + g.Str(redacttest.UpperNum, 10) + "-" + g.Str(redacttest.Digits, 13) + "}"},
			[]string{"xoxb-", "xoxo-hugs-and-kisses"}},
		{"slack-webhook", []string{"https://hooks.slack.com/services/{T" + g.Str(redacttest.UpperNum, 8) + "/B" + g.Str(redacttest.UpperNum, 8) + "/" + g.Str(redacttest.Alnum, 24) + "}"},
			[]string{"https://hooks.slack.com/services/"}},
		{"stripe-key", []string{"{sk_live_" + g.Str(redacttest.Alnum, 24) + "}", "{rk_test_" + g.Str(redacttest.Alnum, 24) + "}", "{whsec_" + g.Str(redacttest.Alnum, 32) + "}"},
			[]string{"pk_live_" + g.Str(redacttest.Alnum, 24), "sk_live_"}},
		{"huggingface-token", []string{"{hf_" + g.Str(redacttest.Letters, 34) + "}", "{api_org_" + g.Str(redacttest.Letters, 34) + "}"},
			[]string{"hf_hub_download", "hf_transfer"}},
		{"gcp-api-key", []string{"{AIza" + g.Str(redacttest.B64URL, 35) + "}"}, []string{"AIzaShort"}},
		{"google-oauth-token", []string{"{ya29." + g.Str(redacttest.B64URL, 80) + "}"}, []string{"ya29.short"}},
		{"ai-platform-token", []string{"{gsk_" + g.Str(redacttest.Alnum, 52) + "}", "{xai-" + g.Str(redacttest.Alnum, 80) + "}", "{r8_" + g.Str(redacttest.Alnum, 37) + "}",
			"{lsv2_pt_" + g.Str(redacttest.HexLower, 32) + "_" + g.Str(redacttest.HexLower, 10) + "}"}, []string{"xai-grok-2", "r8_short"}},
		{"package-registry-token", []string{"{npm_" + g.Str(redacttest.Alnum, 36) + "}", "{pypi-AgEIcHlwaS5vcmc" + g.Str(redacttest.B64URL, 70) + "}"}, []string{"npm_config_cache"}},
		{"sendgrid-key", []string{"{SG." + g.Str(redacttest.B64URL, 22) + "." + g.Str(redacttest.B64URL, 43) + "}"}, []string{"SG.ab.cd"}},
		{"databricks-token", []string{"{dapi" + g.Str(redacttest.HexLower, 32) + "}"}, []string{"dapi-client"}},
		{"auth-header", []string{"Authorization: {Bearer " + g.Str(redacttest.B64URL, 40) + "}", "authorization={Basic " + base64.StdEncoding.EncodeToString([]byte("u:p")) + "}",
			`headers={"Authorization": "{Token ` + g.Str(redacttest.Alnum, 30) + `}"}`, "Proxy-Authorization: {Negotiate " + g.Str(redacttest.Alnum, 30) + "}",
			`authorization:[{Bearer ` + g.Str(redacttest.Alnum, 30) + `}]`},
			[]string{"Authorization header missing", "authorization failed for user"}},
		{"cookie-header", []string{"Cookie: {session=" + g.Str(redacttest.Alnum, 30) + "; theme=dark}", "Set-Cookie: {id=" + g.Str(redacttest.Alnum, 20) + "; HttpOnly}"},
			[]string{"cookie consent banner shown"}},
		{"bearer-token", []string{"bearer {" + g.Str(redacttest.B64URL, 30) + "9}", "Bearer {" + g.Str(redacttest.Alnum, 20) + "." + g.Str(redacttest.Alnum, 20) + "}"},
			[]string{"Bearer of bad news", "bearer authentication", "Bearer Authentication", "token_type: Bearer",
				"token_type=Bearer expires_in=3600"}},
		{"basic-auth", []string{"basic {" + base64.StdEncoding.EncodeToString([]byte("admin:"+g.Password())) + "}"},
			[]string{"Basic authentication is disabled", "basic knowledge", "Basic YWRtaW4="}},
		{"url-credentials", []string{"postgres://app:{" + g.Password() + "}@db:5432/x", "redis://:{" + g.Str(redacttest.Alnum, 20) + "}@cache:6379"},
			[]string{"https://host:8080/path@v2", "https://user@example.com/x", "mailto:someone@example.com"}},
		{"url-query-secret", []string{"https://x/y?api_key={" + g.Str(redacttest.Alnum, 30) + "}&page=2", "/cb?code={" + g.Str(redacttest.Alnum, 20) + "}&state=1",
			"?sig={" + g.Str(redacttest.Alnum, 40) + "}", "&X-Amz-Security-Token={" + g.Str(redacttest.Alnum, 40) + "}", "?password={" + g.Password() + "}"},
			[]string{"?page=2&sort=desc", "?status_code=200&max_tokens=5", "?query=up&time=1700000000"}},
		{"kv-secret", []string{"password={" + g.Password() + "}", "DB_PASSWORD={hunter2}", `"client_secret": "{` + g.Str(redacttest.Alnum, 20) + `}"`,
			`secret_key => '{` + g.Str(redacttest.Alnum, 20) + `}'`, `{\"password\":\"{` + g.Password() + `}\"}`, "x-api-key: {" + g.Str(redacttest.Alnum, 30) + "}",
			`note="see password={` + g.Password() + `}"`, `"passphrase":"{correct horse battery}"`},
			[]string{"max_tokens=512", "token_count=7", "tokens: 5", "secretName: tls", "password reset requested", "eos_token=</s>",
				"password_required=true", "PWD=/home/user", "token_type=Bearer"}},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.rule] = true
		t.Run(tt.rule, func(t *testing.T) {
			for _, tp := range tt.tps {
				secrets, in := braces(tp)
				out, changed := r.String(in)
				require.True(t, changed, "%q", in)
				for _, s := range secrets {
					require.NotContains(t, out, s, "in %q", in)
				}
				require.Contains(t, out, "[REDACTED:"+tt.rule+"]", "%q → %q", in, out)
				again, ch := r.String(out)
				require.False(t, ch, "idempotent: %q → %q", out, again)
			}
			for _, fp := range tt.fps {
				out, changed := r.String(fp)
				require.False(t, changed, "%q → %q", fp, out)
				require.Equal(t, fp, out)
			}
		})
	}
	for _, n := range RuleNames() {
		require.True(t, covered[n], "rule %s has a test", n)
	}
}

// braces removes the {…} marks from s and returns what they held.
func braces(s string) ([]string, string) {
	var secrets []string
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '{')
		j := strings.IndexByte(s[max(i, 0):], '}')
		if i < 0 || j < 0 {
			break
		}
		// A '{' that belongs to JSON is followed by '"' or '\': keep it.
		if i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
			b.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		secrets = append(secrets, s[i+1:i+j])
		b.WriteString(s[:i])
		b.WriteString(s[i+1 : i+j])
		s = s[i+j+1:]
	}
	b.WriteString(s)
	return secrets, b.String()
}

func TestKeyRules(t *testing.T) {
	k := newKeyRules(Config{DenyKeys: []string{"X-Internal-Auth"}, AllowKeys: []string{"app.session_token"}, GenAIKeys: []string{"my.prompt"}})
	f := func(key string, want keyKind) {
		t.Helper()
		require.Equal(t, want, k.kind(key), "%q", key)
		require.Equal(t, want, k.kind(key), "%q cached", key)
	}
	for _, key := range []string{"password", "db.password", "DB_PASSWORD", "user.Password", "http.request.header.authorization",
		"http.request.header.x-api-key", "apiKey", "APIKey", "api_key", "AWS_SECRET_ACCESS_KEY", "access_token", "id_token",
		"refresh-token", "client_secret", "clientSecret", "http.response.header.set-cookie", "cookie", "private_key",
		"credentials", "db_pwd", "jwt", "storage.AccountKey", "auth_token", "passphrase"} {
		f(key, keySecret)
	}
	for _, key := range []string{"", "gen_ai.usage.input_tokens", "max_tokens", "gen_ai.request.max_tokens", "llm.token_count.prompt",
		"eos_token", "input_token", "next_page_token", "token_type", "token_count", "secret_name", "k8s.secret.name",
		"password_reset_url", "PWD", "cache.key", "partition_key", "session.id", "monkey", "keyboard", "service.name",
		"time_to_first_token", "app.session_token", "tokenizer"} {
		f(key, keyPlain)
	}
	for _, key := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.prompt",
		"gen_ai.prompt.0.content", "gen_ai.completion", "gen_ai.completion.0.content", "llm.prompts", "llm.input_messages.0.message.content",
		"input.value", "output.value", "ai.prompt.messages", "ai.response.text", "traceloop.entity.input", "my.prompt", "My.Prompt.x"} {
		f(key, keyGenAI)
	}
	for _, key := range []string{"gen_ai.completion_tokens", "gen_ai.prompt_tokens", "gen_ai.request.model", "input.mime_type"} {
		require.NotEqual(t, keyGenAI, k.kind(key), "%q", key)
	}
	f("x-internal-auth", keyDenied)
	f("http.request.header.X-Internal-Auth", keyDenied)
}

func TestWords(t *testing.T) {
	f := func(key string, want ...string) {
		t.Helper()
		require.Equal(t, want, words(key))
	}
	f("xApiKey", "x", "api", "key")
	f("APIKey", "api", "key")
	f("http.request.header.x-api-key", "http", "request", "header", "x", "api", "key")
	f("AWS_SECRET_ACCESS_KEY", "aws", "secret", "access", "key")
	f("oauth2Token", "oauth2", "token")
	f("..")
}

func TestCounter(t *testing.T) {
	reg := prometheus.NewRegistry()
	r, err := New(Default(), reg)
	require.NoError(t, err)
	_, _ = r.String("a ghp_" + strings.Repeat("aB3", 12) + " and password=hunter22 and ghp_" + strings.Repeat("Xy9", 12))
	require.Equal(t, 2.0, testutil.ToFloat64(r.counts["github-token"]))
	require.Equal(t, 1.0, testutil.ToFloat64(r.counts["kv-secret"]))
	require.Equal(t, 0.0, testutil.ToFloat64(r.counts["jwt"]))
	n, err := testutil.GatherAndCount(reg, "vigil_redactions_total")
	require.NoError(t, err)
	require.Equal(t, len(RuleNames())+4, n, "every rule has a series from the start")

	// A second Redactor on the same registry shares the counter.
	r2, err := New(Default(), reg)
	require.NoError(t, err)
	_, _ = r2.String("ghp_" + strings.Repeat("Qw7", 12))
	require.Equal(t, 3.0, testutil.ToFloat64(r.counts["github-token"]))
}
