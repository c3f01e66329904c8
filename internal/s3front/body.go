package s3front

import (
	"bufio"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/mcpfn/mcpfn/internal/iam"
)

// maxObjectSize is the largest object one PutObject may carry.
const maxObjectSize = 5 << 30

// checksumAlgorithms are the x-amz-checksum-* algorithms S3 verifies, each
// with the hash it is.
var checksumAlgorithms = map[string]func() hash.Hash{
	"crc32":     func() hash.Hash { return crc32.NewIEEE() },
	"crc32c":    func() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) },
	"crc64nvme": func() hash.Hash { return crc64.New(crc64.MakeTable(0x9a6c9329ac4bc9b5)) },
	"sha1":      sha1.New,
	"sha256":    sha256.New,
}

// spooled is a PutObject's body, decoded and checked, waiting in a file:
// what reaches the stand-in is always a plain body of a known length whose
// every check passed, so a refused body is never stored, and memory holds
// none of it.
type spooled struct {
	file *os.File
	size int64
	// checksums are the verified x-amz-checksum-<alg> values, by header
	// name: the stand-in keeps them with the object.
	checksums map[string]string
}

func (s *spooled) Close() error {
	s.file.Close()
	return os.Remove(s.file.Name())
}

// spool reads a PutObject's body as S3 reads it — a plain body whose
// SHA-256 the signature covers (or not: UNSIGNED-PAYLOAD), or an
// aws-chunked body with its checksum in a trailer — into a file in dir,
// and checks its length, its x-amz-content-sha256 and its x-amz-checksum.
func spool(r *http.Request, payloadHash, dir string) (*spooled, *s3Error) {
	var (
		body     io.Reader = r.Body
		size     int64
		trailer  string // the trailer's header name, for aws-chunked
		contentH hash.Hash
	)
	switch {
	case payloadHash == iam.UnsignedPayload:
	case payloadHash == "STREAMING-UNSIGNED-PAYLOAD-TRAILER":
		trailer = strings.ToLower(strings.TrimSpace(r.Header.Get("X-Amz-Trailer")))
	case strings.HasPrefix(payloadHash, "STREAMING-"):
		return nil, errorf(http.StatusNotImplemented, "NotImplemented", "aws-chunked bodies with signed chunks ("+payloadHash+") are not served by the local stack; the AWS SDKs send STREAMING-UNSIGNED-PAYLOAD-TRAILER over TLS")
	default:
		if b, err := hex.DecodeString(payloadHash); err != nil || len(b) != sha256.Size {
			return nil, errorf(http.StatusBadRequest, "InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, or a valid sha256 value.")
		}
		contentH = sha256.New()
	}
	if trailer != "" || strings.HasPrefix(payloadHash, "STREAMING-") {
		n, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64)
		if err != nil || n < 0 {
			return nil, errorf(http.StatusLengthRequired, "MissingContentLength", "You must provide the Content-Length HTTP header (x-amz-decoded-content-length for an aws-chunked body).")
		}
		size = n
	} else {
		if r.ContentLength < 0 {
			return nil, errorf(http.StatusLengthRequired, "MissingContentLength", "You must provide the Content-Length HTTP header.")
		}
		size = r.ContentLength
	}
	if size > maxObjectSize {
		return nil, errorf(http.StatusBadRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size")
	}

	// The checksum asked for: one header, or the trailer's.
	var alg, want string
	for name, vals := range r.Header {
		a, ok := strings.CutPrefix(strings.ToLower(name), "x-amz-checksum-")
		if !ok || a == "mode" || a == "type" || a == "algorithm" {
			continue
		}
		if alg != "" {
			return nil, errorf(http.StatusBadRequest, "InvalidRequest", "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
		}
		alg, want = a, vals[0]
	}
	if trailer != "" {
		a, ok := strings.CutPrefix(trailer, "x-amz-checksum-")
		if !ok || alg != "" {
			return nil, errorf(http.StatusBadRequest, "InvalidRequest", "The trailer "+trailer+" is not a checksum the local stack verifies")
		}
		alg = a
	}
	var checksumH hash.Hash
	if alg != "" {
		newHash, ok := checksumAlgorithms[alg]
		if !ok {
			return nil, errorf(http.StatusBadRequest, "InvalidRequest", "Value for x-amz-checksum-"+alg+" is not a supported checksum algorithm")
		}
		checksumH = newHash()
	}

	f, err := os.CreateTemp(dir, "s3front-put-")
	if err != nil {
		return nil, errorf(http.StatusInternalServerError, "InternalError", err.Error())
	}
	out := &spooled{file: f, size: size, checksums: map[string]string{}}
	fail := func(e *s3Error) (*spooled, *s3Error) {
		_ = out.Close()
		return nil, e
	}
	sinks := []io.Writer{f}
	for _, h := range []hash.Hash{contentH, checksumH} {
		if h != nil {
			sinks = append(sinks, h)
		}
	}
	var chunked *chunkReader
	if trailer != "" {
		chunked = &chunkReader{r: bufio.NewReader(r.Body)}
		body = chunked
	}
	// One byte more than declared tells a body that is too long.
	n, err := io.Copy(io.MultiWriter(sinks...), io.LimitReader(body, size+1))
	var bad *s3Error
	switch {
	case errors.As(err, &bad):
		return fail(bad)
	case err != nil:
		return fail(errorf(http.StatusBadRequest, "IncompleteBody", "The request body could not be read: "+err.Error()))
	case n != size:
		return fail(errorf(http.StatusBadRequest, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header."))
	}
	if chunked != nil {
		if err := chunked.finish(); err != nil {
			return fail(err)
		}
		want = chunked.trailers[trailer]
	}
	if contentH != nil && hex.EncodeToString(contentH.Sum(nil)) != payloadHash {
		return fail(errorf(http.StatusBadRequest, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed."))
	}
	if checksumH != nil {
		got := base64.StdEncoding.EncodeToString(checksumH.Sum(nil))
		if want != got {
			return fail(errorf(http.StatusBadRequest, "BadDigest", fmt.Sprintf("The %s you specified did not match the calculated checksum.", strings.ToUpper(alg))))
		}
		out.checksums["X-Amz-Checksum-"+checksumHeaderCase(alg)] = got
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(errorf(http.StatusInternalServerError, "InternalError", err.Error()))
	}
	return out, nil
}

// checksumHeaderCase is the header's name as http.Header keys it.
func checksumHeaderCase(alg string) string { return http.CanonicalHeaderKey(alg) }

// chunkReader decodes an aws-chunked body without chunk signatures:
// "<hex size>\r\n<bytes>\r\n" chunks, a zero-size one, then trailer lines
// "name:value" and an empty line.
type chunkReader struct {
	r        *bufio.Reader
	left     int64 // of the current chunk
	done     bool
	trailers map[string]string
}

func malformedChunk(msg string) *s3Error {
	return errorf(http.StatusBadRequest, "IncompleteBody", "The aws-chunked body is malformed: "+msg)
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.done {
		return 0, io.EOF
	}
	if c.left == 0 {
		line, err := c.line()
		if err != nil {
			return 0, err
		}
		sizeHex, _, _ := strings.Cut(line, ";")
		n, perr := strconv.ParseInt(strings.TrimSpace(sizeHex), 16, 64)
		if perr != nil || n < 0 {
			return 0, malformedChunk(fmt.Sprintf("chunk size %q", line))
		}
		if n == 0 {
			c.done = true
			return 0, c.readTrailers()
		}
		c.left = n
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left == 0 && err == nil {
		// The chunk's closing CRLF.
		if l, lerr := c.line(); lerr != nil || l != "" {
			return n, malformedChunk("a chunk does not end with CRLF")
		}
	}
	if err == io.EOF {
		err = malformedChunk("the body ends inside a chunk")
	}
	return n, err
}

func (c *chunkReader) line() (string, error) {
	l, err := c.r.ReadString('\n')
	if err != nil {
		return "", malformedChunk("the body ends before its last chunk")
	}
	return strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r"), nil
}

func (c *chunkReader) readTrailers() error {
	c.trailers = map[string]string{}
	for {
		l, err := c.line()
		if err != nil {
			return err
		}
		if l == "" {
			return io.EOF
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return malformedChunk(fmt.Sprintf("trailer %q", l))
		}
		c.trailers[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
}

// finish reads what follows the declared bytes: the last chunk and the
// trailers.
func (c *chunkReader) finish() *s3Error {
	if !c.done {
		var one [1]byte
		if n, err := c.Read(one[:]); n > 0 || err != io.EOF {
			var bad *s3Error
			if errors.As(err, &bad) {
				return bad
			}
			return errorf(http.StatusBadRequest, "IncompleteBody", "The aws-chunked body holds more than x-amz-decoded-content-length bytes.")
		}
	}
	return nil
}
