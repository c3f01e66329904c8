package localtest

// Alive reports whether a pid names a living (non-zombie) process.
var Alive = alive
