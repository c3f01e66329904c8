package handlers

// Tools binds every tool to store, in Catalog order: the whole application
// in one process, as the handler tests serve it.
var Tools = tools
