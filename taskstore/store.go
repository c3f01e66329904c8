package taskstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Client is the part of *dynamodb.Client the store uses.
type Client interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Defaults of [Options].
const (
	DefaultTTL          = time.Hour
	DefaultPollInterval = time.Second
	DefaultMarkerTTL    = 15 * time.Minute
	// DefaultMaxPayloadBytes leaves 50 KB of DynamoDB's 400 KB item limit
	// to the other attributes.
	DefaultMaxPayloadBytes = 350 * 1024
)

// Options tune a [Store]; zero values take the defaults.
type Options struct {
	// TTL is a new task's lifetime (ttlMs).
	TTL time.Duration
	// PollInterval is the pollIntervalMs a new task advertises.
	PollInterval time.Duration
	// MarkerTTL is how long a synchronous call's cancel marker lives.
	MarkerTTL time.Duration
	// MaxPayloadBytes bounds a task's params and each outcome (result,
	// error, or input requests plus request state).
	MaxPayloadBytes int
	// Now is the clock; tests set it to move time without sleeping.
	Now func() time.Time
}

// Store reads and writes tasks in one table. It is safe for concurrent use.
type Store struct {
	client Client
	table  string
	opts   Options
	// afterPoll, when set (tests), runs after every poll of Watch and
	// WatchCall.
	afterPoll func()
	// sealer, when set (the gateway's store, seal.go), seals new tasks
	// and verifies every record an owner-facing operation reads.
	sealer Sealer
}

// New returns a store on table.
func New(client Client, table string, opts Options) *Store {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.MarkerTTL <= 0 {
		opts.MarkerTTL = DefaultMarkerTTL
	}
	if opts.MaxPayloadBytes <= 0 {
		opts.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{client: client, table: table, opts: opts}
}

// Table is the table the store uses.
func (s *Store) Table() string { return s.table }

func (s *Store) now() time.Time { return s.opts.Now() }
