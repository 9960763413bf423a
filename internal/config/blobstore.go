package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// BlobEmbedded is the CODEXEC_BLOB_STORE value of the embedded store (a
// directory of the data dir, one process), the default.
const BlobEmbedded = "embedded"

// BlobStore says where staged uploads and kept artifacts live.
type BlobStore struct {
	// URL is CODEXEC_BLOB_STORE as given: BlobEmbedded or s3://….
	URL string
	// S3 is the bucket of an s3:// URL; nil for the embedded store.
	S3 *S3Location
	// AccessKey and SecretKey are the S3 credentials
	// (CODEXEC_S3_ACCESS_KEY and CODEXEC_S3_SECRET_KEY, else
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY).
	AccessKey, SecretKey string
}

// S3Location is where an S3-compatible blob store keeps its objects:
// s3://BUCKET[/PREFIX][?endpoint=URL&region=REGION&create=true].
type S3Location struct {
	Bucket string
	// Prefix is the key prefix ("" or ending in "/").
	Prefix string
	// Endpoint is host[:port] of the S3 API; Secure selects https.
	// Without endpoint= it is AWS S3 (s3.amazonaws.com, https).
	Endpoint string
	Secure   bool
	// Region is the bucket's region ("" lets the client ask the server).
	Region string
	// Create makes the bucket at start-up when it does not exist.
	Create bool
}

func init() {
	settings = append(settings, blobSettings...)
}

var blobSettings = []setting{
	{"CODEXEC_BLOB_STORE", BlobEmbedded, "where staged uploads and kept artifacts live: embedded (DATA_DIR/artifacts, one process) | s3://BUCKET[/PREFIX][?endpoint=URL&region=REGION&create=true] (an S3-compatible bucket shared by replicas; credentials from CODEXEC_S3_ACCESS_KEY/CODEXEC_S3_SECRET_KEY)", blobURL},
	{"CODEXEC_S3_ACCESS_KEY", "", "access key of an s3:// CODEXEC_BLOB_STORE (unset: AWS_ACCESS_KEY_ID)", fallback("AWS_ACCESS_KEY_ID", str(func(c *Config) *string { return &c.Blob.AccessKey }))},
	{"CODEXEC_S3_SECRET_KEY", "", "secret key of an s3:// CODEXEC_BLOB_STORE (unset: AWS_SECRET_ACCESS_KEY); shown masked", secret(fallback("AWS_SECRET_ACCESS_KEY", str(func(c *Config) *string { return &c.Blob.SecretKey })))},
}

// fallback makes k read the environment variable env when its own is unset.
func fallback(env string, k kind) kind { k.fallback = env; return k }

// secret marks k's value as a credential: shown masked.
func secret(k kind) kind { k.secret = true; return k }

var blobURL = kind{typ: "url",
	set: func(c *Config, v string) (err error) {
		c.Blob.URL = strings.TrimSpace(v)
		c.Blob.S3, err = ParseBlobStore(c.Blob.URL)
		return err
	},
	get: func(c *Config) string { return c.Blob.URL }}

// bucketName is the S3 bucket naming rule (lower-case DNS-style names).
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// keyPrefix is what a prefix may hold: letters, digits, '_', '-', '.' in
// '/'-separated segments.
var keyPrefix = regexp.MustCompile(`^([A-Za-z0-9_.-]+/)*$`)

// ParseBlobStore parses a CODEXEC_BLOB_STORE value: nil for the embedded
// store ("" or "embedded"), else the bucket of an s3:// URL. Credentials
// in the URL are refused: they would show wherever the setting is shown.
func ParseBlobStore(v string) (*S3Location, error) {
	if v == "" || strings.EqualFold(v, BlobEmbedded) {
		return nil, nil
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "s3" || u.Opaque != "" {
		return nil, fmt.Errorf("must be %s or s3://BUCKET[/PREFIX][?endpoint=URL&region=REGION&create=true], got %q", BlobEmbedded, v)
	}
	if u.User != nil {
		return nil, errors.New("must not carry credentials: set CODEXEC_S3_ACCESS_KEY and CODEXEC_S3_SECRET_KEY instead")
	}
	loc := &S3Location{Bucket: u.Host, Prefix: strings.TrimPrefix(u.Path, "/"), Endpoint: "s3.amazonaws.com", Secure: true}
	if !bucketName.MatchString(loc.Bucket) || strings.Contains(loc.Bucket, "..") {
		return nil, fmt.Errorf("bucket %q is not a valid S3 bucket name (3-63 lower-case letters, digits, '.' and '-')", loc.Bucket)
	}
	if loc.Prefix != "" && !strings.HasSuffix(loc.Prefix, "/") {
		loc.Prefix += "/"
	}
	if !keyPrefix.MatchString(loc.Prefix) || strings.Contains("/"+loc.Prefix, "/../") || strings.Contains("/"+loc.Prefix, "/./") {
		return nil, fmt.Errorf("prefix %q: use letters, digits, '_', '-' and '.' in '/'-separated parts", loc.Prefix)
	}
	return loc, loc.query(u.Query())
}

// query applies the URL's parameters; unknown ones are refused (a typo
// would otherwise silently keep the default).
func (loc *S3Location) query(q url.Values) error {
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch k {
		case "endpoint":
			e, err := url.Parse(v)
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || strings.Trim(e.Path, "/") != "" || e.User != nil {
				return fmt.Errorf("endpoint must be http(s)://HOST[:PORT], got %q", v)
			}
			loc.Endpoint, loc.Secure = e.Host, e.Scheme == "https"
		case "region":
			loc.Region = v
		case "create":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("create must be true or false, got %q", v)
			}
			loc.Create = b
		default:
			return fmt.Errorf("unknown parameter %q (known: endpoint, region, create)", k)
		}
	}
	return nil
}

// validate checks what one setting alone cannot: an S3 store needs both
// keys.
func (b BlobStore) validate() error {
	if b.S3 != nil && (b.AccessKey == "" || b.SecretKey == "") {
		return errors.New("CODEXEC_BLOB_STORE=s3://… needs CODEXEC_S3_ACCESS_KEY and CODEXEC_S3_SECRET_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
	}
	return nil
}
