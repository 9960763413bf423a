package config

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseBlobStore(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    *S3Location
		wantErr string
	}{
		{"", nil, ""},
		{"embedded", nil, ""},
		{"s3://codexec", &S3Location{Bucket: "codexec", Endpoint: "s3.amazonaws.com", Secure: true}, ""},
		{"s3://codexec/team/a?region=eu-west-1", &S3Location{Bucket: "codexec", Prefix: "team/a/", Endpoint: "s3.amazonaws.com", Secure: true, Region: "eu-west-1"}, ""},
		{"s3://b-1.x/p/?endpoint=http://127.0.0.1:7070&create=true", &S3Location{Bucket: "b-1.x", Prefix: "p/", Endpoint: "127.0.0.1:7070", Create: true}, ""},
		{"s3://b12?endpoint=https://minio.internal", &S3Location{Bucket: "b12", Endpoint: "minio.internal", Secure: true}, ""},
		{"file:///tmp/x", nil, "must be embedded or s3://"},
		{"/data/blobs", nil, "must be embedded or s3://"},
		{"s3://AK:SK@codexec", nil, "must not carry credentials"},
		{"s3://Upper", nil, "not a valid S3 bucket name"},
		{"s3://ab", nil, "not a valid S3 bucket name"},
		{"s3://codexec/../x", nil, "prefix"},
		{"s3://codexec/a b", nil, "prefix"},
		{"s3://codexec?endpoint=127.0.0.1:9000", nil, "endpoint must be http(s)://HOST[:PORT]"},
		{"s3://codexec?endpoint=http://h/path", nil, "endpoint must be http(s)://HOST[:PORT]"},
		{"s3://codexec?create=maybe", nil, "create must be true or false"},
		{"s3://codexec?regoin=x", nil, `unknown parameter "regoin"`},
	} {
		got, err := ParseBlobStore(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestBlobCredentials: the keys come from CODEXEC_S3_* or else AWS_*, an
// s3:// store without them does not load, and `codexec env` masks the
// secret key.
func TestBlobCredentials(t *testing.T) {
	const url = "s3://codexec?endpoint=http://127.0.0.1:7070"
	for _, tc := range []struct {
		name           string
		env            map[string]string
		wantAK, wantSK string
		wantErr        string
	}{
		{"own settings", map[string]string{"CODEXEC_BLOB_STORE": url, "CODEXEC_S3_ACCESS_KEY": "ak", "CODEXEC_S3_SECRET_KEY": "sk",
			"AWS_ACCESS_KEY_ID": "aws-ak", "AWS_SECRET_ACCESS_KEY": "aws-sk"}, "ak", "sk", ""},
		{"AWS variables", map[string]string{"CODEXEC_BLOB_STORE": url, "AWS_ACCESS_KEY_ID": "aws-ak", "AWS_SECRET_ACCESS_KEY": "aws-sk"}, "aws-ak", "aws-sk", ""},
		{"no secret", map[string]string{"CODEXEC_BLOB_STORE": url, "CODEXEC_S3_ACCESS_KEY": "ak"}, "", "", "needs CODEXEC_S3_ACCESS_KEY and CODEXEC_S3_SECRET_KEY"},
		{"embedded needs none", map[string]string{}, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, eff, err := Resolve(nil, func(k string) string { return tc.env[k] }, "/home/u", io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Blob.AccessKey != tc.wantAK || c.Blob.SecretKey != tc.wantSK {
				t.Fatalf("keys %q %q, want %q %q", c.Blob.AccessKey, c.Blob.SecretKey, tc.wantAK, tc.wantSK)
			}
			for _, e := range eff {
				if e.Env == "CODEXEC_S3_SECRET_KEY" && tc.wantSK != "" && (e.Value != masked || e.Source != SourceEnv) {
					t.Fatalf("codexec env shows the secret key as %q (%s)", e.Value, e.Source)
				}
			}
		})
	}
}
