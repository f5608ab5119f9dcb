package redact

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
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
	g := newGen(1)
	r := newTestRedactor(t, Default())
	tests := []struct {
		rule string
		tps  []string // secrets, each with the part that must go in {…}
		fps  []string
	}{
		{"private-key", []string{
			"-----BEGIN RSA PRIVATE KEY-----\n{" + base64.StdEncoding.EncodeToString(g.bytes(96)) + "}\n-----END RSA PRIVATE KEY-----",
			`"key": "-----BEGIN PRIVATE KEY-----\n{` + base64.StdEncoding.EncodeToString(g.bytes(60)) + `\n}`,
			"-----BEGIN OPENSSH PRIVATE KEY-----{" + base64.StdEncoding.EncodeToString(g.bytes(60)) + "}",
		}, []string{"-----BEGIN CERTIFICATE-----\nMIIB" + base64.StdEncoding.EncodeToString(g.bytes(30)) + "\n-----END CERTIFICATE-----", "-----BEGIN PUBLIC KEY-----"}},
		{"jwt", []string{"{eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk}"},
			[]string{"eyJhbGciOiJub25lIn0", "eyJ", "some.eyJ.text"}},
		{"anthropic-api-key", []string{"{sk-ant-api03-" + g.str(b64url, 93) + "AA}", "key={sk-ant-oat01-" + g.str(b64url, 60) + "}"},
			[]string{"sk-ant-api03-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "sk-ant-short"}},
		{"openai-api-key", []string{"{sk-proj-" + g.str(b64url, 74) + "T3BlbkFJ" + g.str(b64url, 74) + "}",
			"({sk-" + g.str(alnum, 20) + "T3BlbkFJ" + g.str(alnum, 20) + "})", "{sk-or-v1-" + g.str(hexLower, 64) + "}",
			"{sk-" + g.str(hexLower, 32) + "}"},
			[]string{"sk-learn", "task-" + g.str(alnum, 40), "sk-proj-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "sk-learn-pipeline-training-job-7f9c"}},
		{"aws-access-key", []string{"{AKIA" + g.str(upperNum, 16) + "}", "id={ASIA" + g.str(upperNum, 16) + "}"},
			[]string{"AKIAXXXXXXXXXXXXXXXX", "AKIA" + g.str(upperNum, 17), "TODAYINASIAASACKOFRICEFELLOVER"}},
		{"github-token", []string{"{ghp_" + g.str(alnum, 36) + "}", "{gho_" + g.str(alnum, 36) + "}", "{github_pat_" + g.str(alnum, 22) + "_" + g.str(alnum, 59) + "}"},
			[]string{"ghp_short", "github_pat_"}},
		{"gitlab-token", []string{"{glpat-" + g.str(alnum, 20) + "}", "{glrt-" + g.str(alnum, 20) + "}", "{GR1348941" + g.str(alnum, 20) + "}"},
			[]string{"glpat-XXXXXXXXXXX-XXXXXXXX", "glpat-"}},
		{"slack-token", []string{"{xoxb-" + g.str(digits, 12) + "-" + g.str(digits, 12) + "-" + g.str(alnum, 24) + "}", "{xapp-1-A" + g.str(upperNum, 10) + "-" + g.str(digits, 13) + "}"},
			[]string{"xoxb-", "xoxo-hugs-and-kisses"}},
		{"slack-webhook", []string{"https://hooks.slack.com/services/{T" + g.str(upperNum, 8) + "/B" + g.str(upperNum, 8) + "/" + g.str(alnum, 24) + "}"},
			[]string{"https://hooks.slack.com/services/"}},
		{"stripe-key", []string{"{sk_live_" + g.str(alnum, 24) + "}", "{rk_test_" + g.str(alnum, 24) + "}", "{whsec_" + g.str(alnum, 32) + "}"},
			[]string{"pk_live_" + g.str(alnum, 24), "sk_live_"}},
		{"huggingface-token", []string{"{hf_" + g.str(letters, 34) + "}", "{api_org_" + g.str(letters, 34) + "}"},
			[]string{"hf_hub_download", "hf_transfer"}},
		{"gcp-api-key", []string{"{AIza" + g.str(b64url, 35) + "}"}, []string{"AIzaShort"}},
		{"google-oauth-token", []string{"{ya29." + g.str(b64url, 80) + "}"}, []string{"ya29.short"}},
		{"ai-platform-token", []string{"{gsk_" + g.str(alnum, 52) + "}", "{xai-" + g.str(alnum, 80) + "}", "{r8_" + g.str(alnum, 37) + "}",
			"{lsv2_pt_" + g.str(hexLower, 32) + "_" + g.str(hexLower, 10) + "}"}, []string{"xai-grok-2", "r8_short"}},
		{"package-registry-token", []string{"{npm_" + g.str(alnum, 36) + "}", "{pypi-AgEIcHlwaS5vcmc" + g.str(b64url, 70) + "}"}, []string{"npm_config_cache"}},
		{"sendgrid-key", []string{"{SG." + g.str(b64url, 22) + "." + g.str(b64url, 43) + "}"}, []string{"SG.ab.cd"}},
		{"databricks-token", []string{"{dapi" + g.str(hexLower, 32) + "}"}, []string{"dapi-client"}},
		{"auth-header", []string{"Authorization: {Bearer " + g.str(b64url, 40) + "}", "authorization={Basic " + base64.StdEncoding.EncodeToString([]byte("u:p")) + "}",
			`headers={"Authorization": "{Token ` + g.str(alnum, 30) + `}"}`, "Proxy-Authorization: {Negotiate " + g.str(alnum, 30) + "}",
			`authorization:[{Bearer ` + g.str(alnum, 30) + `}]`},
			[]string{"Authorization header missing", "authorization failed for user"}},
		{"cookie-header", []string{"Cookie: {session=" + g.str(alnum, 30) + "; theme=dark}", "Set-Cookie: {id=" + g.str(alnum, 20) + "; HttpOnly}"},
			[]string{"cookie consent banner shown"}},
		{"bearer-token", []string{"bearer {" + g.str(b64url, 30) + "9}", "Bearer {" + g.str(alnum, 20) + "." + g.str(alnum, 20) + "}"},
			[]string{"Bearer of bad news", "bearer authentication", "Bearer Authentication", "token_type: Bearer",
				"token_type=Bearer expires_in=3600"}},
		{"basic-auth", []string{"basic {" + base64.StdEncoding.EncodeToString([]byte("admin:"+g.password())) + "}"},
			[]string{"Basic authentication is disabled", "basic knowledge", "Basic YWRtaW4="}},
		{"url-credentials", []string{"postgres://app:{" + g.password() + "}@db:5432/x", "redis://:{" + g.str(alnum, 20) + "}@cache:6379"},
			[]string{"https://host:8080/path@v2", "https://user@example.com/x", "mailto:someone@example.com"}},
		{"url-query-secret", []string{"https://x/y?api_key={" + g.str(alnum, 30) + "}&page=2", "/cb?code={" + g.str(alnum, 20) + "}&state=1",
			"?sig={" + g.str(alnum, 40) + "}", "&X-Amz-Security-Token={" + g.str(alnum, 40) + "}", "?password={" + g.password() + "}"},
			[]string{"?page=2&sort=desc", "?status_code=200&max_tokens=5", "?query=up&time=1700000000"}},
		{"kv-secret", []string{"password={" + g.password() + "}", "DB_PASSWORD={hunter2}", `"client_secret": "{` + g.str(alnum, 20) + `}"`,
			`secret_key => '{` + g.str(alnum, 20) + `}'`, `{\"password\":\"{` + g.password() + `}\"}`, "x-api-key: {" + g.str(alnum, 30) + "}",
			`note="see password={` + g.password() + `}"`, `"passphrase":"{correct horse battery}"`},
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
