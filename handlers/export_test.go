package handlers

import "github.com/mcpfn/mcpfn/adapter"

// Tools binds every tool to store, in Catalog order: the whole application
// in one process, as the handler tests serve it.
var Tools = tools

// AttachmentKeyOf is the object key that the attach call callID writes for
// broadcast id.
func AttachmentKeyOf(id, callID string) string {
	return attachmentKey(id, derivedID(attachmentIDDomain, &adapter.Call{ID: callID}))
}
