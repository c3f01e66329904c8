// Package s3standin is the local stack's S3: the S3 REST API (path-style)
// of github.com/johannesboyne/gofakes3 over a versioned backend of its own
// that keeps each object version's bytes in a file, so memory stays the
// same whatever the objects weigh.
//
// It checks nothing: no signature, no policy, no Host (gofakes3 serves
// presigned URLs without looking at their signature or expiry, and answers
// every origin's CORS preflight). It is meant to sit behind
// internal/s3front, which does all of that before a request reaches it, as
// DynamoDB Local sits behind internal/ddbproxy. Buckets are created by the
// stack from the template ([Server.CreateBucket]), not over the API.
//
// What S3 does that it does not: lifecycle rules (nothing ever expires),
// bucket policies of its own (the front evaluates them), encryption at
// rest, storage classes, object lock, tags, multipart uploads (the front
// refuses them), replication, events.
package s3standin

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/johannesboyne/gofakes3"
)

// Server is the stand-in: gofakes3 over files in a directory of its own.
type Server struct {
	dir     string
	backend *fileBackend
	handler http.Handler
}

// New starts a stand-in keeping its objects under dir, which it owns: it
// is emptied now and removed by Close.
func New(dir string) (*Server, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("s3standin: %w", err)
	}
	b, err := newFileBackend(dir)
	if err != nil {
		return nil, fmt.Errorf("s3standin: %w", err)
	}
	g := gofakes3.New(b,
		// The front checks X-Amz-Date against its own clock and strips
		// the header; gofakes3's check would use another clock.
		gofakes3.WithTimeSkewLimit(0),
		gofakes3.WithIntegrityCheck(true), // Content-MD5, as S3
	)
	return &Server{dir: dir, backend: b, handler: g.Server()}, nil
}

// Handler serves the S3 REST API, path-style, to whoever reaches it.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if id := r.URL.Query().Get("versionId"); r.Method == http.MethodHead && key != "" && id != "" && id != "null" {
			s.headVersion(w, bucket, key, gofakes3.VersionID(id))
			return
		}
		s.handler.ServeHTTP(w, r)
	})
}

// headVersion answers a HeadObject of one version, which gofakes3 v1.2
// answers with the current version's metadata (it drops the versionId):
// a caller checking the version a reference names must see that version.
func (s *Server) headVersion(w http.ResponseWriter, bucket, key string, id gofakes3.VersionID) {
	obj, err := s.backend.HeadObjectVersion(bucket, key, id)
	if err != nil {
		status := http.StatusInternalServerError
		var ge gofakes3.Error
		if errors.As(err, &ge) {
			status = ge.ErrorCode().Status()
		}
		w.WriteHeader(status)
		return
	}
	defer obj.Contents.Close()
	h := w.Header()
	h.Set("x-amz-version-id", string(obj.VersionID))
	if obj.IsDeleteMarker {
		// S3 answers a HEAD of a delete marker's version so.
		h.Set("x-amz-delete-marker", "true")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	for k, v := range obj.Metadata {
		h.Set(k, v)
	}
	h.Set("ETag", gofakes3.FormatETag(obj.Hash))
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Length", strconv.FormatInt(obj.Size, 10))
	w.WriteHeader(http.StatusOK)
}

// CreateBucket creates a bucket with the template's versioning status
// ("Enabled", "Suspended" or "" for none), as `sam deploy` would.
func (s *Server) CreateBucket(name, versioning string) error {
	if err := s.backend.CreateBucket(name); err != nil {
		return fmt.Errorf("s3standin: bucket %s: %w", name, err)
	}
	switch versioning {
	case "":
		return nil
	case string(gofakes3.VersioningEnabled), string(gofakes3.VersioningSuspended):
		return s.backend.SetVersioningConfiguration(name, gofakes3.VersioningConfiguration{Status: gofakes3.VersioningStatus(versioning)})
	}
	return fmt.Errorf("s3standin: bucket %s: versioning %q is neither Enabled nor Suspended", name, versioning)
}

// Versioning is a bucket's versioning status ("" for none).
func (s *Server) Versioning(name string) (string, error) {
	v, err := s.backend.VersioningConfiguration(name)
	return string(v.Status), err
}

// Close removes the objects' files. The stand-in holds nothing else: its
// index is in memory, so the files mean nothing without it.
func (s *Server) Close() error { return os.RemoveAll(s.dir) }
