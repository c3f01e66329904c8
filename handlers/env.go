package handlers

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mcpfn/mcpfn/ddbcrc"
)

// TableEnv names the environment variable holding the broadcasts table's
// name; each tool declares it with its table access, and the generated
// template sets it on every tool function.
const TableEnv = "BROADCASTS_TABLE"

// usePathStyleEnv asks for path-style S3 addressing, as the local stack's
// S3 serves it. The AWS SDK for Go reads AWS_ENDPOINT_URL_S3 and
// AWS_CA_BUNDLE itself, but has no variable for this.
const usePathStyleEnv = "AWS_S3_USE_PATH_STYLE"

// StoreFromEnv returns a store over the table named by BROADCASTS_TABLE,
// with the AWS SDK's default configuration (region, credentials, and
// AWS_ENDPOINT_URL_DYNAMODB, which points it at DynamoDB Local).
func StoreFromEnv(ctx context.Context) (*Store, error) {
	table, cfg, err := tableFromEnv(ctx)
	if err != nil {
		return nil, err
	}
	return NewStore(dynamodb.NewFromConfig(cfg, ddbcrc.Option), table), nil
}

// AttachmentStoreFromEnv is StoreFromEnv with the attachments bucket
// named by ATTACHMENTS_BUCKET: the store of the tools that declare the
// bucket. S3 is reached as the SDK's configuration says
// (AWS_ENDPOINT_URL_S3, AWS_CA_BUNDLE), path-style when
// AWS_S3_USE_PATH_STYLE is true.
func AttachmentStoreFromEnv(ctx context.Context) (*Store, error) {
	table, cfg, err := tableFromEnv(ctx)
	if err != nil {
		return nil, err
	}
	bucket := os.Getenv(AttachmentsEnv)
	if bucket == "" {
		return nil, fmt.Errorf("handlers: %s is not set; it names the attachments bucket", AttachmentsEnv)
	}
	pathStyle := false
	if v := os.Getenv(usePathStyleEnv); v != "" {
		if pathStyle, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("handlers: %s=%q is not a boolean", usePathStyleEnv, v)
		}
	}
	objects := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = pathStyle })
	return NewStore(dynamodb.NewFromConfig(cfg, ddbcrc.Option), table).WithAttachments(objects, bucket), nil
}

func tableFromEnv(ctx context.Context) (string, aws.Config, error) {
	table := os.Getenv(TableEnv)
	if table == "" {
		return "", aws.Config{}, fmt.Errorf("handlers: %s is not set; it names the broadcasts table", TableEnv)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return "", aws.Config{}, fmt.Errorf("handlers: loading AWS configuration: %w", err)
	}
	return table, cfg, nil
}
