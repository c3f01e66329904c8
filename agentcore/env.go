package agentcore

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/gateway"
)

// FromEnv builds the interceptor of a deployed function: the tools'
// functions from MCPFN_TOOL_FUNCTIONS, their key secrets from
// MCPFN_CALL_KEY_SECRETS (read once at cold start with
// calltoken.LoadSigner), the JWT settings from MCPFN_JWT_ISSUER,
// MCPFN_JWT_AUDIENCE and MCPFN_JWT_JWKS_URL (as the gateway reads them).
func FromEnv(ctx context.Context, tools []*adapter.Tool) (*Interceptor, error) {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	fns, err := gateway.ParseToolFunctions(os.Getenv(gateway.EnvToolFunctions))
	if err != nil {
		return nil, err
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("agentcore: AWS configuration: %w", err)
	}
	signer, err := calltoken.SignerFromEnv(ctx, awsCfg, calltoken.SignerInterceptor, fns)
	if err != nil {
		return nil, err
	}
	jwt, err := gateway.NewJWTVerifier(ctx, gateway.JWTConfigFromEnv(), logger)
	if err != nil {
		return nil, err
	}
	return New(Config{Tools: tools, Signer: signer, JWT: jwt, Logger: logger})
}

// Start builds the interceptor from the environment and serves it as a
// Lambda function; a configuration error stops the cold start.
func Start(tools []*adapter.Tool) {
	i, err := FromEnv(context.Background(), tools)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpfn interceptor:", err)
		os.Exit(1)
	}
	lambda.Start(i.Handle)
}
