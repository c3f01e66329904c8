package taskstore

import "context"

// Finish records a run's outcome: completed{result}, failed{error} or
// input_required{inputRequests, sealed requestState}. It is conditioned on
// the task being working and held by runID, so a cancelled task stays
// cancelled ([ErrCancelled]), a task held by another run is untouched
// ([ErrClaimed]) and of two Finishes of one run the second gets
// [ErrNotWorking] (unless the first was input_required and an update
// already resumed the task, which clears the holder: [ErrClaimed]).
//
// An outcome larger than Options.MaxPayloadBytes is recorded instead as
// failed with a JSON-RPC -32603 error naming the limit, and Finish returns
// an error wrapping [ErrTooLarge] for the caller's audit.
func (s *Store) Finish(ctx context.Context, id, runID string, o Outcome) error {
	return errUnimplemented
}

// SetStatusMessage sets the statusMessage of a working task held by runID
// (how a task reports progress: the extension has no progress
// notifications for tasks). The caller throttles; errors as for Finish.
func (s *Store) SetStatusMessage(ctx context.Context, id, runID, message string) error {
	return errUnimplemented
}

// Abandon records a working task as failed with e whichever run holds it:
// for a run that crashed on its last attempt (an on-failure destination, or
// the gateway noticing a task working past its run deadline). A task that
// is no longer working is left alone: [ErrCancelled] or [ErrNotWorking].
func (s *Store) Abandon(ctx context.Context, id string, e RPCError) error {
	return errUnimplemented
}
