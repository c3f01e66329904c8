package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpfn/mcpfn/calltoken"
)

// keyReloadInterval is how often the gateway reads its keys again, so that a
// rotation's new key signs within this time (the previous key verifies, at
// the functions, for the whole grace window, which is longer).
const keyReloadInterval = 10 * time.Minute

// loadSigner reads every tool function's current key (one concurrent round
// of Secrets Manager reads at cold start; the gateway signs and verifies no
// call token, so it reads no previous version) and keeps them fresh in the
// background until Close.
func (g *Gateway) loadSigner(ctx context.Context, clients *awsClients) error {
	api, err := clients.secrets()
	if err != nil {
		return err
	}
	s, err := calltoken.LoadSigner(ctx, api, calltoken.SignerGateway, g.cfg.Functions, g.cfg.KeySecrets)
	if err != nil {
		return fmt.Errorf("gateway: call-token keys: %w", err)
	}
	g.signer = s
	go func() {
		t := time.NewTicker(keyReloadInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := s.Reload(ctx); err != nil {
					g.cfg.Logger.Warn("mcpfn gateway: reloading call-token keys failed; the current ones keep signing", "error", err.Error())
				}
			}
		}
	}()
	return nil
}
