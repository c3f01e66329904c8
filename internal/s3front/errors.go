package s3front

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"net/http"

	"github.com/mcpfn/mcpfn/internal/iam"
)

// s3Error is an error as S3 answers it: an HTTP status and an XML <Error>.
type s3Error struct {
	status  int
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
	// What S3 adds to some errors.
	Expires    string `xml:"Expires,omitempty"`
	ServerTime string `xml:"ServerTime,omitempty"`
	HeadersNot string `xml:"HeadersNotSigned,omitempty"`
}

func (e *s3Error) Error() string { return e.Code + ": " + e.Message }

func errorf(status int, code, msg string) *s3Error {
	return &s3Error{status: status, Code: code, Message: msg}
}

// accessDenied is S3's refusal, with the message IAM's decision gives.
func accessDenied(msg string) *s3Error { return errorf(http.StatusForbidden, "AccessDenied", msg) }

// writeError answers as S3 does: the XML body (none for HEAD), a request
// id in the header and the body.
func writeError(w http.ResponseWriter, r *http.Request, e *s3Error) {
	id := requestID()
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-amz-request-id", id)
	w.WriteHeader(e.status)
	if r.Method == http.MethodHead {
		return
	}
	body := struct {
		XMLName xml.Name `xml:"Error"`
		*s3Error
		RequestID string `xml:"RequestId"`
		HostID    string `xml:"HostId"`
	}{s3Error: e, RequestID: id, HostID: "mcpfn-local"}
	_, _ = w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(body)
}

func requestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// authError is S3's answer to a signature it refuses.
func authError(e *iam.AuthError, presigned bool) *s3Error {
	const mismatch = "The request signature we calculated does not match the signature you provided. Check your key and signing method."
	malformed := "AuthorizationHeaderMalformed"
	if presigned {
		malformed = "AuthorizationQueryParametersError"
	}
	switch e.Failure {
	case iam.FailMissing:
		// An anonymous request: S3 decides it as anonymous, and no
		// policy of the stack's lets anonymous callers in.
		return accessDenied("Access Denied")
	case iam.FailUnknownKey:
		return errorf(http.StatusForbidden, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
	case iam.FailToken:
		return errorf(http.StatusBadRequest, "InvalidToken", "The provided token is malformed or otherwise invalid.")
	case iam.FailSignature:
		return errorf(http.StatusForbidden, "SignatureDoesNotMatch", mismatch)
	case iam.FailSkew:
		return errorf(http.StatusForbidden, "RequestTimeTooSkewed", "The difference between the request time and the current time is too large.")
	case iam.FailExpired, iam.FailNotYetValid:
		return accessDenied(e.Message)
	case iam.FailUnsignedHeaders:
		return accessDenied(e.Message)
	case iam.FailPayloadHash:
		return errorf(http.StatusBadRequest, "InvalidRequest", e.Message)
	case iam.FailExpires:
		return errorf(http.StatusBadRequest, "AuthorizationQueryParametersError", e.Message)
	}
	return errorf(http.StatusBadRequest, malformed, e.Message)
}
