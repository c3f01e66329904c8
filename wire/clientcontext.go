package wire

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// EncodeClientContext is the X-Amz-Client-Context header value (base64 JSON)
// of cc, as an Invoke caller sends it.
func EncodeClientContext(cc *lambdacontext.ClientContext) (string, error) {
	b, err := json.Marshal(cc)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// DecodeClientContext decodes an X-Amz-Client-Context header value the way
// Lambda does before it invokes a function, for an Invoke API stand-in (the
// local stack) that must refuse what Lambda refuses.
func DecodeClientContext(header string) (*lambdacontext.ClientContext, error) {
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		return nil, fmt.Errorf("client context is not valid base64: %w", err)
	}
	var cc lambdacontext.ClientContext
	if err := json.Unmarshal(raw, &cc); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("client context is not a valid JSON object: invalid JSON at byte %d", syn.Offset)
		}
		return nil, errors.New("client context is not a valid JSON object: malformed JSON")
	}
	return &cc, nil
}
