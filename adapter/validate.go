package adapter

// Issue is one problem found validating arguments or output.
type Issue struct {
	Path    string `json:"path,omitempty"` // JSON pointer into the arguments, where known
	Message string `json:"message"`
}
